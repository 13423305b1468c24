// Statements: text, output, if, for, set, macro, call, filter and with blocks.
#include "tokenizer/jinja/evaluator.h"

#include <new>
#include <stdexcept>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/filters.h"
#include "tokenizer/jinja/objects.h"

namespace kiln::jinja {

const Value* Scope::Find(std::string_view name) const {
  for (const Scope* s = this; s; s = s->parent_.get()) {
    for (const auto& [key, value] : s->vars_) {
      if (key == name) return &value;
    }
  }
  return nullptr;
}

void Scope::Set(std::string_view name, Value value) {
  for (auto& [key, v] : vars_) {
    if (key == name) {
      v = std::move(value);
      return;
    }
  }
  vars_.emplace_back(std::string(name), std::move(value));
}

Evaluator::DepthGuard::DepthGuard(Evaluator* ev) : ev_(ev) {
  if (++ev_->depth_ > kMaxDepth) {
    --ev_->depth_;
    Fail("template recursion too deep");
  }
}

Evaluator::~Evaluator() {
  for (const ObjectPtr& o : tracked_) o->Release();
}

std::string Evaluator::Render(const Template& t,
                              std::vector<std::pair<std::string, Value>> globals) {
  auto builtins = std::make_shared<Scope>();
  AddBuiltins(*builtins);
  auto root = std::make_shared<Scope>(builtins);
  for (auto& [name, value] : globals) root->Set(name, std::move(value));
  std::string out;
  try {
    Exec(t.body, root, out);
  } catch (const TemplateError& e) {
    if (e.line() == 0) throw TemplateError(e.message(), line_, e.raised());
    throw;
  } catch (const std::bad_alloc&) {
    throw TemplateError("out of memory", line_);
  } catch (const std::length_error&) {
    throw TemplateError("value too large", line_);
  }
  return out;
}

void Evaluator::Work(int64_t units) {
  work_ += units;
  if (work_ > limits_.max_work)
    Fail("template exceeded its work limit (too many loop iterations or items)");
}

void Evaluator::CheckString(size_t bytes) {
  if (bytes > limits_.max_output_bytes)
    Fail("string longer than " + std::to_string(limits_.max_output_bytes) + " bytes");
}

void Evaluator::CheckList(size_t items) {
  if (items > limits_.max_list_items)
    Fail("list longer than " + std::to_string(limits_.max_list_items) + " items");
}

Value Evaluator::MakeString(std::string s) {
  CheckString(s.size());
  Work(static_cast<int64_t>(s.size() / 64));
  return Value::Str(std::move(s));
}

void Evaluator::Emit(std::string& out, std::string_view text) {
  if (out.size() + text.size() > limits_.max_output_bytes) {
    Fail("rendered text longer than " + std::to_string(limits_.max_output_bytes) + " bytes");
  }
  Work(1 + static_cast<int64_t>(text.size() / 64));
  out.append(text);
}

Evaluator::Flow Evaluator::Exec(const Body& body, const ScopePtr& scope, std::string& out) {
  for (const StmtPtr& s : body) {
    Flow flow = ExecStmt(*s, scope, out);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::ExecStmt(const Stmt& s, const ScopePtr& scope, std::string& out) {
  DepthGuard guard(this);
  line_ = s.line;
  switch (s.kind) {
    case StmtKind::kText:
      Emit(out, s.text);
      break;
    case StmtKind::kOutput:
      Emit(out, Eval(*s.expr, scope).Str());
      break;
    case StmtKind::kIf:
      return ExecIf(s, scope, out);
    case StmtKind::kFor:
      ExecFor(s, scope, out);
      break;
    case StmtKind::kSet:
      ExecSet(s, scope, Eval(*s.expr, scope));
      break;
    case StmtKind::kSetBlock: {
      std::string text;
      Exec(s.bodies[0], scope, text);
      Value v = Value::Str(std::move(text));
      if (s.filter) v = EvalFilter(*s.filter, scope, &v);
      ExecSet(s, scope, std::move(v));
      break;
    }
    case StmtKind::kMacro:
      ExecMacro(s, scope);
      break;
    case StmtKind::kCallBlock:
      ExecCallBlock(s, scope, out);
      break;
    case StmtKind::kFilterBlock: {
      std::string text;
      Exec(s.bodies[0], std::make_shared<Scope>(scope), text);
      Value v = Value::Str(std::move(text));
      Emit(out, EvalFilter(*s.filter, scope, &v).Str());
      break;
    }
    case StmtKind::kWith: {
      auto inner = std::make_shared<Scope>(scope);
      for (size_t i = 0; i < s.targets.size(); ++i)
        inner->Set(s.targets[i], Eval(*s.values[i], scope));
      return Exec(s.bodies[0], inner, out);
    }
    case StmtKind::kScope:
      return Exec(s.bodies[0], std::make_shared<Scope>(scope), out);
    case StmtKind::kBreak:
      return Flow::kBreak;
    case StmtKind::kContinue:
      return Flow::kContinue;
  }
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::ExecIf(const Stmt& s, const ScopePtr& scope, std::string& out) {
  for (size_t i = 0; i < s.conditions.size(); ++i) {
    if (Eval(*s.conditions[i], scope).Truthy()) return Exec(s.bodies[i], scope, out);
  }
  if (s.bodies.size() > s.conditions.size()) return Exec(s.bodies.back(), scope, out);
  return Flow::kNormal;
}

namespace {

// Binds a loop or set target: one name, or several unpacked from an iterable.
void Bind(const Stmt& s, Scope& scope, const Value& value) {
  if (!s.tuple_target && s.targets.size() == 1) {
    scope.Set(s.targets[0], value);
    return;
  }
  std::vector<Value> parts = Iterate(value);
  if (parts.size() != s.targets.size()) {
    Fail(parts.size() > s.targets.size()
             ? "too many values to unpack (expected " + std::to_string(s.targets.size()) + ")"
             : "not enough values to unpack (expected " + std::to_string(s.targets.size()) +
                   ", got " + std::to_string(parts.size()) + ")");
  }
  for (size_t i = 0; i < parts.size(); ++i) scope.Set(s.targets[i], parts[i]);
}

}  // namespace

void Evaluator::ExecFor(const Stmt& s, const ScopePtr& scope, std::string& out) {
  std::vector<Value> items = Iterate(Eval(*s.expr, scope));
  Work(static_cast<int64_t>(items.size()));
  if (s.filter) {  // `for x in xs if cond`: loop.length and friends count only kept items
    std::vector<Value> kept;
    for (Value& item : items) {
      auto test_scope = std::make_shared<Scope>(scope);
      Bind(s, *test_scope, item);
      if (Eval(*s.filter, test_scope).Truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    if (s.bodies.size() > 1) Exec(s.bodies[1], std::make_shared<Scope>(scope), out);
    return;
  }
  auto loop = std::make_shared<LoopObject>(std::move(items));
  Value loop_value = Value::Obj(loop);
  for (size_t i = 0; i < loop->items().size(); ++i) {
    Work(1);
    auto iteration = std::make_shared<Scope>(scope);
    loop->set_index0(i);
    iteration->Set("loop", loop_value);
    Bind(s, *iteration, loop->items()[i]);
    if (Exec(s.bodies[0], iteration, out) == Flow::kBreak) break;
  }
}

void Evaluator::ExecSet(const Stmt& s, const ScopePtr& scope, Value value) {
  if (s.ns_attr.empty()) return Bind(s, *scope, value);
  const Value* target = scope->Find(s.targets[0]);
  auto* ns = target && target->is_object() ? dynamic_cast<Namespace*>(&target->object()) : nullptr;
  if (!ns) Fail("cannot assign attribute on non-namespace object '" + s.targets[0] + "'");
  ns->SetAttr(s.ns_attr, std::move(value));
}

void Evaluator::ExecMacro(const Stmt& s, const ScopePtr& scope) {
  auto macro = std::make_shared<MacroObject>(s.text, &s.params, &s.bodies[0], scope);
  Track(macro);
  scope->Set(s.text, Value::Obj(macro));
}

void Evaluator::ExecCallBlock(const Stmt& s, const ScopePtr& scope, std::string& out) {
  auto caller = std::make_shared<MacroObject>("caller", &s.params, &s.bodies[0], scope);
  Track(caller);
  const Expr& call = *s.expr;
  Value callee = Eval(*call.items[0], scope);
  CallArgs args = EvalArgs(call, 1, scope);
  args.keyword.emplace_back("caller", Value::Obj(caller));
  Emit(out, Call(callee, std::move(args)).Str());
}

std::string Evaluator::RenderMacroBody(const Body& body, const ScopePtr& scope) {
  if (call_depth_ >= limits_.max_call_depth) Fail("maximum macro call depth exceeded");
  ++call_depth_;
  std::string out;
  try {
    Exec(body, scope, out);
  } catch (...) {
    --call_depth_;
    throw;
  }
  --call_depth_;
  return out;
}

}  // namespace kiln::jinja
