// Tests (`x is name`), as jinja2/tests.py defines them.
#include <unordered_map>

#include "tokenizer/jinja/args.h"
#include "tokenizer/jinja/filters.h"
#include "tokenizer/jinja/text.h"

namespace kiln::jinja {
namespace {

using K = Value::Kind;

Value Arg(const CallArgs& args, std::string_view test) {
  ArgReader r(std::string("test ") + std::string(test), args);
  Value v = r.Required(0, "other");
  r.Finish();
  return v;
}

void NoArgs(const CallArgs& args, std::string_view test) {
  ArgReader(std::string("test ") + std::string(test), args).Finish();
}

#define KILN_TEST(Name, expr)                                      \
  bool Name(Evaluator& ev, const Value& v, const CallArgs& args) { \
    (void)ev, (void)v;                                             \
    NoArgs(args, #Name);                                           \
    return (expr);                                                 \
  }

KILN_TEST(Defined, !v.is_undefined())
KILN_TEST(Undefined, v.is_undefined())
KILN_TEST(None, v.is_none())
KILN_TEST(Boolean, v.is_bool())
KILN_TEST(False, v.is_bool() && !v.as_bool())
KILN_TEST(True, v.is_bool() && v.as_bool())
KILN_TEST(Integer, v.is_int())
KILN_TEST(Float, v.is_float())
KILN_TEST(Number, v.is_number())
KILN_TEST(String, v.is_string())
KILN_TEST(Mapping, v.is_dict())
KILN_TEST(Iterable, v.is_undefined() || v.is_string() || v.is_list() || v.is_dict())
KILN_TEST(Sequence, v.is_undefined() || v.is_string() || v.is_list() || v.is_dict())
KILN_TEST(Callable, v.is_undefined() || (v.is_object() && v.object().IsCallable()))
KILN_TEST(Escaped, false)
KILN_TEST(Even, Equals(BinaryOp(ev, "%", v, Value::Int(2)), Value::Int(0)))
KILN_TEST(Odd, Equals(BinaryOp(ev, "%", v, Value::Int(2)), Value::Int(1)))
#undef KILN_TEST

bool CaseTest(const Value& v, bool lower) {
  bool cased = false;
  for (char32_t c : text::Decode(v.Str())) {
    if (lower ? text::IsUpper(c) : text::IsLower(c)) return false;
    cased |= text::IsCased(c);
  }
  return cased;
}

bool Lower(Evaluator&, const Value& v, const CallArgs& args) {
  return NoArgs(args, "lower"), CaseTest(v, true);
}
bool Upper(Evaluator&, const Value& v, const CallArgs& args) {
  return NoArgs(args, "upper"), CaseTest(v, false);
}

bool DivisibleBy(Evaluator& ev, const Value& v, const CallArgs& args) {
  return Equals(BinaryOp(ev, "%", v, Arg(args, "divisibleby")), Value::Int(0));
}

bool SameAs(Evaluator&, const Value& v, const CallArgs& args) {
  Value other = Arg(args, "sameas");
  if (v.kind() != other.kind()) return false;
  if (v.is_object()) return &v.object() == &other.object();
  if (v.is_list() || v.is_dict()) return false;  // distinct containers, unless the very same
  return Equals(v, other);
}

bool In(Evaluator&, const Value& v, const CallArgs& args) { return Contains(Arg(args, "in"), v); }

template <int kOp>  // 0 ==, 1 !=, 2 <, 3 <=, 4 >, 5 >=
bool Compare(Evaluator&, const Value& v, const CallArgs& args) {
  Value other = Arg(args, "comparison");
  switch (kOp) {
    case 0:
      return Equals(v, other);
    case 1:
      return !Equals(v, other);
    case 2:
      return Less(v, other);
    case 3:
      return Less(v, other) || Equals(v, other);
    case 4:
      return Less(other, v);
    default:
      return Less(other, v) || Equals(v, other);
  }
}

bool FilterExists(Evaluator&, const Value& v, const CallArgs& args) {
  NoArgs(args, "filter");
  return v.is_string() && FindFilter(v.as_string()) != nullptr;
}

bool TestExists(Evaluator&, const Value& v, const CallArgs& args) {
  NoArgs(args, "test");
  return v.is_string() && FindTest(v.as_string()) != nullptr;
}

}  // namespace

TestFn FindTest(std::string_view name) {
  static const std::unordered_map<std::string_view, TestFn> table = {
      {"defined", Defined},
      {"undefined", Undefined},
      {"none", None},
      {"boolean", Boolean},
      {"false", False},
      {"true", True},
      {"integer", Integer},
      {"float", Float},
      {"number", Number},
      {"string", String},
      {"mapping", Mapping},
      {"iterable", Iterable},
      {"sequence", Sequence},
      {"callable", Callable},
      {"escaped", Escaped},
      {"even", Even},
      {"odd", Odd},
      {"lower", Lower},
      {"upper", Upper},
      {"divisibleby", DivisibleBy},
      {"sameas", SameAs},
      {"in", In},
      {"eq", Compare<0>},
      {"equalto", Compare<0>},
      {"==", Compare<0>},
      {"ne", Compare<1>},
      {"!=", Compare<1>},
      {"lt", Compare<2>},
      {"lessthan", Compare<2>},
      {"<", Compare<2>},
      {"le", Compare<3>},
      {"<=", Compare<3>},
      {"gt", Compare<4>},
      {"greaterthan", Compare<4>},
      {">", Compare<4>},
      {"ge", Compare<5>},
      {">=", Compare<5>},
      {"filter", FilterExists},
      {"test", TestExists},
  };
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace kiln::jinja
