// A 64-token vocabulary for engine tests: control tokens, an unknown token, words, multi-byte
// characters split over several tokens and a lone invalid byte.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "util/utf8.h"

namespace kiln::testing {

class FakeTokenizer : public Tokenizer {
 public:
  // Ids used by the tests.
  static constexpr int32_t kBos = 0, kEos = 1, kEnd = 2, kUnk = 3;
  static constexpr int32_t kA = 4, kB = 5, kC = 6, kSpace = 7, kHel = 9, kLo = 10, kWor = 11,
                           kLd = 12, kBang = 13, kEAcute1 = 14, kEAcute2 = 15, kEAcute = 16,
                           kEuro12 = 17, kEuro3 = 18, kEuro = 19, kST = 20, kOP = 21, kSmile12 = 22,
                           kSmile34 = 23, kBadByte = 24;

  FakeTokenizer() {
    pieces_ = {"<s>",  "</s>",     "<|end|>",  "<unk>",    "a",
               "b",    "c",        " ",        "\n",       "Hel",
               "lo",   " wor",     "ld",       "!",        "\xC3",
               "\xA9", "\xC3\xA9", "\xE2\x82", "\xAC",     "\xE2\x82\xAC",
               "ST",   "OP",       "\xF0\x9F", "\x98\x80", "\x80"};
    while (pieces_.size() < 64) pieces_.push_back("w" + std::to_string(pieces_.size()));
  }

  std::vector<int32_t> Encode(std::string_view text, bool, bool) const override {
    std::vector<int32_t> ids;  // greedy longest match over plain pieces
    for (size_t i = 0; i < text.size();) {
      int32_t best = -1;
      size_t best_len = 0;
      for (int32_t id = 4; id < vocab_size(); ++id) {
        const std::string& p = pieces_[id];
        if (p.size() > best_len && text.substr(i, p.size()) == p) best = id, best_len = p.size();
      }
      if (best < 0) return ids;
      ids.push_back(best);
      i += best_len;
    }
    return ids;
  }
  std::string Decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::string bytes;
    for (int32_t id : ids) {
      if (IsSpecial(id)) {
        if (!skip_special) bytes += pieces_[id];
      } else {
        bytes += pieces_[id];
      }
    }
    return ValidUtf8OrReplace(bytes);
  }
  std::string TokenPiece(int32_t id) const override { return IsSpecial(id) ? "" : pieces_[id]; }
  std::string_view TokenText(int32_t id) const override { return pieces_[id]; }
  int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }
  int32_t bos_id() const override { return kBos; }
  int32_t eos_id() const override { return kEos; }
  bool IsSpecial(int32_t id) const override { return id <= kUnk; }
  bool IsControl(int32_t id) const override { return id < kUnk; }
  bool AddsBos() const override { return false; }
  bool AddsEos() const override { return false; }
  std::vector<int32_t> StopIds() const override { return {kEos, kEnd}; }

 private:
  std::vector<std::string> pieces_;
};

}  // namespace kiln::testing
