#include "tokenizer/jinja/parser.h"

#include <algorithm>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/parser_internal.h"

namespace kiln::jinja {

Template Parse(std::string_view source, const LexerOptions& options) {
  return Parser(Tokenize(source, options)).ParseTemplate();
}

Template Parser::ParseTemplate() {
  Template t;
  t.body = Subparse({});
  return t;
}

const Token& Parser::Peek(size_t ahead) const {
  return tokens_[std::min(i_ + ahead, tokens_.size() - 1)];
}

bool Parser::SkipName(std::string_view name) {
  if (!IsName(name)) return false;
  Next();
  return true;
}

bool Parser::SkipOp(std::string_view op) {
  if (!IsOp(op)) return false;
  Next();
  return true;
}

void Parser::ExpectOp(std::string_view op) {
  if (!SkipOp(op)) Error("expected '" + std::string(op) + "', got " + Describe(Cur()));
}

void Parser::ExpectName(std::string_view name) {
  if (!SkipName(name)) Error("expected '" + std::string(name) + "', got " + Describe(Cur()));
}

std::string Parser::ExpectIdentifier() {
  if (Cur().type != Tok::kName) Error("expected a name, got " + Describe(Cur()));
  return Next().text;
}

void Parser::Expect(Tok type, const char* what) {
  if (Cur().type != type) Error(std::string("expected ") + what + ", got " + Describe(Cur()));
  Next();
}

void Parser::Error(const std::string& message) const { throw TemplateError(message, Cur().line); }

std::string Parser::Describe(const Token& t) {
  switch (t.type) {
    case Tok::kData:
      return "template text";
    case Tok::kVarBegin:
      return "'{{'";
    case Tok::kVarEnd:
      return "'}}'";
    case Tok::kBlockBegin:
      return "'{%'";
    case Tok::kBlockEnd:
      return "'%}'";
    case Tok::kEof:
      return "end of template";
    case Tok::kString:
      return "string";
    case Tok::kInt:
    case Tok::kFloat:
      return "number";
    default:
      return "'" + t.text + "'";
  }
}

Body Parser::Subparse(std::initializer_list<std::string_view> end_tags) {
  Nest nest(this);
  Body body;
  while (true) {
    const Token& t = Cur();
    if (t.type == Tok::kData) {
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kText;
      s->line = t.line;
      s->text = t.text;
      body.push_back(std::move(s));
      Next();
    } else if (t.type == Tok::kVarBegin) {
      Next();
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kOutput;
      s->line = t.line;
      s->expr = ParseTuple(false, true);
      Expect(Tok::kVarEnd, "'}}'");
      body.push_back(std::move(s));
    } else if (t.type == Tok::kBlockBegin) {
      Next();
      for (std::string_view tag : end_tags) {
        if (IsName(tag)) return body;
      }
      body.push_back(ParseStatement());
      Expect(Tok::kBlockEnd, "'%}'");
    } else if (t.type == Tok::kEof) {
      if (end_tags.size() == 0) return body;
      std::string want;
      for (std::string_view tag : end_tags)
        want += (want.empty() ? "'" : " or '") + std::string(tag) + "'";
      Error("unexpected end of template, looking for " + want);
    } else {
      Error("unexpected " + Describe(t));
    }
  }
}

Body Parser::ParseStatements(std::initializer_list<std::string_view> end_tags, bool drop_needle) {
  SkipOp(":");
  Expect(Tok::kBlockEnd, "'%}'");
  Body body = Subparse(end_tags);
  if (drop_needle) Next();
  return body;
}

StmtPtr Parser::ParseStatement() {
  if (Cur().type != Tok::kName) Error("tag name expected, got " + Describe(Cur()));
  const std::string& tag = Cur().text;
  if (tag == "if") return ParseIf();
  if (tag == "for") return ParseFor();
  if (tag == "set") return ParseSet();
  if (tag == "macro") return ParseMacro();
  if (tag == "call") return ParseCallBlock();
  if (tag == "filter") return ParseFilterBlock();
  if (tag == "with") return ParseWith();
  if (tag == "generation") return ParseScope("endgeneration");  // transformers' extension
  if (tag == "break") return ParseLoopControl(StmtKind::kBreak);
  if (tag == "continue") return ParseLoopControl(StmtKind::kContinue);
  if (tag == "print") {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kOutput;
    s->line = Next().line;
    s->expr = ParseTuple(false, true);
    return s;
  }
  Error("encountered unknown or unsupported tag '" + tag + "'");
}

StmtPtr Parser::ParseIf() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kIf;
  s->line = Next().line;
  while (true) {
    s->conditions.push_back(ParseTuple(false, false));
    s->bodies.push_back(ParseStatements({"elif", "else", "endif"}, false));
    std::string tag = Next().text;
    if (tag == "elif") continue;
    if (tag == "else") s->bodies.push_back(ParseStatements({"endif"}, true));
    return s;
  }
}

StmtPtr Parser::ParseFor() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kFor;
  s->line = Next().line;
  ParseAssignTarget(*s, false);
  ExpectName("in");
  s->expr = ParseTuple(false, false, {"recursive"});
  if (SkipName("if")) s->filter = ParseExpression();
  if (IsName("recursive")) Error("recursive for loops are not supported");
  ++loop_depth_;
  s->bodies.push_back(ParseStatements({"endfor", "else"}, false));
  --loop_depth_;
  if (Next().text == "else") {
    s->bodies.push_back(ParseStatements({"endfor"}, true));
  }
  return s;
}

void Parser::ParseAssignTarget(Stmt& stmt, bool with_namespace) {
  if (with_namespace && Cur().type == Tok::kName && Peek().type == Tok::kOp && Peek().text == ".") {
    stmt.targets.push_back(Next().text);
    Next();
    stmt.ns_attr = ExpectIdentifier();
    return;
  }
  bool parenthesized = SkipOp("(");
  while (true) {
    if (Cur().type != Tok::kName) Error("can't assign to " + Describe(Cur()));
    std::string name = Next().text;
    if (name == "true" || name == "false" || name == "none" || name == "True" || name == "False" ||
        name == "None") {
      Error("can't assign to '" + name + "'");
    }
    stmt.targets.push_back(std::move(name));
    if (!SkipOp(",")) break;
    stmt.tuple_target = true;
    if (Cur().type != Tok::kName) break;  // trailing comma
  }
  if (parenthesized) ExpectOp(")");
}

StmtPtr Parser::ParseSet() {
  auto s = std::make_unique<Stmt>();
  s->line = Next().line;
  ParseAssignTarget(*s, true);
  if (SkipOp("=")) {
    s->kind = StmtKind::kSet;
    s->expr = ParseTuple(false, true);
    return s;
  }
  s->kind = StmtKind::kSetBlock;
  if (IsOp("|")) s->filter = ParseFilter(nullptr, true);
  s->bodies.push_back(ParseStatements({"endset"}, true));
  return s;
}

void Parser::ParseSignature(std::vector<Param>& params) {
  ExpectOp("(");
  while (!IsOp(")")) {
    if (!params.empty()) ExpectOp(",");
    if (IsOp(")")) break;
    Param p;
    p.name = ExpectIdentifier();
    if (SkipOp("="))
      p.default_value = ParseExpression();
    else if (!params.empty() && params.back().default_value)
      Error("non-default argument follows default argument");
    params.push_back(std::move(p));
  }
  ExpectOp(")");
}

StmtPtr Parser::ParseMacro() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kMacro;
  s->line = Next().line;
  s->text = ExpectIdentifier();
  ParseSignature(s->params);
  int saved_loop_depth = loop_depth_;
  loop_depth_ = 0;
  s->bodies.push_back(ParseStatements({"endmacro"}, true));
  loop_depth_ = saved_loop_depth;
  return s;
}

StmtPtr Parser::ParseCallBlock() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kCallBlock;
  s->line = Next().line;
  if (IsOp("(")) ParseSignature(s->params);
  s->expr = ParseExpression();
  if (s->expr->kind != ExprKind::kCall) Error("expected call");
  int saved_loop_depth = loop_depth_;
  loop_depth_ = 0;
  s->bodies.push_back(ParseStatements({"endcall"}, true));
  loop_depth_ = saved_loop_depth;
  return s;
}

StmtPtr Parser::ParseFilterBlock() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kFilterBlock;
  s->line = Next().line;
  s->filter = ParseFilter(nullptr, true);
  s->bodies.push_back(ParseStatements({"endfilter"}, true));
  return s;
}

StmtPtr Parser::ParseWith() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kWith;
  s->line = Next().line;
  while (Cur().type != Tok::kBlockEnd) {
    if (!s->targets.empty()) ExpectOp(",");
    s->targets.push_back(ExpectIdentifier());
    ExpectOp("=");
    s->values.push_back(ParseExpression());
  }
  s->bodies.push_back(ParseStatements({"endwith"}, true));
  return s;
}

StmtPtr Parser::ParseScope(std::string_view end_tag) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kScope;
  s->line = Next().line;
  s->bodies.push_back(ParseStatements({end_tag}, true));
  return s;
}

StmtPtr Parser::ParseLoopControl(StmtKind kind) {
  if (loop_depth_ == 0) Error("'" + Cur().text + "' outside loop");
  auto s = std::make_unique<Stmt>();
  s->kind = kind;
  s->line = Next().line;
  return s;
}

}  // namespace kiln::jinja
