// The --data option: a synthetic-data config ("prompt_tokens=256,output_tokens=128", or the same
// as a JSON object) or a file of prompts. Keys are GuideLLM's synthetic_text keys; its older
// `emulated` keys (prompt_tokens_variance, generated_tokens, ...) are accepted as aliases.
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace kiln::bench {

// How many tokens: fixed, uniform in [min, max], or normal(mean, stdev) clamped to [min, max].
struct TokenCountSpec {
  int64_t mean = 0;
  double stdev = 0;
  int64_t min = -1;  // -1: unset
  int64_t max = -1;
};

struct SyntheticDataSpec {
  TokenCountSpec prompt;
  TokenCountSpec output;   // mean 0: no max_tokens sent, the server decides
  int64_t samples = 1000;  // prompts prepared before the first request (more are made on demand)
  uint64_t seed = 42;      // from --random-seed
};

struct DataArg {
  bool is_file = false;
  std::string path;             // when is_file
  SyntheticDataSpec synthetic;  // otherwise
};

// A path that exists, or ends in .jsonl/.json/.txt, is a file; text with '=' or a JSON
// object is a synthetic config. Throws kiln::Error naming the bad key or value.
DataArg ParseDataArg(const std::string& text);
SyntheticDataSpec ParseSyntheticSpec(const std::string& text);

// One draw, with GuideLLM's rules (utils/random.py IntegerRangeSampler): min defaults to
// max(1, mean - 5 stdev) and max to mean + 5 stdev (both to mean without stdev); min == max is
// fixed; no stdev is uniform in [min, max]; else a rounded normal clamped to [min, max].
int64_t SampleTokenCount(const TokenCountSpec& spec, std::mt19937_64& rng);

// "prompt 256 (stdev 32, 128..512)": for reports.
std::string Describe(const TokenCountSpec& spec);

}  // namespace kiln::bench
