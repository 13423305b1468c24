// The recursive-descent parser shared by parser.cc (statements) and parser_expr.cc (expressions).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/lexer.h"

namespace kiln::jinja {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}
  Template ParseTemplate();

 private:
  // Nesting limits: deeper input is rejected rather than risking the stack.
  static constexpr int kMaxNesting = 100;
  static constexpr int kMaxHeight = 256;

  // Token cursor.
  const Token& Cur() const { return tokens_[i_]; }
  const Token& Peek(size_t ahead = 1) const;
  const Token& Next() { return tokens_[i_ < tokens_.size() - 1 ? i_++ : i_]; }
  bool IsName(std::string_view name) const {
    return Cur().type == Tok::kName && Cur().text == name;
  }
  bool IsOp(std::string_view op) const { return Cur().type == Tok::kOp && Cur().text == op; }
  bool SkipName(std::string_view name);
  bool SkipOp(std::string_view op);
  void ExpectOp(std::string_view op);
  void ExpectName(std::string_view name);
  std::string ExpectIdentifier();
  void Expect(Tok type, const char* what);
  [[noreturn]] void Error(const std::string& message) const;
  static std::string Describe(const Token& t);

  // Statements (parser.cc).
  Body Subparse(std::initializer_list<std::string_view> end_tags);
  Body ParseStatements(std::initializer_list<std::string_view> end_tags, bool drop_needle);
  StmtPtr ParseStatement();
  StmtPtr ParseIf();
  StmtPtr ParseFor();
  StmtPtr ParseSet();
  StmtPtr ParseMacro();
  StmtPtr ParseCallBlock();
  StmtPtr ParseFilterBlock();
  StmtPtr ParseWith();
  StmtPtr ParseScope(std::string_view end_tag);
  StmtPtr ParseLoopControl(StmtKind kind);
  void ParseSignature(std::vector<Param>& params);
  void ParseAssignTarget(Stmt& stmt, bool with_namespace);

  // Expressions (parser_expr.cc).
  ExprPtr ParseTuple(bool simplified, bool with_condexpr,
                     std::initializer_list<std::string_view> extra_end = {},
                     bool explicit_parentheses = false);
  ExprPtr ParseExpression(bool with_condexpr = true);
  ExprPtr ParseCondExpr();
  ExprPtr ParseOr();
  ExprPtr ParseAnd();
  ExprPtr ParseNot();
  ExprPtr ParseCompare();
  ExprPtr ParseMath1();
  ExprPtr ParseConcat();
  ExprPtr ParseMath2();
  ExprPtr ParsePow();
  ExprPtr ParseUnary(bool with_filter);
  ExprPtr ParsePrimary();
  ExprPtr ParseParenthesized();
  ExprPtr ParseList();
  ExprPtr ParseDict();
  ExprPtr ParsePostfix(ExprPtr node);
  ExprPtr ParseFilterExpr(ExprPtr node);
  ExprPtr ParseSubscript(ExprPtr node);
  ExprPtr ParseSubscribed(ExprPtr node);
  ExprPtr ParseCall(ExprPtr callee);
  void ParseCallArgs(Expr& node);
  ExprPtr ParseFilter(ExprPtr node, bool start_inline);
  ExprPtr ParseTest(ExprPtr node);
  bool IsTupleEnd(std::initializer_list<std::string_view> extra_end) const;
  ExprPtr MakeExpr(ExprKind kind, int line, std::vector<ExprPtr> items = {});
  void UpdateHeight(Expr& e);

  // Tracks recursion so nesting is bounded.
  class Nest {
   public:
    explicit Nest(Parser* p) : p_(p) {
      if (++p_->nesting_ > kMaxNesting) p_->Error("template nested too deeply");
    }
    ~Nest() { --p_->nesting_; }

   private:
    Parser* p_;
  };

  std::vector<Token> tokens_;
  size_t i_ = 0;
  int nesting_ = 0;
  int loop_depth_ = 0;  // break/continue are valid only inside a for body
};

}  // namespace kiln::jinja
