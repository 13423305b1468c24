#include "tokenizer/models.h"

#include <algorithm>
#include <bit>

#include "tokenizer/unicode.h"

namespace kiln::tok {

uint32_t AttrFromTokenType(int32_t type) {
  switch (type) {
    case 1:
      return kAttrNormal;
    case 2:
      return kAttrUnknown;
    case 3:
      return kAttrControl;
    case 4:
      return kAttrUserDefined;
    case 5:
      return kAttrUnused;
    case 6:
      return kAttrByte;
    default:
      return kAttrUndefined;
  }
}

void Vocab::Index() {
  index_.clear();
  index_.reserve(text.size() * 2);
  for (size_t i = 0; i < text.size(); ++i) index_[text[i]] = static_cast<int32_t>(i);
}

// ---------------------------------------------------------------------------------------------
// SentencePiece-style

namespace {
constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581
}  // namespace

uint64_t SpmModel::PackBytes(std::string_view b) {
  uint64_t key = b.size();
  for (size_t i = 0; i < b.size(); ++i)
    key |= uint64_t{static_cast<uint8_t>(b[i])} << (8 * (i + 1));
  return key;
}

SpmModel::SpmModel(const Vocab& vocab, int32_t unk_id) : vocab_(vocab) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const char hex[6] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    int32_t id = vocab.Find(std::string_view(hex, 6));
    if (id < 0) {
      const char c = static_cast<char>(b);
      id = vocab.Find(std::string_view(&c, 1));
    }
    byte_token_[b] = id >= 0 ? id : unk_id;
  }
  for (const std::string& t : vocab.text) {
    for (size_t k = t.find(kSpmSpace, 1); k != std::string::npos; k = t.find(kSpmSpace, k + 1)) {
      for (size_t len = 1; len <= 4 && len <= k; ++len) {
        before_space_.insert(PackBytes(std::string_view(t).substr(k - len, len)));
      }
    }
  }
}

void SpmModel::Encode(std::string_view text, std::vector<int32_t>* out) const {
  if (text.empty()) return;
  std::vector<Symbol> syms;
  syms.reserve(text.size());
  for (size_t off = 0; off < text.size();) {
    const size_t n =
        std::min(unicode::SeqLenFromLead(static_cast<uint8_t>(text[off])), text.size() - off);
    const int32_t idx = static_cast<int32_t>(syms.size());
    syms.push_back({static_cast<uint32_t>(off), static_cast<uint32_t>(n), idx - 1, idx + 1});
    off += n;
  }
  syms.back().next = -1;

  // No token spans the start of a U+2581 whose preceding symbol never precedes one inside a
  // token, so each run between such places merges on its own, exactly as in one big pass (the
  // merge order within a run is unchanged), with a small working set.
  const int32_t n = static_cast<int32_t>(syms.size());
  int32_t run_start = 0;
  for (int32_t i = 1; i < n; ++i) {
    const Symbol& s = syms[i];
    if (s.len != 3 || text.compare(s.start, 3, kSpmSpace) != 0) continue;
    const Symbol& p = syms[i - 1];
    if (before_space_.count(PackBytes(text.substr(p.start, p.len))) != 0) continue;
    EncodeRun(text, syms, run_start, i - 1, out);
    run_start = i;
  }
  EncodeRun(text, syms, run_start, n - 1, out);
}

void SpmModel::EncodeRun(std::string_view text, std::vector<Symbol>& syms, int32_t first,
                         int32_t last, std::vector<int32_t>* out) const {
  syms[first].prev = -1;
  syms[last].next = -1;
  struct Bigram {
    float score;
    int32_t left;
    int32_t right;
    uint32_t size;
  };
  // Max-heap: highest score first, then the leftmost.
  auto lower = [](const Bigram& a, const Bigram& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::vector<Bigram> heap;
  auto try_add = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const uint32_t size = syms[l].len + syms[r].len;
    const int32_t id = vocab_.Find(text.substr(syms[l].start, size));
    if (id < 0) return;
    heap.push_back({vocab_.score[id], l, r, size});
    std::push_heap(heap.begin(), heap.end(), lower);
  };
  for (int32_t i = first + 1; i <= last; ++i) try_add(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower);
    const Bigram bg = heap.back();
    heap.pop_back();
    Symbol& l = syms[bg.left];
    Symbol& r = syms[bg.right];
    // Stale when either side has changed since the pair was queued.
    if (l.len == 0 || r.len == 0 || l.len + r.len != bg.size) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = bg.left;
    try_add(l.prev, bg.left);
    try_add(bg.left, l.next);
  }

  for (int32_t i = first; i != -1; i = syms[i].next) {
    const Symbol& s = syms[i];
    const std::string_view piece = text.substr(s.start, s.len);
    const int32_t id = vocab_.Find(piece);
    if (id >= 0) {
      out->push_back(id);
      continue;
    }
    for (char c : piece) {
      const int32_t b = byte_token_[static_cast<uint8_t>(c)];
      if (b >= 0) out->push_back(b);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Merge table

void MergeTable::Reserve(size_t n) {
  size_t cap = 16;
  while (cap < 2 * n) cap *= 2;
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  shift_ = 64 - std::countr_zero(cap);
  size_ = 0;
}

void MergeTable::Insert(int32_t left, int32_t right, Merge m) {
  if (2 * (size_ + 1) > slots_.size()) {
    std::vector<Slot> old = std::move(slots_);
    Reserve(std::max<size_t>(2 * (size_ + 1), 8));
    for (const Slot& s : old) {
      if (s.key != kEmpty)
        Insert(static_cast<int32_t>(s.key >> 32), static_cast<int32_t>(s.key & 0xFFFFFFFF),
               s.merge);
    }
  }
  const uint64_t key = Key(left, right);
  for (size_t i = Hash(key);; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.key == key) return;
    if (s.key == kEmpty) {
      s.key = key;
      s.merge = m;
      ++size_;
      return;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Byte-level BPE

BpeModel::BpeModel(const Vocab& vocab, const std::vector<std::string>& merges) : vocab_(vocab) {
  for (int b = 0; b < 256; ++b) {
    byte_token_[b] = vocab.Find(unicode::ByteToUtf8(static_cast<uint8_t>(b)));
    const char c = static_cast<char>(b);
    single_byte_token_[b] = vocab.Find(std::string_view(&c, 1));
  }
  by_ids_.Reserve(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string_view m = merges[rank];
    const size_t sp = m.find(' ', 1);
    if (sp == std::string_view::npos) continue;  // malformed; never matches a symbol pair
    const std::string_view left = m.substr(0, sp);
    const std::string_view right = m.substr(sp + 1);
    joined.assign(left);
    joined.append(right);
    const Merge merge{static_cast<int32_t>(rank), vocab.Find(joined)};
    const int32_t l = vocab.Find(left);
    const int32_t r = vocab.Find(right);
    // The first occurrence of a pair keeps its rank.
    if (l >= 0 && r >= 0) {
      by_ids_.Insert(l, r, merge);
    } else {
      by_text_.emplace(TextKey(left, right), merge);
    }
  }
}

std::string BpeModel::TextKey(std::string_view left, std::string_view right) {
  std::string key = std::to_string(left.size());
  key += ':';
  key.append(left);
  key.append(right);
  return key;
}

const BpeModel::Merge* BpeModel::Lookup(std::string_view word, int32_t left_id, const Symbol& left,
                                        int32_t right_id, const Symbol& right) const {
  if (left_id >= 0 && right_id >= 0) return by_ids_.Find(left_id, right_id);
  if (by_text_.empty()) return nullptr;
  auto encode = [&](const Symbol& s) {
    std::string out;
    for (uint32_t i = s.start; i < s.start + s.len; ++i) {
      out.append(unicode::ByteToUtf8(static_cast<uint8_t>(word[i])));
    }
    return out;
  };
  auto it = by_text_.find(TextKey(encode(left), encode(right)));
  return it == by_text_.end() ? nullptr : &it->second;
}

void BpeModel::AppendUnknown(std::string_view bytes, std::vector<int32_t>* out) const {
  // A symbol that is no token: each byte of its stand-in text, where that byte alone is a token
  // (what llama.cpp does; in practice every stand-in character is a token).
  for (char b : bytes) {
    for (char c : unicode::ByteToUtf8(static_cast<uint8_t>(b))) {
      const int32_t t = single_byte_token_[static_cast<uint8_t>(c)];
      if (t >= 0) out->push_back(t);
    }
  }
}

void BpeModel::Encode(std::string_view word, bool ignore_merges, Scratch* scratch,
                      std::vector<int32_t>* out) const {
  if (word.empty()) return;
  if (ignore_merges) {
    std::string& text = scratch->text;
    text.clear();
    for (char c : word) text.append(unicode::ByteToUtf8(static_cast<uint8_t>(c)));
    const int32_t id = vocab_.Find(text);
    if (id >= 0) {
      out->push_back(id);
      return;
    }
  }
  if (word.size() == 1) {
    const int32_t id = byte_token_[static_cast<uint8_t>(word[0])];
    if (id >= 0) {
      out->push_back(id);
    } else {
      AppendUnknown(word, out);
    }
    return;
  }

  using Bigram = Scratch::Bigram;
  // Min-heap on rank, then the leftmost.
  auto lower = [](const Bigram& a, const Bigram& b) {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  };

  const int32_t n = static_cast<int32_t>(word.size());
  std::vector<Symbol>& syms = scratch->syms;
  std::vector<int32_t>& ids = scratch->ids;
  std::vector<Bigram>& heap = scratch->heap;
  syms.resize(n);
  ids.resize(n);
  heap.clear();
  for (int32_t i = 0; i < n; ++i) {
    syms[i] = {static_cast<uint32_t>(i), 1, i - 1, i + 1 == n ? -1 : i + 1};
    ids[i] = byte_token_[static_cast<uint8_t>(word[i])];
  }
  auto try_add = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const Merge* m = Lookup(word, ids[l], syms[l], ids[r], syms[r]);
    if (m == nullptr) return;
    heap.push_back({m->rank, l, r, syms[l].len + syms[r].len, m->merged});
    std::push_heap(heap.begin(), heap.end(), lower);
  };
  for (int32_t i = 1; i < n; ++i) try_add(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower);
    const Bigram bg = heap.back();
    heap.pop_back();
    Symbol& l = syms[bg.left];
    Symbol& r = syms[bg.right];
    // A symbol only grows, so unchanged lengths mean an unchanged pair.
    if (l.len == 0 || r.len == 0 || l.len + r.len != bg.size) continue;
    l.len += r.len;
    r.len = 0;
    ids[bg.left] = bg.merged;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = bg.left;
    try_add(l.prev, bg.left);
    try_add(bg.left, l.next);
  }

  for (int32_t i = 0; i != -1; i = syms[i].next) {
    if (ids[i] >= 0) {
      out->push_back(ids[i]);
    } else {
      AppendUnknown(word.substr(syms[i].start, syms[i].len), out);
    }
  }
}

}  // namespace kiln::tok
