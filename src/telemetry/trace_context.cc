#include "telemetry/trace_context.h"

#include <random>

namespace kiln::telemetry {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is not valid in a traceparent
}

// `out.size()` bytes from 2 * size lower-case hex digits; false on a bad digit.
template <size_t N>
bool ParseHex(std::string_view text, std::array<uint8_t, N>& out) {
  if (text.size() != 2 * N) return false;
  for (size_t i = 0; i < N; ++i) {
    const int hi = HexDigit(text[2 * i]), lo = HexDigit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return true;
}

template <size_t N>
bool AllZero(const std::array<uint8_t, N>& a) {
  for (uint8_t b : a) {
    if (b != 0) return false;
  }
  return true;
}

template <size_t N>
std::string HexOf(const std::array<uint8_t, N>& a) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(2 * N, '0');
  for (size_t i = 0; i < N; ++i) {
    out[2 * i] = kDigits[a[i] >> 4];
    out[2 * i + 1] = kDigits[a[i] & 15];
  }
  return out;
}

std::mt19937_64& Generator() {
  thread_local std::mt19937_64 gen([] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }());
  return gen;
}

template <size_t N>
std::array<uint8_t, N> RandomNonZero() {
  std::array<uint8_t, N> id{};
  do {
    for (size_t i = 0; i < N; i += 8) {
      const uint64_t r = Generator()();
      for (size_t j = 0; j < 8 && i + j < N; ++j) id[i + j] = static_cast<uint8_t>(r >> (8 * j));
    }
  } while (AllZero(id));
  return id;
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<TraceContext> ParseTraceparent(std::string_view header) {
  const std::string_view h = TrimOws(header);
  // version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55.
  constexpr size_t kLength = 55;
  if (h.size() < kLength || h[2] != '-' || h[35] != '-' || h[52] != '-') return std::nullopt;
  std::array<uint8_t, 1> version{}, flags{};
  if (!ParseHex(h.substr(0, 2), version) || version[0] == 0xff) return std::nullopt;
  // Version 00 is exactly 55 characters; a later version may add fields after a '-'.
  if (version[0] == 0 ? h.size() != kLength : (h.size() > kLength && h[kLength] != '-')) {
    return std::nullopt;
  }
  TraceContext c;
  if (!ParseHex(h.substr(3, 32), c.trace_id) || !ParseHex(h.substr(36, 16), c.parent_span_id) ||
      !ParseHex(h.substr(53, 2), flags)) {
    return std::nullopt;
  }
  if (AllZero(c.trace_id) || AllZero(c.parent_span_id)) return std::nullopt;
  c.flags = flags[0];
  return c;
}

TraceContext ContinueOrStartTrace(const std::string* traceparent, bool* continued) {
  std::optional<TraceContext> parent;
  if (traceparent != nullptr) parent = ParseTraceparent(*traceparent);
  if (continued != nullptr) *continued = parent.has_value();
  if (parent) return *parent;
  TraceContext fresh;
  fresh.trace_id = NewTraceId();
  fresh.flags = 1;  // a new trace is sampled (always on)
  return fresh;
}

std::string FormatTraceparent(const TraceId& trace_id, const SpanId& span_id, uint8_t flags) {
  return "00-" + HexOf(trace_id) + "-" + HexOf(span_id) + "-" +
         HexOf(std::array<uint8_t, 1>{flags});
}

TraceId NewTraceId() { return RandomNonZero<16>(); }
SpanId NewSpanId() { return RandomNonZero<8>(); }
std::string Hex(const TraceId& id) { return HexOf(id); }
std::string Hex(const SpanId& id) { return HexOf(id); }

}  // namespace kiln::telemetry
