#include "tokenizer/jinja/objects.h"

#include <algorithm>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/methods.h"
#include "tokenizer/jinja/pyformat.h"

namespace kiln::jinja {

Value Namespace::GetAttr(std::string_view name) const {
  for (const auto& [key, value] : attrs_) {
    if (key == name) return value;
  }
  return Value::Undefined("'Namespace' object has no attribute '" + std::string(name) + "'");
}

void Namespace::SetAttr(std::string_view name, Value value) {
  if (value.depth() + 1 > kMaxValueDepth) Fail("namespace value nested too deeply");
  for (auto& [key, v] : attrs_) {
    if (key == name) {
      v = std::move(value);
      return;
    }
  }
  attrs_.emplace_back(std::string(name), std::move(value));
}

std::string Namespace::Str(int depth) const {
  if (depth > kMaxValueDepth) Fail("namespace nested too deeply to print");
  std::string out = "<Namespace {";
  bool first = true;
  for (const auto& [key, value] : attrs_) {
    if (!first) out += ", ";
    first = false;
    out += StrRepr(key) + ": ";
    out += value.is_object() ? value.object().Str(depth + 1) : value.Repr();
  }
  return out + "}>";
}

Value MacroObject::Call(Evaluator& ev, CallArgs args) {
  if (!closure_) Fail("macro '" + name_ + "' called after the render ended");
  auto scope = std::make_shared<Scope>(closure_);
  const auto& params = *params_;
  std::vector<bool> used(args.keyword.size(), false);
  for (size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    Value v;
    bool found = false;
    if (i < args.positional.size()) {
      v = args.positional[i];
      found = true;
    }
    for (size_t k = 0; k < args.keyword.size(); ++k) {
      if (args.keyword[k].first != p.name) continue;
      if (found) Fail("macro '" + name_ + "' got multiple values for argument '" + p.name + "'");
      v = args.keyword[k].second;
      used[k] = found = true;
    }
    if (!found && p.default_value) v = ev.Eval(*p.default_value, scope);
    if (!found && !p.default_value)
      v = Value::Undefined("parameter '" + p.name + "' was not provided");
    scope->Set(p.name, std::move(v));
  }
  std::vector<Value> varargs;
  for (size_t i = params.size(); i < args.positional.size(); ++i)
    varargs.push_back(args.positional[i]);
  std::vector<std::pair<std::string, Value>> kwargs;
  for (size_t k = 0; k < args.keyword.size(); ++k) {
    if (used[k]) continue;
    if (args.keyword[k].first == "caller")
      scope->Set("caller", args.keyword[k].second);
    else
      kwargs.push_back(args.keyword[k]);
  }
  scope->Set("varargs", Value::MakeList(std::move(varargs), true));
  scope->Set("kwargs", Value::MakeDict(std::move(kwargs)));
  return Value::Str(ev.RenderMacroBody(*body_, scope));
}

Value BoundMethod::Call(Evaluator& ev, CallArgs args) {
  return CallMethod(ev, self_, name_, std::move(args));
}

Value LoopObject::GetAttr(std::string_view name) const {
  auto n = static_cast<int64_t>(items_.size());
  auto i = static_cast<int64_t>(index0_);
  if (name == "index") return Value::Int(i + 1);
  if (name == "index0") return Value::Int(i);
  if (name == "revindex") return Value::Int(n - i);
  if (name == "revindex0") return Value::Int(n - i - 1);
  if (name == "first") return Value::Bool(i == 0);
  if (name == "last") return Value::Bool(i == n - 1);
  if (name == "length") return Value::Int(n);
  if (name == "depth") return Value::Int(1);
  if (name == "depth0") return Value::Int(0);
  if (name == "previtem")
    return i > 0 ? items_[i - 1] : Value::Undefined("there is no previous item");
  if (name == "nextitem")
    return i + 1 < n ? items_[i + 1] : Value::Undefined("there is no next item");
  if (name == "cycle") {
    return Value::Obj(std::make_shared<BuiltinFunction>("cycle", [i](Evaluator&, CallArgs& args) {
      if (args.positional.empty()) Fail("no items for cycling given");
      return args.positional[static_cast<size_t>(i) % args.positional.size()];
    }));
  }
  return Value::Undefined("'LoopContext' object has no attribute '" + std::string(name) + "'");
}

std::string LoopObject::Str(int) const {
  return "<LoopContext " + std::to_string(index0_ + 1) + "/" + std::to_string(items_.size()) + ">";
}

}  // namespace kiln::jinja
