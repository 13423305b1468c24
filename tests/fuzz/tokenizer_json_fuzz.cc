// libFuzzer target for tokenizer.json loading, encoding, decoding and streaming decoding.
// What must hold: any input ends in a tokenizer or a kiln::Error, never a crash, hang or leak;
// Encode yields ids inside the vocabulary, which Decode accepts; the incremental detokenizer
// releases only valid UTF-8, for encoded ids and for arbitrary ones (unknown ids give nothing).
//
// Input: tokenizer.json, then optionally NUL + text to encode (default: a mixed sample), then
// optionally NUL + tokenizer_config.json. Run: KILN_FUZZ_TARGETS=tokenizer_json scripts/fuzz.sh
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/detokenizer.h"
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/utf8.h"

namespace {

bool IsValidUtf8(std::string_view s) { return kiln::ValidUtf8OrReplace(s) == s; }

// Streams `ids` through the detokenizer; every released piece must be valid UTF-8.
void StreamDecode(const kiln::Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special) {
  kiln::Detokenizer detok(&tok, skip_special);
  std::string all;
  for (int32_t id : ids) {
    std::string piece;
    detok.Push(id, piece);
    FUZZ_CHECK(IsValidUtf8(piece));
    all += piece;
  }
  detok.Flush(all);
  FUZZ_CHECK(IsValidUtf8(all));
  for (int32_t id : ids) FUZZ_CHECK(IsValidUtf8(kiln::Detokenizer::StandaloneText(tok, id)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view json = input.substr(0, nul);
  std::string text = "Hello  world! it's 123 日本 \xF0\x9F\x98\x80 <s>x</s>\n";
  std::string_view config;
  if (nul != std::string_view::npos) {
    const std::string_view rest = input.substr(nul + 1);
    const size_t nul2 = rest.find('\0');
    text = std::string(rest.substr(0, nul2));
    if (nul2 != std::string_view::npos) config = rest.substr(nul2 + 1);
  }
  try {
    auto tok = kiln::Tokenizer::FromHfJson(json, config, "fuzz.json");
    const int32_t vocab = tok->vocab_size();
    for (bool special : {false, true}) {
      const std::vector<int32_t> ids = tok->Encode(text, special, special);
      for (int32_t id : ids) FUZZ_CHECK(id >= 0 && id < vocab);
      tok->Decode(ids, special);
      for (int32_t id : ids) tok->TokenPiece(id);
      StreamDecode(*tok, ids, special);
    }
    // The text's bytes as ids (little-endian pairs), a few just outside the vocabulary: what
    // a model may sample from padded embedding rows.
    std::vector<int32_t> raw;
    for (size_t i = 0; i + 1 < text.size() && raw.size() < 512; i += 2) {
      uint16_t v;
      std::memcpy(&v, text.data() + i, 2);
      raw.push_back(static_cast<int32_t>(v % (static_cast<uint32_t>(vocab) + 2)) - 1);
    }
    StreamDecode(*tok, raw, true);
    StreamDecode(*tok, raw, false);
    tok->Decode(raw, false);  // may throw kiln::Error on an unknown id
  } catch (const kiln::Error&) {
  }
  return 0;
}
