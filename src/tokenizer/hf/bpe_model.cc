// BPE as the HF tokenizers library runs it: a word starts as its characters (with the
// continuing-subword prefix / end-of-word suffix, byte fallback and unknown-token fusing), then
// the adjacent pair with the lowest merge rank is merged (ties: leftmost) until none applies.
#include <algorithm>
#include <array>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "tokenizer/hf/model.h"
#include "tokenizer/hf/text.h"
#include "util/error.h"

namespace kiln::hf {
namespace {

class BpeModel final : public Model {
 public:
  BpeModel(const Json& j, const std::string& where);
  void Tokenize(std::string_view word, std::vector<int32_t>* out) const override;

 private:
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    bool alive;
  };
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t merged;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  void ReadMerges(const Json& merges, const std::string& where);
  void InitialSymbols(std::string_view word, std::vector<Symbol>* syms) const;
  void MergeAll(std::vector<Symbol>* syms) const;
  int32_t UnkId() const;

  // Words seen before (as the library's cache): most text repeats words. Sharded so that
  // concurrent encoders rarely wait; a full shard stops taking new words.
  static constexpr size_t kShards = 8;
  static constexpr size_t kShardCapacity = 4096;
  static constexpr size_t kMaxCachedWord = 64;
  struct CacheShard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>> words;
  };
  bool CacheGet(std::string_view word, std::vector<int32_t>* out) const;
  void CachePut(std::string_view word, const int32_t* ids, size_t n) const;
  mutable std::array<CacheShard, kShards> cache_;

  tok::MergeTable merges_;
  std::vector<int32_t> byte_ids_;
  std::string prefix_, suffix_;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  int32_t unk_id_ = -1;
};

BpeModel::BpeModel(const Json& j, const std::string& where) {
  ReadVocabMap(Field(j, "vocab", where), FieldPath(where, "vocab"), &vocab_);
  const Json* dropout = OptField(j, "dropout");
  KILN_CHECK(dropout == nullptr || (dropout->is_number() && dropout->get<double>() == 0.0), where,
             ".dropout: BPE dropout is not supported (inference uses dropout null)");
  unk_token_ = OptString(j, "unk_token", where).value_or("");
  if (!unk_token_.empty()) unk_id_ = vocab_.Find(unk_token_);
  prefix_ = OptString(j, "continuing_subword_prefix", where).value_or("");
  suffix_ = OptString(j, "end_of_word_suffix", where).value_or("");
  fuse_unk_ = OptBool(j, "fuse_unk", where, false);
  byte_fallback_ = OptBool(j, "byte_fallback", where, false);
  ignore_merges_ = OptBool(j, "ignore_merges", where, false);
  byte_ids_ = ByteFallbackIds(vocab_);
  const Json* merges = OptField(j, "merges");
  if (merges != nullptr) ReadMerges(*merges, FieldPath(where, "merges"));
}

void BpeModel::ReadMerges(const Json& merges, const std::string& where) {
  KILN_CHECK(merges.is_array(), where, ": expected an array");
  KILN_CHECK(merges.size() < (size_t{1} << 30), where, ": too many merges");
  merges_.Reserve(merges.size());
  auto lookup = [&](const std::string& t, size_t i) {
    const int32_t id = vocab_.Find(t);
    KILN_CHECK(id >= 0 && !t.empty(), where, "[", i, "]: '", t, "' is not in the vocabulary");
    return id;
  };
  // The library keeps the last of duplicate merges; MergeTable keeps the first: go backwards.
  for (size_t i = merges.size(); i-- > 0;) {
    const Json& m = merges[i];
    std::string a, b;
    const std::string at = StrCat(where, "[", i, "]");
    if (m.is_string()) {  // "a b"
      const std::string& s = m.get_ref<const std::string&>();
      const size_t sp = s.find(' ', 1);
      KILN_CHECK(sp != std::string::npos && sp + 1 < s.size(), at, ": '", s,
                 "' is not two tokens separated by a space");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else {
      KILN_CHECK(m.is_array() && m.size() == 2, at, ": expected \"a b\" or [\"a\", \"b\"]");
      a = AsString(m[0], at);
      b = AsString(m[1], at);
    }
    const int32_t left = lookup(a, i), right = lookup(b, i);
    KILN_CHECK(b.size() >= prefix_.size(), at, ": '", b, "' lacks the subword prefix");
    const int32_t merged = lookup(a + b.substr(prefix_.size()), i);
    merges_.Insert(left, right, {static_cast<int32_t>(i), merged});
  }
}

int32_t BpeModel::UnkId() const {
  KILN_CHECK(unk_id_ >= 0, "tokenizer.json: the text needs the unknown token, and the BPE model's ",
             unk_token_.empty() ? "unk_token is not set" : "unk_token is not in its vocabulary");
  return unk_id_;
}

void BpeModel::InitialSymbols(std::string_view w, std::vector<Symbol>* syms) const {
  syms->clear();
  auto add = [&](int32_t id) {
    const auto n = static_cast<int32_t>(syms->size());
    syms->push_back({id, n - 1, n + 1, true});
  };
  bool pending_unk = false;
  std::string buf;
  for (size_t i = 0; i < w.size();) {
    const size_t n = CharLen(w, i);
    std::string_view s = w.substr(i, n);
    if ((!prefix_.empty() && i > 0) || (!suffix_.empty() && i + n == w.size())) {
      buf.assign(i > 0 ? prefix_ : "");
      buf.append(s);
      if (i + n == w.size()) buf += suffix_;
      s = buf;
    }
    i += n;
    if (const int32_t id = vocab_.Find(s); id >= 0) {
      if (pending_unk) add(unk_id_);
      pending_unk = false;
      add(id);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char c : s) all = all && byte_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all) {  // (the library leaves a pending unknown token pending here)
        for (char c : s) add(byte_ids_[static_cast<uint8_t>(c)]);
        continue;
      }
    }
    if (unk_token_.empty()) continue;  // no unknown token: the character is dropped
    const int32_t unk = UnkId();
    if (pending_unk && !fuse_unk_) add(unk);
    pending_unk = true;
  }
  if (pending_unk) add(unk_id_);
  if (!syms->empty()) syms->back().next = -1;
}

void BpeModel::MergeAll(std::vector<Symbol>* syms_ptr) const {
  std::vector<Symbol>& syms = *syms_ptr;
  thread_local std::vector<Candidate> queue;  // a min-heap on (rank, pos)
  queue.clear();
  const auto later = std::greater<Candidate>();
  auto consider = [&](int32_t pos) {
    const int32_t next = syms[pos].next;
    if (next < 0) return;
    if (const auto* m = merges_.Find(syms[pos].id, syms[next].id); m && m->merged >= 0) {
      queue.push_back({m->rank, pos, m->merged});
      std::push_heap(queue.begin(), queue.end(), later);
    }
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) consider(i);
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), later);
    const Candidate top = queue.back();
    queue.pop_back();
    Symbol& left = syms[top.pos];
    if (!left.alive || left.next < 0) continue;
    const Symbol right = syms[left.next];
    const auto* m = merges_.Find(left.id, right.id);
    if (m == nullptr || m->merged != top.merged) continue;  // stale entry
    syms[left.next].alive = false;
    left.id = top.merged;
    left.next = right.next;
    if (right.next >= 0) syms[right.next].prev = top.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
}

void BpeModel::Tokenize(std::string_view word, std::vector<int32_t>* out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (const int32_t id = vocab_.Find(word); id >= 0) {
      out->push_back(id);
      return;
    }
  }
  if (CacheGet(word, out)) return;
  thread_local std::vector<Symbol> syms;
  InitialSymbols(word, &syms);
  MergeAll(&syms);
  const size_t first = out->size();
  for (const Symbol& s : syms) {
    if (s.alive) out->push_back(s.id);
  }
  CachePut(word, out->data() + first, out->size() - first);
}

bool BpeModel::CacheGet(std::string_view word, std::vector<int32_t>* out) const {
  if (word.size() > kMaxCachedWord) return false;
  CacheShard& shard = cache_[std::hash<std::string_view>()(word) % kShards];
  std::lock_guard lock(shard.mu);
  auto it = shard.words.find(std::string(word));
  if (it == shard.words.end()) return false;
  out->insert(out->end(), it->second.begin(), it->second.end());
  return true;
}

void BpeModel::CachePut(std::string_view word, const int32_t* ids, size_t n) const {
  if (word.size() > kMaxCachedWord) return;
  CacheShard& shard = cache_[std::hash<std::string_view>()(word) % kShards];
  std::lock_guard lock(shard.mu);
  if (shard.words.size() < kShardCapacity)
    shard.words.emplace(word, std::vector<int32_t>(ids, ids + n));
}

}  // namespace

std::unique_ptr<Model> MakeBpeModel(const Json& j, const std::string& where) {
  return std::make_unique<BpeModel>(j, where);
}

}  // namespace kiln::hf
