// Number filters: abs, int, float, round, with Python's parsing and rounding.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>

#include "tokenizer/jinja/args.h"
#include "tokenizer/jinja/filters.h"
#include "tokenizer/jinja/text.h"

namespace kiln::jinja {
namespace {

// Digits with single underscores between them, as Python's int() and float() accept.
std::optional<std::string> CleanDigits(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      bool between = i > 0 && i + 1 < s.size() && s[i - 1] != '_' && s[i + 1] != '_' &&
                     std::isalnum(static_cast<unsigned char>(s[i - 1])) &&
                     std::isalnum(static_cast<unsigned char>(s[i + 1]));
      if (!between) return std::nullopt;
      continue;
    }
    out += s[i];
  }
  return out;
}

// Python int(str, base) for bases 2..36.
std::optional<int64_t> ParseInt(const std::string& str, int base) {
  std::string s = text::Strip(str, std::nullopt, true, true);
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) negative = s[0] == '-', s.erase(0, 1);
  if (s.size() > 2 && s[0] == '0') {
    char p = s[1] | 0x20;
    if ((base == 16 && p == 'x') || (base == 8 && p == 'o') || (base == 2 && p == 'b')) {
      s.erase(0, s[2] == '_' ? 3 : 2);
    }
  }
  auto digits = CleanDigits(s);
  if (!digits || digits->empty()) return std::nullopt;
  int64_t v = 0;
  auto res = std::from_chars(digits->data(), digits->data() + digits->size(), v, base);
  if (res.ec != std::errc() || res.ptr != digits->data() + digits->size()) return std::nullopt;
  return negative ? -v : v;
}

// Python float(str): decimal or exponent forms, inf, infinity, nan.
std::optional<double> ParseFloat(const std::string& str) {
  std::string s = text::Strip(str, std::nullopt, true, true);
  std::string body = s;
  bool negative = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-'))
    negative = body[0] == '-', body.erase(0, 1);
  std::string lower = text::Lower(body);
  if (lower == "inf" || lower == "infinity") return negative ? -INFINITY : INFINITY;
  if (lower == "nan") return NAN;
  auto digits = CleanDigits(body);
  if (!digits || digits->empty() ||
      !(std::isdigit(static_cast<unsigned char>((*digits)[0])) || (*digits)[0] == '.'))
    return std::nullopt;
  double v = 0;
  auto res = std::from_chars(digits->data(), digits->data() + digits->size(), v);
  if (res.ec == std::errc::result_out_of_range)
    v = INFINITY;
  else if (res.ec != std::errc() || res.ptr != digits->data() + digits->size())
    return std::nullopt;
  return negative ? -v : v;
}

int64_t FloatToInt(double d) {
  if (std::isnan(d) || std::isinf(d))
    Fail("cannot convert float " + std::string(std::isnan(d) ? "NaN" : "infinity") + " to integer");
  if (std::fabs(d) >= 9.2e18) Fail("integer overflow");
  return static_cast<int64_t>(d);
}

Value Abs(Evaluator&, const Value& v, const CallArgs& args) {
  ArgReader("abs", args).Finish();
  if (v.is_float()) return Value::Float(std::fabs(v.as_float()));
  if (!v.is_integral()) Fail("bad operand type for abs(): '" + v.TypeName() + "'");
  if (v.as_int() == INT64_MIN) Fail("integer overflow");
  return Value::Int(v.as_int() < 0 ? -v.as_int() : v.as_int());
}

Value Int(Evaluator&, const Value& v, const CallArgs& args) {
  ArgReader r("int", args);
  Value fallback = r.Get(0, "default", Value::Int(0));
  int64_t base = ToInt(r.Get(1, "base", Value::Int(10)), "int base");
  r.Finish();
  if (base < 2 || base > 36) Fail("int() base must be >= 2 and <= 36");
  if (v.is_integral()) return Value::Int(v.as_int());
  if (v.is_float()) return Value::Int(FloatToInt(v.as_float()));
  if (v.is_string()) {
    if (auto i = ParseInt(v.as_string(), static_cast<int>(base))) return Value::Int(*i);
    if (auto f = ParseFloat(v.as_string()); f && !std::isnan(*f)) return Value::Int(FloatToInt(*f));
  }
  return fallback;
}

Value Float(Evaluator&, const Value& v, const CallArgs& args) {
  ArgReader r("float", args);
  Value fallback = r.Get(0, "default", Value::Float(0.0));
  r.Finish();
  if (v.is_number()) return Value::Float(v.as_float());
  if (v.is_string()) {
    if (auto f = ParseFloat(v.as_string())) return Value::Float(*f);
  }
  return fallback;
}

// Python's round(x, n): correctly rounded, ties to even.
double RoundFloat(double x, int64_t digits) {
  if (!std::isfinite(x) || digits > 300) return x;
  if (digits >= 0) {
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(digits), x);
    return std::strtod(buf, nullptr);
  }
  if (digits < -308) return 0.0 * x;
  double scale = std::pow(10.0, static_cast<double>(-digits));
  return std::nearbyint(x / scale) * scale;
}

Value Round(Evaluator&, const Value& v, const CallArgs& args) {
  ArgReader r("round", args);
  int64_t precision = ToInt(r.Get(0, "precision", Value::Int(0)), "round precision");
  std::string method = r.Get(1, "method", Value::Str("common")).Str();
  r.Finish();
  if (method != "common" && method != "ceil" && method != "floor")
    Fail("method must be common, ceil or floor");
  if (!v.is_number()) Fail("type " + v.TypeName() + " doesn't define __round__ method");
  if (method == "common") {
    if (v.is_float()) return Value::Float(RoundFloat(v.as_float(), precision));
    if (precision >= 0) return Value::Int(v.as_int());
    return Value::Int(static_cast<int64_t>(RoundFloat(static_cast<double>(v.as_int()), precision)));
  }
  double scale = std::pow(10.0, static_cast<double>(precision));
  double scaled = v.as_float() * scale;
  return Value::Float((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) / scale);
}

}  // namespace

const FilterTable& NumberFilters() {
  static const FilterTable table = {
      {"abs", Abs},
      {"int", Int},
      {"float", Float},
      {"round", Round},
  };
  return table;
}

}  // namespace kiln::jinja
