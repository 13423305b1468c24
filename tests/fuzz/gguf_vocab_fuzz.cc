// libFuzzer target for GGUF vocabularies: tokenizer.ggml.* metadata into a tokenizer
// (Tokenizer::FromGguf, the llama.cpp-compatible SentencePiece and byte-level BPE tokenizers),
// then encoding, decoding and streaming decoding.
// What must hold: any file ends in a tokenizer or a kiln::Error, never a crash, hang or leak;
// bos, eos and stop ids are -1 or inside the vocabulary; Encode yields ids inside the
// vocabulary, which Decode accepts; the incremental detokenizer releases only valid UTF-8.
//
// The input is the whole GGUF file, written to a memfd that the reader maps like any file.
// Run: KILN_FUZZ_TARGETS=gguf_vocab scripts/fuzz.sh
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "fuzz_util.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/log.h"
#include "util/utf8.h"

namespace {

bool InVocab(int32_t id, int32_t vocab) { return id >= 0 && id < vocab; }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kiln::log::SetLevel(kiln::log::Level::kError);  // bad special ids only warn
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string kText =
      "Hello  world! it's 123 日本 \xF0\x9F\x98\x80 <s>x</s><|im_end|>\n\t \xC3\xA9";
  const std::string path = kiln::fuzz::WriteInputFile(data, size);
  try {
    kiln::GgufFile gguf(path);
    auto tok = kiln::Tokenizer::FromGguf(gguf);
    const int32_t vocab = tok->vocab_size();
    FUZZ_CHECK(vocab > 0);
    FUZZ_CHECK(tok->bos_id() == -1 || InVocab(tok->bos_id(), vocab));
    FUZZ_CHECK(tok->eos_id() == -1 || InVocab(tok->eos_id(), vocab));
    for (int32_t id : tok->StopIds()) FUZZ_CHECK(InVocab(id, vocab));
    for (bool special : {false, true}) {
      const std::vector<int32_t> ids = tok->Encode(kText, special, special);
      for (int32_t id : ids) FUZZ_CHECK(InVocab(id, vocab));
      tok->Decode(ids, !special);
      kiln::Detokenizer detok(tok.get(), !special);
      std::string text;
      for (int32_t id : ids) {
        std::string piece;
        detok.Push(id, piece);
        FUZZ_CHECK(kiln::ValidUtf8OrReplace(piece) == piece);
        text += piece;
      }
      detok.Flush(text);
      FUZZ_CHECK(kiln::ValidUtf8OrReplace(text) == text);
    }
  } catch (const kiln::Error&) {
  }
  return 0;
}
