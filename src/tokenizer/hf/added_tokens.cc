#include "tokenizer/hf/added_tokens.h"

#include <algorithm>

#include "tokenizer/hf/text.h"
#include "util/error.h"

namespace kiln::hf {
namespace {

// Code point ending just before `end` (valid UTF-8).
uint32_t LastChar(std::string_view s, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
  size_t n = 1;
  return DecodeAt(s, start, &n);
}

// Start of the whitespace run that ends at `end` (end itself when none).
size_t SpaceRunStart(std::string_view s, size_t end) {
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
    size_t n = 1;
    if (!IsWhitespace(DecodeAt(s, start, &n))) break;
    end = start;
  }
  return end;
}

// End of the whitespace run that starts at `pos`.
size_t SpaceRunEnd(std::string_view s, size_t pos) {
  while (pos < s.size()) {
    size_t n = 1;
    if (!IsWhitespace(DecodeAt(s, pos, &n))) break;
    pos += n;
  }
  return pos;
}

}  // namespace

std::vector<AddedToken> ReadAddedTokens(const Json& j, const std::string& where, int64_t max_id) {
  std::vector<AddedToken> out;
  if (j.is_null()) return out;
  KILN_CHECK(j.is_array(), where, ": expected an array");
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string at = StrCat(where, "[", i, "]");
    const Json& t = j[i];
    AddedToken a;
    a.id = static_cast<int32_t>(GetInt(t, "id", at, 0, max_id));
    a.content = GetString(t, "content", at);
    a.special = OptBool(t, "special", at, false);
    a.lstrip = OptBool(t, "lstrip", at, false);
    a.rstrip = OptBool(t, "rstrip", at, false);
    a.normalized = OptBool(t, "normalized", at, !a.special);
    a.single_word = OptBool(t, "single_word", at, false);
    if (!a.content.empty()) out.push_back(std::move(a));
  }
  return out;
}

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens,
                                     const std::vector<std::string>& patterns) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!patterns[i].empty()) patterns_.push_back({patterns[i], tokens[i]});
  }
  for (size_t i = 0; i < patterns_.size(); ++i) {
    by_first_byte_[static_cast<uint8_t>(patterns_[i].text[0])].push_back(static_cast<int>(i));
  }
  for (auto& list : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(), [&](int a, int b) {
      return patterns_[a].text.size() > patterns_[b].text.size();
    });
  }
}

int AddedTokenMatcher::Longest(std::string_view text, size_t pos) const {
  for (int i : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
    const std::string& p = patterns_[i].text;
    if (text.size() - pos >= p.size() && text.compare(pos, p.size(), p) == 0) return i;
  }
  return -1;
}

void AddedTokenMatcher::Split(std::string_view text, bool skip_special,
                              std::vector<Segment>* out) const {
  out->clear();
  size_t done = 0;  // end of the last emitted segment
  for (size_t pos = 0; pos < text.size();) {
    const int hit =
        by_first_byte_[static_cast<uint8_t>(text[pos])].empty() ? -1 : Longest(text, pos);
    if (hit < 0) {
      ++pos;
      continue;
    }
    const AddedToken& tok = patterns_[hit].token;
    size_t start = pos, stop = pos + patterns_[hit].text.size();
    pos = stop;
    if (skip_special && tok.special) continue;
    if (tok.single_word) {
      const bool word_before = start > 0 && IsWordChar(LastChar(text, start));
      size_t n = 1;
      const bool word_after = stop < text.size() && IsWordChar(DecodeAt(text, stop, &n));
      if (word_before || word_after) continue;
    }
    if (tok.lstrip) start = std::max(SpaceRunStart(text, start), done);
    if (tok.rstrip) stop = pos = SpaceRunEnd(text, stop);
    if (done < start) out->push_back({done, start, -1});
    out->push_back({start, stop, tok.id});
    done = stop;
  }
  if (done < text.size()) out->push_back({done, text.size(), -1});
}

}  // namespace kiln::hf
