// The host objects a template can hold: namespace(), macros, the loop variable, bound methods
// and global functions.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/value.h"

namespace kiln::jinja {

// namespace(): the one mutable object, so that `{% set ns.x = ... %}` can carry state out of
// a loop body.
class Namespace : public Object {
 public:
  std::string TypeName() const override { return "Namespace"; }
  Value GetAttr(std::string_view name) const override;
  void SetAttr(std::string_view name, Value value);
  std::string Str(int depth) const override;
  void Release() override { attrs_.clear(); }

 private:
  std::vector<std::pair<std::string, Value>> attrs_;
};

// {% macro %} and the `caller` of a {% call %} block.
class MacroObject : public Object {
 public:
  MacroObject(std::string name, const std::vector<Param>* params, const Body* body,
              ScopePtr closure)
      : name_(std::move(name)), params_(params), body_(body), closure_(std::move(closure)) {}
  std::string TypeName() const override { return "Macro"; }
  bool IsCallable() const override { return true; }
  Value Call(Evaluator& ev, CallArgs args) override;
  std::string Str(int) const override { return "<Macro '" + name_ + "'>"; }
  void Release() override { closure_.reset(); }

 private:
  std::string name_;
  const std::vector<Param>* params_;
  const Body* body_;
  ScopePtr closure_;
};

class BuiltinFunction : public Object {
 public:
  using Fn = std::function<Value(Evaluator&, CallArgs&)>;
  BuiltinFunction(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string TypeName() const override { return "builtin_function_or_method"; }
  bool IsCallable() const override { return true; }
  Value Call(Evaluator& ev, CallArgs args) override { return fn_(ev, args); }
  std::string Str(int) const override { return "<built-in function " + name_ + ">"; }

 private:
  std::string name_;
  Fn fn_;
};

// `'abc'.upper` taken without calling it.
class BoundMethod : public Object {
 public:
  BoundMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  std::string TypeName() const override { return "builtin_function_or_method"; }
  bool IsCallable() const override { return true; }
  Value Call(Evaluator& ev, CallArgs args) override;
  std::string Str(int) const override { return "<built-in method " + name_ + ">"; }

 private:
  Value self_;
  std::string name_;
};

// The `loop` variable of a for loop; the evaluator moves it along.
class LoopObject : public Object {
 public:
  explicit LoopObject(std::vector<Value> items) : items_(std::move(items)) {}
  std::string TypeName() const override { return "LoopContext"; }
  Value GetAttr(std::string_view name) const override;
  std::string Str(int) const override;
  void set_index0(size_t i) { index0_ = i; }
  const std::vector<Value>& items() const { return items_; }

 private:
  std::vector<Value> items_;
  size_t index0_ = 0;
};

// Adds range, namespace, dict, raise_exception and strftime_now to `scope`.
void AddBuiltins(Scope& scope);

}  // namespace kiln::jinja
