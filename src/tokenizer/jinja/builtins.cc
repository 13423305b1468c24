// Global functions: jinja2's defaults (range, dict, namespace) and the two transformers adds
// for chat templates (raise_exception, strftime_now).
#include <ctime>

#include "tokenizer/jinja/args.h"
#include "tokenizer/jinja/objects.h"

namespace kiln::jinja {
namespace {

// jinja2.sandbox.MAX_RANGE: longer ranges are refused.
constexpr int64_t kMaxRange = 100000;

Value Range(Evaluator& ev, CallArgs& args) {
  if (!args.keyword.empty()) Fail("range() takes no keyword arguments");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) Fail("range expected 1 to 3 arguments");
  int64_t start = 0, stop = 0, step = 1;
  if (p.size() == 1) {
    stop = ToInt(p[0], "range() argument");
  } else {
    start = ToInt(p[0], "range() argument");
    stop = ToInt(p[1], "range() argument");
    if (p.size() == 3) step = ToInt(p[2], "range() argument");
  }
  if (step == 0) Fail("range() arg 3 must not be zero");
  // Count in floating point first so that extreme bounds cannot overflow.
  double count =
      (static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step);
  if (count > kMaxRange)
    Fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  std::vector<Value> items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) items.push_back(Value::Int(i));
  ev.Work(static_cast<int64_t>(items.size()));
  return Value::MakeList(std::move(items));
}

// dict(mapping_or_pairs, **kwargs), as Python's dict constructor.
std::vector<std::pair<std::string, Value>> DictItems(const char* fn, CallArgs& args) {
  std::vector<std::pair<std::string, Value>> items;
  if (args.positional.size() > 1) Fail(std::string(fn) + "() expected at most 1 argument");
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_dict()) {
      items = src.dict().items;
    } else if (src.is_list()) {
      for (const Value& pair : src.list().items) {
        if (!pair.is_list() || pair.list().items.size() != 2)
          Fail("dictionary update sequence element has wrong length");
        items.emplace_back(ToString(pair.list().items[0], "dict key"), pair.list().items[1]);
      }
    } else {
      Fail("'" + src.TypeName() + "' object is not iterable");
    }
  }
  for (auto& kv : args.keyword) items.push_back(kv);
  return items;
}

Value MakeNamespace(Evaluator& ev, CallArgs& args) {
  auto ns = std::make_shared<Namespace>();
  for (auto& [key, value] : DictItems("namespace", args)) ns->SetAttr(key, value);
  ev.Track(ns);
  return Value::Obj(ns);
}

Value RaiseException(Evaluator&, CallArgs& args) {
  std::string message = args.positional.empty() ? "" : args.positional[0].Str();
  throw TemplateError(message, 0, true);
}

Value StrftimeNow(Evaluator& ev, CallArgs& args) {
  ArgReader reader("strftime_now", args);
  std::string format = ToString(reader.Required(0, "format"), "strftime_now() format");
  reader.Finish();
  if (format.empty()) return Value::Str("");
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  // strftime returns 0 both for "too small" and for an empty result: grow up to a bound.
  for (size_t size = 256; size <= (1u << 20); size *= 4) {
    std::string buf(size, '\0');
    size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &local);
    if (n > 0) return ev.MakeString(buf.substr(0, n));
  }
  return Value::Str("");
}

void Add(Scope& scope, const char* name, BuiltinFunction::Fn fn) {
  scope.Set(name, Value::Obj(std::make_shared<BuiltinFunction>(name, std::move(fn))));
}

}  // namespace

void AddBuiltins(Scope& scope) {
  Add(scope, "range", Range);
  Add(scope, "dict",
      [](Evaluator&, CallArgs& args) { return Value::MakeDict(DictItems("dict", args)); });
  Add(scope, "namespace", MakeNamespace);
  Add(scope, "raise_exception", RaiseException);
  Add(scope, "strftime_now", StrftimeNow);
}

}  // namespace kiln::jinja
