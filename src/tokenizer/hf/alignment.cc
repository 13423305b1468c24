#include "tokenizer/hf/alignment.h"

#include <algorithm>

#include "tokenizer/hf/text.h"
#include "util/utf8.h"

namespace kiln::hf {
namespace {

// Enough for NFC/NFD reordering of a base character and its marks; longer groups are rare
// enough that the proportional fallback is fine for them.
constexpr size_t kMaxGroup = 16;

// Byte offsets where the characters of `s` start, plus s.size().
std::vector<size_t> CharStarts(std::string_view s) {
  std::vector<size_t> starts;
  starts.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); i += CharLen(s, i)) starts.push_back(i);
  starts.push_back(s.size());
  return starts;
}

// Union of the ranges of the input characters [first, last).
Align GroupRange(const Alignment& in_align, const std::vector<size_t>& starts, size_t first,
                 size_t last) {
  Align r = in_align[starts[first]];
  for (size_t c = first + 1; c < last; ++c) {
    const Align& a = in_align[starts[c]];
    r.begin = std::min(r.begin, a.begin);
    r.end = std::max(r.end, a.end);
  }
  return r;
}

}  // namespace

Alignment IdentityAlignment(std::string_view s, uint32_t base) {
  Alignment a(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = CharLen(s, i);
    const Align r{static_cast<uint32_t>(base + i), static_cast<uint32_t>(base + i + n)};
    std::fill(a.begin() + i, a.begin() + i + n, r);
    i += n;
  }
  return a;
}

Align RangeOf(const Alignment& a, size_t start, size_t end) {
  return {a[start].begin, std::max(a[start].begin, a[end - 1].end)};
}

Alignment AlignByCharacters(std::string_view in, const Alignment& in_align, std::string_view out,
                            const std::function<std::string(std::string_view)>& step) {
  Alignment result;
  result.reserve(out.size());
  const std::vector<size_t> starts = CharStarts(in);
  const size_t n_in = starts.size() - 1;
  size_t c = 0;  // next input character
  while (c < n_in && result.size() < out.size()) {
    bool matched = false;
    for (size_t len = 1; len <= kMaxGroup && c + len <= n_in; ++len) {
      const std::string piece = step(in.substr(starts[c], starts[c + len] - starts[c]));
      if (out.compare(result.size(), piece.size(), piece) != 0) continue;
      result.insert(result.end(), piece.size(), GroupRange(in_align, starts, c, c + len));
      c += len;
      matched = true;
      break;
    }
    if (!matched) break;
  }
  if (result.size() < out.size()) {
    // The rest, proportionally: output character k of K gets input character c + k * N / K.
    const std::vector<size_t> out_starts = CharStarts(out.substr(result.size()));
    const size_t k_out = out_starts.size() - 1;
    const size_t rest = n_in - std::min(c, n_in);
    for (size_t k = 0; k < k_out; ++k) {
      Align r{0, 0};
      if (rest > 0) {
        r = in_align[starts[c + k * rest / k_out]];
      } else if (!in_align.empty()) {
        r = {in_align.back().end, in_align.back().end};
      }
      result.insert(result.end(), out_starts[k + 1] - out_starts[k], r);
    }
  }
  return result;
}

std::vector<uint32_t> RepairedToInput(std::string_view input, std::string_view repaired) {
  std::vector<uint32_t> map(repaired.size() + 1, static_cast<uint32_t>(input.size()));
  size_t in = 0, out = 0;
  while (in < input.size() && out < repaired.size()) {
    // One step of the repair: the longest prefix (at most 4 bytes) that repairs to one
    // character, valid or U+FFFD.
    size_t len = 1;
    for (size_t n = std::min<size_t>(4, input.size() - in); n > 1; --n) {
      const std::string r = ValidUtf8OrReplace(input.substr(in, n));
      if (!r.empty() && CharLen(r, 0) == r.size()) {
        len = n;
        break;
      }
    }
    const size_t out_len = CharLen(repaired, out);
    for (size_t k = 0; k < out_len; ++k) map[out + k] = static_cast<uint32_t>(in);
    in += len;
    out += out_len;
  }
  return map;
}

}  // namespace kiln::hf
