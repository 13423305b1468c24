#include "grammar/byte_nfa.h"

#include <algorithm>

#include "util/error.h"

namespace kiln::grammar {
namespace {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;

int EncodeUtf8(uint32_t c, uint8_t* out) {
  if (c < 0x80) {
    out[0] = static_cast<uint8_t>(c);
    return 1;
  }
  if (c < 0x800) {
    out[0] = static_cast<uint8_t>(0xC0 | (c >> 6));
    out[1] = static_cast<uint8_t>(0x80 | (c & 0x3F));
    return 2;
  }
  if (c < 0x10000) {
    out[0] = static_cast<uint8_t>(0xE0 | (c >> 12));
    out[1] = static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | (c & 0x3F));
    return 3;
  }
  out[0] = static_cast<uint8_t>(0xF0 | (c >> 18));
  out[1] = static_cast<uint8_t>(0x80 | ((c >> 12) & 0x3F));
  out[2] = static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3F));
  out[3] = static_cast<uint8_t>(0x80 | (c & 0x3F));
  return 4;
}

}  // namespace

int32_t ByteNfa::AddState() {
  if (static_cast<int64_t>(states_.size()) >= max_states_) {
    throw Error(StrCat("the constraint is too large: more than ", max_states_,
                       " automaton states (a smaller schema, fewer alternatives or smaller "
                       "repetition counts)"));
  }
  states_.emplace_back();
  return static_cast<int32_t>(states_.size() - 1);
}

void ByteNfa::AddEdge(int32_t from, uint8_t lo, uint8_t hi, int32_t to) {
  states_[from].edges.push_back({lo, hi, to});
}

void ByteNfa::AddEpsilon(int32_t from, int32_t to) { states_[from].epsilon.push_back(to); }

Fragment ByteNfa::Empty() {
  const int32_t s = AddState();
  return {s, s};
}

Fragment ByteNfa::Codepoints(const std::vector<CodepointRange>& ranges) {
  const int32_t s = AddState(), e = AddState();
  for (const CodepointRange& r : ranges) {
    uint32_t lo = r.lo, hi = std::min(r.hi, kMaxCodepoint);
    // Surrogates are not characters: UTF-8 never encodes them.
    if (lo <= 0xDFFF && hi >= 0xD800) {
      if (lo < 0xD800) AddUtf8Range(lo, 0xD7FF, s, e);
      if (hi > 0xDFFF) AddUtf8Range(0xE000, hi, s, e);
      continue;
    }
    AddUtf8Range(lo, hi, s, e);
  }
  return {s, e};
}

// Splits [lo, hi] until each piece is one length of encoding whose continuation bytes cover
// whole ranges; each piece is then one sequence of byte ranges.
void ByteNfa::AddUtf8Range(uint32_t lo, uint32_t hi, int32_t from, int32_t to) {
  if (lo > hi) return;
  for (uint32_t max : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= max && hi > max) {
      AddUtf8Range(lo, max, from, to);
      AddUtf8Range(max + 1, hi, from, to);
      return;
    }
  }
  if (hi < 0x80) {
    AddEdge(from, static_cast<uint8_t>(lo), static_cast<uint8_t>(hi), to);
    return;
  }
  for (int i = 1; i < 4; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        AddUtf8Range(lo, lo | m, from, to);
        AddUtf8Range((lo | m) + 1, hi, from, to);
        return;
      }
      if ((hi & m) != m) {
        AddUtf8Range(lo, (hi & ~m) - 1, from, to);
        AddUtf8Range(hi & ~m, hi, from, to);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  const int n = EncodeUtf8(lo, a);
  EncodeUtf8(hi, b);
  AddByteSequence(a, b, n, from, to);
}

void ByteNfa::AddByteSequence(const uint8_t* lo, const uint8_t* hi, int n, int32_t from,
                              int32_t to) {
  int32_t cur = from;
  for (int i = 0; i < n; ++i) {
    const int32_t next = i + 1 == n ? to : AddState();
    AddEdge(cur, lo[i], hi[i], next);
    cur = next;
  }
}

Fragment ByteNfa::Concat(Fragment a, Fragment b) {
  AddEpsilon(a.end, b.start);
  return {a.start, b.end};
}

Fragment ByteNfa::Alternate(const std::vector<Fragment>& options) {
  if (options.size() == 1) return options[0];
  const int32_t s = AddState(), e = AddState();
  for (const Fragment& f : options) {
    AddEpsilon(s, f.start);
    AddEpsilon(f.end, e);
  }
  return {s, e};
}

Fragment ByteNfa::Optional(Fragment f) {
  const int32_t s = AddState(), e = AddState();
  AddEpsilon(s, f.start);
  AddEpsilon(s, e);
  AddEpsilon(f.end, e);
  return {s, e};
}

Fragment ByteNfa::Star(Fragment f) {
  const int32_t s = AddState(), e = AddState();
  AddEpsilon(s, f.start);
  AddEpsilon(s, e);
  AddEpsilon(f.end, f.start);
  AddEpsilon(f.end, e);
  return {s, e};
}

}  // namespace kiln::grammar
