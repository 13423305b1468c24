// Internal: the vocabulary table and the two subword algorithms (SentencePiece-style score merges
// and byte-level BPE rank merges), as llama.cpp's llm_tokenizer_spm / llm_tokenizer_bpe run them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kiln::tok {

// Token attributes (llama.cpp's llama_token_attr bits).
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1 << 0,
  kAttrUnused = 1 << 1,
  kAttrNormal = 1 << 2,
  kAttrControl = 1 << 3,
  kAttrUserDefined = 1 << 4,
  kAttrByte = 1 << 5,
  kAttrLstrip = 1 << 7,
  kAttrRstrip = 1 << 8,
};

// GGUF token_type -> attribute.
uint32_t AttrFromTokenType(int32_t type);

struct Vocab {
  std::vector<std::string> text;  // never resized after Index() (index keys point into it)
  std::vector<float> score;
  std::vector<uint32_t> attr;

  // Builds the text -> id index; a text that appears twice maps to its last id.
  void Index();
  int32_t Find(std::string_view s) const {
    auto it = index_.find(s);
    return it == index_.end() ? -1 : it->second;
  }
  int32_t size() const { return static_cast<int32_t>(text.size()); }

 private:
  std::unordered_map<std::string_view, int32_t> index_;
};

// Doubly linked list of symbols over a byte string; a merged-away symbol has len 0.
struct Symbol {
  uint32_t start;
  uint32_t len;
  int32_t prev;
  int32_t next;
};

// SentencePiece-style BPE: repeatedly merges the adjacent pair whose concatenation is the
// highest-scoring token (ties: leftmost); leftovers become <0xXX> byte tokens.
class SpmModel {
 public:
  SpmModel(const Vocab& vocab, int32_t unk_id);
  // `text` is already escaped (spaces as U+2581). Appends ids.
  void Encode(std::string_view text, std::vector<int32_t>* out) const;

 private:
  void EncodeRun(std::string_view text, std::vector<Symbol>& syms, int32_t first, int32_t last,
                 std::vector<int32_t>* out) const;

  const Vocab& vocab_;
  std::array<int32_t, 256> byte_token_{};  // <0xXX> (or the byte itself); unk when neither
  // Byte strings (1-4 bytes) that some token has right before a U+2581. Merges never cross a
  // U+2581 preceded by anything else, so the text is merged in independent runs cut there.
  static uint64_t PackBytes(std::string_view b);  // 1-4 bytes -> key
  std::unordered_set<uint64_t> before_space_;
};

// Open-addressing map from a (left id, right id) pair to its merge.
class MergeTable {
 public:
  struct Merge {
    int32_t rank;
    int32_t merged;  // id of left+right, -1 when that is not a token
  };
  void Reserve(size_t n);
  // Keeps the first value inserted for a key.
  void Insert(int32_t left, int32_t right, Merge m);
  const Merge* Find(int32_t left, int32_t right) const {
    if (slots_.empty()) return nullptr;
    const uint64_t key = Key(left, right);
    for (size_t i = Hash(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.merge;
      if (s.key == kEmpty) return nullptr;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    Merge merge{};
  };
  static uint64_t Key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  size_t Hash(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

// Byte-level BPE: the word's bytes become GPT-2 stand-in characters, then the adjacent pair
// with the lowest merge rank is merged (ties: leftmost) until none applies.
class BpeModel {
 public:
  // Per-call working memory, reused across the words of one text.
  struct Scratch {
    struct Bigram {
      int32_t rank;
      int32_t left;
      int32_t right;
      uint32_t size;
      int32_t merged;
    };
    std::vector<Symbol> syms;
    std::vector<int32_t> ids;
    std::vector<Bigram> heap;
    std::string text;
  };

  BpeModel(const Vocab& vocab, const std::vector<std::string>& merges);
  // `word`: raw bytes of one pre-tokenized word. Appends ids.
  void Encode(std::string_view word, bool ignore_merges, Scratch* scratch,
              std::vector<int32_t>* out) const;
  size_t num_merges() const { return by_ids_.size() + by_text_.size(); }

 private:
  using Merge = MergeTable::Merge;
  static std::string TextKey(std::string_view left, std::string_view right);
  const Merge* Lookup(std::string_view word, int32_t left_id, const Symbol& left, int32_t right_id,
                      const Symbol& right) const;
  void AppendUnknown(std::string_view bytes, std::vector<int32_t>* out) const;

  const Vocab& vocab_;
  MergeTable by_ids_;                               // both halves are tokens
  std::unordered_map<std::string, Merge> by_text_;  // a half is not a token (rare)
  std::array<int32_t, 256> byte_token_{};           // token of each byte's stand-in character
  std::array<int32_t, 256> single_byte_token_{};    // token whose text is that one byte
};

}  // namespace kiln::tok
