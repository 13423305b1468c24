// Arithmetic and concatenation with Python's rules: bool is an int, / always gives a float,
// // and % floor toward negative infinity, str and list repeat with *.
#include <cmath>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/pyformat.h"
#include "tokenizer/jinja/text.h"

namespace kiln::jinja {

[[noreturn]] void FailUndefined(const Value& v) {
  const std::string& hint = v.undefined_hint();
  Fail(hint.empty() ? "undefined value used" : hint);
}

namespace {

[[noreturn]] void Unsupported(std::string_view op, const Value& a, const Value& b) {
  if (op == "+" && a.is_string())
    Fail("can only concatenate str (not \"" + b.TypeName() + "\") to str");
  Fail("unsupported operand type(s) for " + std::string(op) + ": '" + a.TypeName() + "' and '" +
       b.TypeName() + "'");
}

// Runs a __builtin_*_overflow and fails on overflow (the result is read only afterwards).
template <typename Op>
int64_t Checked(Op op, int64_t x, int64_t y) {
  int64_t r = 0;
  if (op(x, y, &r)) Fail("integer overflow");
  return r;
}
bool AddOverflow(int64_t x, int64_t y, int64_t* r) { return __builtin_add_overflow(x, y, r); }
bool SubOverflow(int64_t x, int64_t y, int64_t* r) { return __builtin_sub_overflow(x, y, r); }
bool MulOverflow(int64_t x, int64_t y, int64_t* r) { return __builtin_mul_overflow(x, y, r); }

Value Repeat(Evaluator& ev, const Value& seq, int64_t times) {
  if (times <= 0) return seq.is_string() ? Value::Str("") : Value::MakeList({}, seq.is_tuple());
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (!s.empty() && static_cast<uint64_t>(times) > (1ull << 40) / s.size())
      Fail("string too long");
    ev.CheckString(s.size() * static_cast<size_t>(times));
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(times));
    for (int64_t i = 0; i < times; ++i) out += s;
    return Value::Str(std::move(out));
  }
  const auto& items = seq.list().items;
  if (!items.empty() && static_cast<uint64_t>(times) > (1ull << 40) / items.size())
    Fail("list too long");
  ev.CheckList(items.size() * static_cast<size_t>(times));
  std::vector<Value> out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::MakeList(std::move(out), seq.is_tuple());
}

Value Arithmetic(std::string_view op, const Value& a, const Value& b) {
  if (a.is_float() || b.is_float() || op == "/") {
    double x = a.as_float(), y = b.as_float();
    if (op == "+") return Value::Float(x + y);
    if (op == "-") return Value::Float(x - y);
    if (op == "*") return Value::Float(x * y);
    if (op == "**") {
      if (x == 0 && y < 0) Fail("0.0 cannot be raised to a negative power");
      return Value::Float(std::pow(x, y));
    }
    if (y == 0) Fail(op == "/" ? "division by zero" : "float modulo");
    if (op == "/") return Value::Float(x / y);
    // CPython's float divmod.
    double mod = std::fmod(x, y);
    double div = (x - mod) / y;
    if (mod != 0) {
      if ((y < 0) != (mod < 0)) mod += y, div -= 1.0;
    } else {
      mod = std::copysign(0.0, y);
    }
    if (op == "%") return Value::Float(mod);
    if (div == 0) return Value::Float(std::copysign(0.0, x / y));
    double floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
    return Value::Float(floordiv);
  }
  int64_t x = a.as_int(), y = b.as_int();
  if (op == "+") return Value::Int(Checked(AddOverflow, x, y));
  if (op == "-") return Value::Int(Checked(SubOverflow, x, y));
  if (op == "*") return Value::Int(Checked(MulOverflow, x, y));
  if (op == "**") {
    if (y < 0) return Value::Float(std::pow(static_cast<double>(x), static_cast<double>(y)));
    int64_t result = 1;
    for (int64_t base = x; y > 0; y >>= 1) {
      if (y & 1) result = Checked(MulOverflow, result, base);
      if (y > 1) base = Checked(MulOverflow, base, base);
    }
    return Value::Int(result);
  }
  if (y == 0) Fail("integer division or modulo by zero");
  if (x == INT64_MIN && y == -1) Fail("integer overflow");
  int64_t q = x / y, m = x % y;
  if (m != 0 && ((m < 0) != (y < 0))) --q, m += y;
  return Value::Int(op == "%" ? m : q);
}

// printf-style `"%s" % value`, the subset templates use: %s %r %d %i %f %%.
Value PercentFormat(Evaluator& ev, const std::string& format, const Value& args) {
  std::vector<Value> values = args.is_tuple() ? args.list().items : std::vector<Value>{args};
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) Fail("incomplete format");
    char c = format[i];
    if (c == '%') {
      out += '%';
      continue;
    }
    if (next >= values.size()) Fail("not enough arguments for format string");
    const Value& v = values[next++];
    if (c == 's')
      out += v.Str();
    else if (c == 'r')
      out += v.Repr();
    else if ((c == 'd' || c == 'i') && v.is_number())
      out += std::to_string(v.is_float() ? static_cast<int64_t>(v.as_float()) : v.as_int());
    else if (c == 'f' && v.is_number())
      out += std::to_string(v.as_float());
    else
      Fail(std::string("unsupported format character '") + c + "'");
    ev.CheckString(out.size());
  }
  if (next < values.size()) Fail("not all arguments converted during string formatting");
  return Value::Str(std::move(out));
}

}  // namespace

Value BinaryOp(Evaluator& ev, std::string_view op, const Value& a, const Value& b) {
  if (op == "~") return ev.MakeString(a.Str() + b.Str());
  if (a.is_undefined()) FailUndefined(a);
  if (b.is_undefined()) FailUndefined(b);
  if (a.is_number() && b.is_number()) return Arithmetic(op, a, b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) return ev.MakeString(a.as_string() + b.as_string());
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      ev.CheckList(a.list().items.size() + b.list().items.size());
      std::vector<Value> items = a.list().items;
      items.insert(items.end(), b.list().items.begin(), b.list().items.end());
      ev.Work(static_cast<int64_t>(items.size()));
      return Value::MakeList(std::move(items), a.is_tuple());
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && b.is_integral()) return Repeat(ev, a, b.as_int());
    if ((b.is_string() || b.is_list()) && a.is_integral()) return Repeat(ev, b, a.as_int());
  }
  if (op == "%" && a.is_string()) return PercentFormat(ev, a.as_string(), b);
  Unsupported(op, a, b);
}

Value UnaryOp(std::string_view op, const Value& a) {
  if (op == "not") return Value::Bool(!a.Truthy());
  if (a.is_undefined()) FailUndefined(a);
  if (!a.is_number())
    Fail("bad operand type for unary " + std::string(op) + ": '" + a.TypeName() + "'");
  if (op == "+") return a.is_float() ? a : Value::Int(a.as_int());
  if (a.is_float()) return Value::Float(-a.as_float());
  if (a.as_int() == INT64_MIN) Fail("integer overflow");
  return Value::Int(-a.as_int());
}

}  // namespace kiln::jinja
