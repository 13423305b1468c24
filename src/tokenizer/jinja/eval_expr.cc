// Expressions: names, literals, operators, attribute and item access, slices, calls, filters
// and tests, with jinja2's lookup rules (missing attributes and items are undefined).
#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/filters.h"
#include "tokenizer/jinja/methods.h"
#include "tokenizer/jinja/objects.h"
#include "tokenizer/jinja/text.h"

namespace kiln::jinja {
namespace {

std::string TypeRepr(const Value& v) {
  return v.is_none() ? "None" : "'" + v.TypeName() + " object'";
}

Value NoAttribute(const Value& obj, std::string_view name) {
  return Value::Undefined(TypeRepr(obj) + " has no attribute '" + std::string(name) + "'");
}

// Python's slice index adjustment (PySlice_AdjustIndices).
std::vector<size_t> SliceIndices(int64_t n, const Value& start_v, const Value& stop_v,
                                 const Value& step_v) {
  auto index = [](const Value& v, const char* what) {
    if (!v.is_none() && !v.is_integral())
      Fail(std::string("slice ") + what + " must be an integer or None");
  };
  index(start_v, "start"), index(stop_v, "stop"), index(step_v, "step");
  int64_t step = step_v.is_none() ? 1 : step_v.as_int();
  if (step == 0) Fail("slice step cannot be zero");
  auto adjust = [&](const Value& v, int64_t fallback) {
    if (v.is_none()) return fallback;
    int64_t i = v.as_int();
    if (i < 0) {
      i = i < -n ? (step < 0 ? -1 : 0) : i + n;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    return i;
  };
  int64_t start = adjust(start_v, step < 0 ? n - 1 : 0);
  int64_t stop = adjust(stop_v, step < 0 ? -1 : n);
  std::vector<size_t> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    out.push_back(static_cast<size_t>(i));
    if (step > 0 ? i > INT64_MAX - step : i < INT64_MIN - step) break;
  }
  return out;
}

bool CompareOp(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return Equals(a, b);
  if (op == "!=") return !Equals(a, b);
  if (op == "in") return Contains(b, a);
  if (op == "notin") return !Contains(b, a);
  if (a.is_undefined()) FailUndefined(a);
  if (b.is_undefined()) FailUndefined(b);
  if (op == "<") return Less(a, b);
  if (op == ">") return Less(b, a);
  if (op == "<=")
    return a.is_number() && b.is_number() ? a.as_float() <= b.as_float()
                                          : Less(a, b) || Equals(a, b);
  return a.is_number() && b.is_number() ? a.as_float() >= b.as_float() : Less(b, a) || Equals(a, b);
}

}  // namespace

Value Evaluator::Eval(const Expr& e, const ScopePtr& scope) {
  DepthGuard guard(this);
  line_ = e.line;
  switch (e.kind) {
    case ExprKind::kLiteral:
      return e.value;
    case ExprKind::kName:
      return EvalName(e, scope);
    case ExprKind::kList:
    case ExprKind::kTuple: {
      std::vector<Value> items;
      items.reserve(e.items.size());
      for (const ExprPtr& item : e.items) items.push_back(Eval(*item, scope));
      return Value::MakeList(std::move(items), e.kind == ExprKind::kTuple);
    }
    case ExprKind::kDict: {
      std::vector<std::pair<std::string, Value>> items;
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
        Value key = Eval(*e.items[i], scope);
        if (!key.is_string()) Fail("dict keys must be strings, not " + key.TypeName());
        items.emplace_back(key.as_string(), Eval(*e.items[i + 1], scope));
      }
      return Value::MakeDict(std::move(items));
    }
    case ExprKind::kUnary:
      return UnaryOp(e.name, Eval(*e.items[0], scope));
    case ExprKind::kBinary: {
      Value left = Eval(*e.items[0], scope);
      if (e.name == "and") return left.Truthy() ? Eval(*e.items[1], scope) : left;
      if (e.name == "or") return left.Truthy() ? left : Eval(*e.items[1], scope);
      Value right = Eval(*e.items[1], scope);
      line_ = e.line;
      return BinaryOp(*this, e.name, left, right);
    }
    case ExprKind::kCompare:
      return EvalCompare(e, scope);
    case ExprKind::kCond:
      if (Eval(*e.items[1], scope).Truthy()) return Eval(*e.items[0], scope);
      return e.items[2] ? Eval(*e.items[2], scope)
                        : Value::Undefined("conditional expression had no else branch");
    case ExprKind::kGetAttr:
      return GetAttr(Eval(*e.items[0], scope), e.name);
    case ExprKind::kGetItem: {
      Value obj = Eval(*e.items[0], scope);
      return GetItem(obj, Eval(*e.items[1], scope));
    }
    case ExprKind::kSlice:
      return EvalSlice(e, scope);
    case ExprKind::kCall:
      return EvalCall(e, scope);
    case ExprKind::kFilter:
      return EvalFilter(e, scope, nullptr);
    case ExprKind::kTest: {
      Value v = Eval(*e.items[0], scope);
      CallArgs args = EvalArgs(e, 1, scope);
      line_ = e.line;
      return Value::Bool(ApplyTest(e.name, v, std::move(args)));
    }
  }
  Fail("unknown expression");
}

Value Evaluator::EvalName(const Expr& e, const ScopePtr& scope) {
  const Value* v = scope->Find(e.name);
  return v ? *v : Value::Undefined("'" + e.name + "' is undefined");
}

Value Evaluator::EvalCompare(const Expr& e, const ScopePtr& scope) {
  Value left = Eval(*e.items[0], scope);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value right = Eval(*e.items[i + 1], scope);
    line_ = e.line;
    if (!CompareOp(e.ops[i], left, right)) return Value::Bool(false);
    left = std::move(right);
  }
  return Value::Bool(true);
}

Value Evaluator::EvalSlice(const Expr& e, const ScopePtr& scope) {
  Value obj = Eval(*e.items[0], scope);
  Value bounds[3];
  for (int k = 0; k < 3; ++k) {
    bounds[k] = e.items[k + 1] ? Eval(*e.items[k + 1], scope) : Value::None();
    if (bounds[k].is_undefined()) FailUndefined(bounds[k]);
  }
  if (obj.is_undefined()) FailUndefined(obj);
  if (obj.is_string()) {
    std::u32string cps = text::Decode(obj.as_string());
    std::u32string out;
    for (size_t i : SliceIndices(static_cast<int64_t>(cps.size()), bounds[0], bounds[1], bounds[2]))
      out += cps[i];
    return Value::Str(text::Encode(out));
  }
  if (!obj.is_list()) return Value::Undefined(TypeRepr(obj) + " is not subscriptable");
  const auto& items = obj.list().items;
  std::vector<Value> out;
  for (size_t i : SliceIndices(static_cast<int64_t>(items.size()), bounds[0], bounds[1], bounds[2]))
    out.push_back(items[i]);
  Work(static_cast<int64_t>(out.size()));
  return Value::MakeList(std::move(out), obj.is_tuple());
}

CallArgs Evaluator::EvalArgs(const Expr& e, size_t first, const ScopePtr& scope) {
  CallArgs args;
  for (size_t i = first; i < e.items.size(); ++i)
    args.positional.push_back(Eval(*e.items[i], scope));
  if (e.star_args) {
    for (Value& v : Iterate(Eval(*e.star_args, scope))) args.positional.push_back(std::move(v));
  }
  for (const auto& [name, expr] : e.keywords) args.keyword.emplace_back(name, Eval(*expr, scope));
  if (e.star_kwargs) {
    Value kw = Eval(*e.star_kwargs, scope);
    if (!kw.is_dict()) Fail("argument after ** must be a mapping, not " + kw.TypeName());
    for (const auto& kv : kw.dict().items) args.keyword.push_back(kv);
  }
  return args;
}

Value Evaluator::EvalCall(const Expr& e, const ScopePtr& scope) {
  const Expr& callee = *e.items[0];
  if (callee.kind == ExprKind::kGetAttr) {  // obj.method(...) without a bound-method object
    Value obj = Eval(*callee.items[0], scope);
    if (HasMethod(obj, callee.name)) {
      CallArgs args = EvalArgs(e, 1, scope);
      line_ = e.line;
      return CallMethod(*this, obj, callee.name, std::move(args));
    }
    Value fn = GetAttr(obj, callee.name);
    CallArgs args = EvalArgs(e, 1, scope);
    line_ = e.line;
    return Call(fn, std::move(args));
  }
  Value fn = Eval(callee, scope);
  CallArgs args = EvalArgs(e, 1, scope);
  line_ = e.line;
  return Call(fn, std::move(args));
}

Value Evaluator::Call(const Value& callee, CallArgs args) {
  if (callee.is_undefined()) FailUndefined(callee);
  if (!callee.is_object() || !callee.object().IsCallable())
    Fail("'" + callee.TypeName() + "' object is not callable");
  Work(1);
  ObjectPtr keep = callee.object_ptr();  // the call may drop the last other reference
  return keep->Call(*this, std::move(args));
}

Value Evaluator::EvalFilter(const Expr& e, const ScopePtr& scope, const Value* input) {
  Value v;
  if (!e.items[0])
    v = *input;
  else if (input && e.items[0]->kind == ExprKind::kFilter)
    v = EvalFilter(*e.items[0], scope, input);
  else
    v = Eval(*e.items[0], scope);
  CallArgs args = EvalArgs(e, 1, scope);
  line_ = e.line;
  return ApplyFilter(e.name, v, std::move(args));
}

Value Evaluator::ApplyFilter(std::string_view name, const Value& input, CallArgs args) {
  FilterFn fn = FindFilter(name);
  if (!fn) Fail("No filter named '" + std::string(name) + "'.");
  Work(1);
  return fn(*this, input, args);
}

bool Evaluator::ApplyTest(std::string_view name, const Value& input, CallArgs args) {
  TestFn fn = FindTest(name);
  if (!fn) Fail("No test named '" + std::string(name) + "'.");
  Work(1);
  return fn(*this, input, args);
}

Value Evaluator::GetAttr(const Value& obj, std::string_view name) {
  switch (obj.kind()) {
    case Value::Kind::kUndefined:
      FailUndefined(obj);
    case Value::Kind::kObject:
      return obj.object().GetAttr(name);
    default:
      break;
  }
  if (HasMethod(obj, name))
    return Value::Obj(std::make_shared<BoundMethod>(obj, std::string(name)));
  if (IsUnsafeMethod(obj, name)) {
    return Value::Undefined("access to attribute '" + std::string(name) + "' of '" +
                            obj.TypeName() + "' object is unsafe.");
  }
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().Find(name)) return *v;
  }
  return NoAttribute(obj, name);
}

Value Evaluator::GetItem(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Value::Kind::kUndefined:
      FailUndefined(obj);
    case Value::Kind::kDict:
      if (key.is_string()) {
        if (const Value* v = obj.dict().Find(key.as_string())) return *v;
      }
      break;
    case Value::Kind::kList:
      if (key.is_integral()) {
        const auto& items = obj.list().items;
        int64_t i = key.as_int(), n = static_cast<int64_t>(items.size());
        if (i < 0) i += n;
        if (i >= 0 && i < n) return items[static_cast<size_t>(i)];
        return Value::Undefined(TypeRepr(obj) + " has no element " + key.Repr());
      }
      break;
    case Value::Kind::kString:
      if (key.is_integral()) {
        std::u32string cps = text::Decode(obj.as_string());
        int64_t i = key.as_int(), n = static_cast<int64_t>(cps.size());
        if (i < 0) i += n;
        if (i >= 0 && i < n) return Value::Str(text::Encode(cps.substr(static_cast<size_t>(i), 1)));
        return Value::Undefined(TypeRepr(obj) + " has no element " + key.Repr());
      }
      break;
    default:
      break;
  }
  // jinja2 falls back to the attribute of that name (obj['items'] is the items method).
  if (key.is_string()) {
    if (obj.is_dict() && !HasMethod(obj, key.as_string()) &&
        !IsUnsafeMethod(obj, key.as_string())) {
      return Value::Undefined(TypeRepr(obj) + " has no attribute " + key.Repr());
    }
    return GetAttr(obj, key.as_string());
  }
  return Value::Undefined(TypeRepr(obj) + " has no element " + key.Repr());
}

}  // namespace kiln::jinja
