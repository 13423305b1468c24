// Renders a parsed template: statements write text, expressions compute Values. All the work a
// template can make is bounded (output size, loop iterations and items processed, call depth),
// so a hostile template ends in a TemplateError rather than a hang or a crash.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/value.h"

namespace kiln::jinja {

struct RenderLimits {
  size_t max_output_bytes = 16u << 20;  // the rendered text, and any one string built on the way
  int64_t max_work = 10'000'000;        // loop iterations + items filters visit + bytes built / 64
  int max_call_depth = 64;              // nested macro calls
  size_t max_list_items = 1'000'000;
};

// Variables of one block: a for-loop iteration, a macro call, the template's top level.
class Scope {
 public:
  explicit Scope(std::shared_ptr<Scope> parent = nullptr) : parent_(std::move(parent)) {}
  const Value* Find(std::string_view name) const;  // here or in an enclosing scope
  void Set(std::string_view name, Value value);    // here

 private:
  std::shared_ptr<Scope> parent_;
  std::vector<std::pair<std::string, Value>> vars_;
};
using ScopePtr = std::shared_ptr<Scope>;

class Evaluator {
 public:
  explicit Evaluator(const RenderLimits& limits) : limits_(limits) {}
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  // `globals` are the template's variables (messages, bos_token, ...).
  std::string Render(const Template& t, std::vector<std::pair<std::string, Value>> globals);

  // For filters, tests, methods and objects.
  Value Eval(const Expr& e, const ScopePtr& scope);
  Value Call(const Value& callee, CallArgs args);
  Value ApplyFilter(std::string_view name, const Value& input, CallArgs args);
  bool ApplyTest(std::string_view name, const Value& input, CallArgs args);
  Value GetAttr(const Value& obj, std::string_view name);
  Value GetItem(const Value& obj, const Value& key);
  std::string RenderMacroBody(const Body& body, const ScopePtr& scope);
  void Work(int64_t units);
  void CheckString(size_t bytes);
  void CheckList(size_t items);
  Value MakeString(std::string s);  // checks the size first
  // Objects that may hold references back to themselves (namespaces, macros): their references
  // are cut when the render ends so that no reference cycle outlives it.
  void Track(ObjectPtr object) { tracked_.push_back(std::move(object)); }

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  Flow Exec(const Body& body, const ScopePtr& scope, std::string& out);
  Flow ExecStmt(const Stmt& s, const ScopePtr& scope, std::string& out);
  Flow ExecIf(const Stmt& s, const ScopePtr& scope, std::string& out);
  void ExecFor(const Stmt& s, const ScopePtr& scope, std::string& out);
  void ExecSet(const Stmt& s, const ScopePtr& scope, Value value);
  void ExecMacro(const Stmt& s, const ScopePtr& scope);
  void ExecCallBlock(const Stmt& s, const ScopePtr& scope, std::string& out);
  void Emit(std::string& out, std::string_view text);

  Value EvalCall(const Expr& e, const ScopePtr& scope);
  CallArgs EvalArgs(const Expr& e, size_t first, const ScopePtr& scope);
  Value EvalFilter(const Expr& e, const ScopePtr& scope, const Value* input);
  Value EvalCompare(const Expr& e, const ScopePtr& scope);
  Value EvalSlice(const Expr& e, const ScopePtr& scope);
  Value EvalName(const Expr& e, const ScopePtr& scope);

  // Counts nested Eval / ExecStmt calls: with macros calling macros the syntax tree's own
  // depth limits do not bound the C++ stack, this does.
  class DepthGuard {
   public:
    explicit DepthGuard(Evaluator* ev);
    ~DepthGuard() { --ev_->depth_; }

   private:
    Evaluator* ev_;
  };
  static constexpr int kMaxDepth = 500;

  const RenderLimits& limits_;
  int depth_ = 0;
  int64_t work_ = 0;
  int call_depth_ = 0;
  int line_ = 0;
  std::vector<ObjectPtr> tracked_;

  friend class MacroObject;
};

// Binary and unary operators with Python semantics (operators.cc).
Value BinaryOp(Evaluator& ev, std::string_view op, const Value& a, const Value& b);
Value UnaryOp(std::string_view op, const Value& a);
// jinja2's UndefinedError for using an undefined value (operations, attributes, calls).
[[noreturn]] void FailUndefined(const Value& v);

}  // namespace kiln::jinja
