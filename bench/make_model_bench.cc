// Makes GGUF model files for benchmarks (not a benchmark itself; named *_bench so the bench
// folder builds it):
//   make_model_bench requant IN.gguf OUT.gguf TYPE
//       every 2-D weight re-encoded as TYPE (f32|f16|bf16|q8_0|q4_0|q4_1), metadata kept;
//   make_model_bench random SHAPE TYPE TOKENIZER.gguf OUT.gguf
//       random weights (normal, std 0.02) of a real model's shape (smollm2-135m,
//       qwen2.5-0.5b, llama-3.2-1b) with the donor's tokenizer, padded to the shape's vocab,
//       so llama.cpp loads the same file.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "kernels/ops.h"
#include "util/error.h"

namespace kiln {
namespace {

DType ParseType(const std::string& s) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                  DType::kQ4_1}) {
    if (GetDTypeInfo(t).name == s) return t;
  }
  throw Error("unknown type '" + s + "' (f32, f16, bf16, q8_0, q4_0, q4_1)");
}

// GGML's general.file_type ids (llama_ftype) for the types above.
uint32_t FileType(DType t) {
  switch (t) {
    case DType::kF32: return 0;
    case DType::kF16: return 1;
    case DType::kQ4_0: return 2;
    case DType::kQ4_1: return 3;
    case DType::kQ8_0: return 7;
    case DType::kBF16: return 32;
    default: return 0;
  }
}

std::vector<uint8_t> Encode(DType t, const std::vector<float>& rows, int64_t n_rows, int64_t cols) {
  const uint64_t row_bytes = *BytesForElements(t, cols);
  std::vector<uint8_t> out(row_bytes * n_rows);
  for (int64_t r = 0; r < n_rows; ++r) {
    kernels::QuantizeRow(t, &rows[r * cols], cols, &out[r * row_bytes]);
  }
  return out;
}

void Requant(const std::string& in, const std::string& out, DType type) {
  GgufFile src(in);
  GgufWriter w;
  for (const auto& [key, value] : src.metadata()) {
    if (key == "general.alignment") continue;
    w.Set(key, key == "general.file_type" ? GgufValue(FileType(type)) : value);
  }
  for (const TensorView& t : src.tensors()) {
    kernels::Matrix m{t.dtype, t.Rows(), t.Cols(), t.data, t.nbytes / std::max<int64_t>(1, t.Rows())};
    std::vector<float> f32(t.NumElements());
    for (int64_t r = 0; r < m.rows; ++r) kernels::DequantizeRow(m, r, &f32[r * m.cols]);
    const bool matrix = t.shape.size() == 2 && t.Cols() % 32 == 0;
    const DType dt = matrix ? type : DType::kF32;
    w.AddTensor(t.name, dt, t.shape, Encode(dt, f32, m.rows, m.cols));
  }
  w.Write(out);
}

struct Shape {
  const char* name;
  const char* arch;
  int64_t d, f, layers, heads, kv_heads, vocab;
  double rope_theta;
  bool qkv_bias;
};

const Shape kShapes[] = {
    {"smollm2-135m", "llama", 576, 1536, 30, 9, 3, 49152, 100000, false},
    {"qwen2.5-0.5b", "qwen2", 896, 4864, 24, 14, 2, 151936, 1000000, true},
    {"llama-3.2-1b", "llama", 2048, 8192, 16, 32, 8, 128256, 500000, false},
};

void CopyTokenizer(const GgufFile& donor, int64_t vocab, GgufWriter& w) {
  auto tokens = *donor.GetStringArray("tokenizer.ggml.tokens");
  auto types = donor.GetIntArray("tokenizer.ggml.token_type").value_or(std::vector<int64_t>());
  KILN_CHECK(static_cast<int64_t>(tokens.size()) <= vocab, "donor vocabulary is larger than ",
             vocab);
  std::vector<int32_t> type32(types.begin(), types.end());
  type32.resize(tokens.size(), 1);
  for (int64_t i = static_cast<int64_t>(tokens.size()); i < vocab; ++i) {
    tokens.push_back("<|kiln_pad_" + std::to_string(i) + "|>");
    type32.push_back(4);  // user-defined: never produced by the BPE merges
  }
  for (const auto& [key, value] : donor.metadata()) {
    if (key.rfind("tokenizer.", 0) == 0 && key != "tokenizer.ggml.tokens" &&
        key != "tokenizer.ggml.token_type" && key != "tokenizer.ggml.scores") {
      w.Set(key, value);
    }
  }
  w.SetStringArray("tokenizer.ggml.tokens", tokens);
  w.SetInt32Array("tokenizer.ggml.token_type", type32);
}

void Random(const std::string& shape_name, DType type, const std::string& donor_path,
            const std::string& out) {
  const Shape* s = nullptr;
  for (const Shape& c : kShapes) s = shape_name == c.name ? &c : s;
  KILN_CHECK(s != nullptr, "unknown shape '", shape_name, "'");
  const int64_t hd = s->d / s->heads;
  GgufWriter w;
  const std::string a = s->arch;
  w.SetString("general.architecture", a);
  w.SetString("general.name", std::string("kiln-random-") + s->name);
  w.SetUint32("general.file_type", FileType(type));
  w.SetUint32(a + ".context_length", 4096);
  w.SetUint32(a + ".embedding_length", static_cast<uint32_t>(s->d));
  w.SetUint32(a + ".feed_forward_length", static_cast<uint32_t>(s->f));
  w.SetUint32(a + ".block_count", static_cast<uint32_t>(s->layers));
  w.SetUint32(a + ".attention.head_count", static_cast<uint32_t>(s->heads));
  w.SetUint32(a + ".attention.head_count_kv", static_cast<uint32_t>(s->kv_heads));
  w.SetFloat32(a + ".attention.layer_norm_rms_epsilon", 1e-5f);
  w.SetFloat32(a + ".rope.freq_base", static_cast<float>(s->rope_theta));
  w.SetUint32(a + ".rope.dimension_count", static_cast<uint32_t>(hd));
  GgufFile donor(donor_path);
  CopyTokenizer(donor, s->vocab, w);

  std::mt19937_64 rng(42);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    std::vector<float> v(rows * cols);
    for (auto& x : v) x = normal(rng);
    w.AddTensor(name, type, {rows, cols}, Encode(type, v, rows, cols));
  };
  auto vector = [&](const std::string& name, int64_t n, float value) {
    w.AddTensorF32(name, {n}, std::vector<float>(n, value));
  };
  matrix("token_embd.weight", s->vocab, s->d);
  vector("output_norm.weight", s->d, 1.0f);
  const int64_t q = s->heads * hd, kv = s->kv_heads * hd;
  for (int64_t l = 0; l < s->layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    vector(p + "attn_norm.weight", s->d, 1.0f);
    matrix(p + "attn_q.weight", q, s->d);
    matrix(p + "attn_k.weight", kv, s->d);
    matrix(p + "attn_v.weight", kv, s->d);
    if (s->qkv_bias) {
      vector(p + "attn_q.bias", q, 0.0f);
      vector(p + "attn_k.bias", kv, 0.0f);
      vector(p + "attn_v.bias", kv, 0.0f);
    }
    matrix(p + "attn_output.weight", s->d, q);
    vector(p + "ffn_norm.weight", s->d, 1.0f);
    matrix(p + "ffn_gate.weight", s->f, s->d);
    matrix(p + "ffn_up.weight", s->f, s->d);
    matrix(p + "ffn_down.weight", s->d, s->f);
  }
  w.Write(out);
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) try {
  std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() == 4 && a[0] == "requant") {
    kiln::Requant(a[1], a[2], kiln::ParseType(a[3]));
  } else if (a.size() == 5 && a[0] == "random") {
    kiln::Random(a[1], kiln::ParseType(a[2]), a[3], a[4]);
  } else {
    std::fprintf(stderr,
                 "usage: make_model_bench requant IN.gguf OUT.gguf TYPE\n"
                 "       make_model_bench random SHAPE TYPE TOKENIZER.gguf OUT.gguf\n");
    return 2;
  }
  return 0;
} catch (const kiln::Error& e) {
  std::fprintf(stderr, "make_model_bench: %s\n", e.what());
  return 1;
}
