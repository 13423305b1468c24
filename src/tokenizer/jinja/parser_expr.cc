// Expressions, with Jinja2's precedence: conditional < or < and < not < comparisons (incl. in)
// < + - < ~ < * / // % < ** < unary - + < postfix (. [] ()) and filters / tests.
#include <algorithm>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/parser_internal.h"

namespace kiln::jinja {

void Parser::UpdateHeight(Expr& e) {
  int h = 0;
  for (const auto& item : e.items)
    if (item) h = std::max(h, item->height);
  for (const auto& kw : e.keywords) h = std::max(h, kw.second->height);
  if (e.star_args) h = std::max(h, e.star_args->height);
  if (e.star_kwargs) h = std::max(h, e.star_kwargs->height);
  e.height = h + 1;
  if (e.height > kMaxHeight) Error("expression nested too deeply");
}

ExprPtr Parser::MakeExpr(ExprKind kind, int line, std::vector<ExprPtr> items) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  e->items = std::move(items);
  UpdateHeight(*e);
  return e;
}

bool Parser::IsTupleEnd(std::initializer_list<std::string_view> extra_end) const {
  Tok t = Cur().type;
  if (t == Tok::kVarEnd || t == Tok::kBlockEnd || t == Tok::kEof || IsOp(")")) return true;
  return std::any_of(extra_end.begin(), extra_end.end(),
                     [&](std::string_view n) { return IsName(n); });
}

ExprPtr Parser::ParseTuple(bool simplified, bool with_condexpr,
                           std::initializer_list<std::string_view> extra_end,
                           bool explicit_parentheses) {
  int line = Cur().line;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) ExpectOp(",");
    if (IsTupleEnd(extra_end)) break;
    items.push_back(simplified ? ParsePrimary() : ParseExpression(with_condexpr));
    if (IsOp(","))
      is_tuple = true;
    else
      break;
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parentheses) Error("expected an expression, got " + Describe(Cur()));
  }
  return MakeExpr(ExprKind::kTuple, line, std::move(items));
}

ExprPtr Parser::ParseExpression(bool with_condexpr) {
  Nest nest(this);
  return with_condexpr ? ParseCondExpr() : ParseOr();
}

ExprPtr Parser::ParseCondExpr() {
  ExprPtr expr = ParseOr();
  while (IsName("if")) {
    int line = Next().line;
    ExprPtr test = ParseOr();
    ExprPtr otherwise;
    if (SkipName("else")) {
      Nest nest(this);  // `a if b else c if d else ...` recurses once per `else`
      otherwise = ParseCondExpr();
    }
    std::vector<ExprPtr> items;
    items.push_back(std::move(expr));
    items.push_back(std::move(test));
    items.push_back(std::move(otherwise));
    expr = MakeExpr(ExprKind::kCond, line, std::move(items));
  }
  return expr;
}

ExprPtr Parser::ParseOr() {
  ExprPtr left = ParseAnd();
  while (IsName("or")) {
    int line = Next().line;
    std::vector<ExprPtr> items;
    items.push_back(std::move(left));
    items.push_back(ParseAnd());
    left = MakeExpr(ExprKind::kBinary, line, std::move(items));
    left->name = "or";
  }
  return left;
}

ExprPtr Parser::ParseAnd() {
  ExprPtr left = ParseNot();
  while (IsName("and")) {
    int line = Next().line;
    std::vector<ExprPtr> items;
    items.push_back(std::move(left));
    items.push_back(ParseNot());
    left = MakeExpr(ExprKind::kBinary, line, std::move(items));
    left->name = "and";
  }
  return left;
}

ExprPtr Parser::ParseNot() {
  if (IsName("not")) {
    Nest nest(this);
    int line = Next().line;
    std::vector<ExprPtr> items;
    items.push_back(ParseNot());
    ExprPtr e = MakeExpr(ExprKind::kUnary, line, std::move(items));
    e->name = "not";
    return e;
  }
  return ParseCompare();
}

ExprPtr Parser::ParseCompare() {
  int line = Cur().line;
  ExprPtr first = ParseMath1();
  std::vector<ExprPtr> items;
  std::vector<std::string> ops;
  static const char* kOps[] = {"==", "!=", "<", "<=", ">", ">="};
  while (true) {
    std::string op;
    if (Cur().type == Tok::kOp &&
        std::find(std::begin(kOps), std::end(kOps), Cur().text) != std::end(kOps)) {
      op = Next().text;
    } else if (SkipName("in")) {
      op = "in";
    } else if (IsName("not") && Peek().type == Tok::kName && Peek().text == "in") {
      Next();
      Next();
      op = "notin";
    } else {
      break;
    }
    if (items.empty()) items.push_back(std::move(first));
    items.push_back(ParseMath1());
    ops.push_back(op);
  }
  if (items.empty()) return first;
  ExprPtr e = MakeExpr(ExprKind::kCompare, line, std::move(items));
  e->ops = std::move(ops);
  return e;
}

// Left-associative binary levels share one loop.
#define KILN_BINARY_LEVEL(Name, Sub, ...)                                               \
  ExprPtr Parser::Name() {                                                              \
    ExprPtr left = Sub();                                                               \
    static const char* kOps[] = {__VA_ARGS__};                                          \
    while (Cur().type == Tok::kOp &&                                                    \
           std::find(std::begin(kOps), std::end(kOps), Cur().text) != std::end(kOps)) { \
      const Token& t = Next();                                                          \
      std::vector<ExprPtr> items;                                                       \
      items.push_back(std::move(left));                                                 \
      items.push_back(Sub());                                                           \
      left = MakeExpr(ExprKind::kBinary, t.line, std::move(items));                     \
      left->name = t.text;                                                              \
    }                                                                                   \
    return left;                                                                        \
  }

KILN_BINARY_LEVEL(ParseMath1, ParseConcat, "+", "-")
KILN_BINARY_LEVEL(ParseConcat, ParseMath2, "~")
KILN_BINARY_LEVEL(ParseMath2, ParsePow, "*", "/", "//", "%")
#undef KILN_BINARY_LEVEL

ExprPtr Parser::ParsePow() {
  ExprPtr left = ParseUnary(true);
  while (IsOp("**")) {
    int line = Next().line;
    std::vector<ExprPtr> items;
    items.push_back(std::move(left));
    items.push_back(ParseUnary(true));
    left = MakeExpr(ExprKind::kBinary, line, std::move(items));
    left->name = "**";
  }
  return left;
}

ExprPtr Parser::ParseUnary(bool with_filter) {
  Nest nest(this);
  ExprPtr node;
  if (IsOp("-") || IsOp("+")) {
    const Token& t = Next();
    std::vector<ExprPtr> items;
    items.push_back(ParseUnary(false));
    node = MakeExpr(ExprKind::kUnary, t.line, std::move(items));
    node->name = t.text;
  } else {
    node = ParsePrimary();
  }
  node = ParsePostfix(std::move(node));
  if (with_filter) node = ParseFilterExpr(std::move(node));
  return node;
}

ExprPtr Parser::ParsePrimary() {
  Nest nest(this);
  const Token& t = Cur();
  int line = t.line;
  switch (t.type) {
    case Tok::kName: {
      std::string name = Next().text;
      ExprPtr e = MakeExpr(ExprKind::kLiteral, line);
      if (name == "true" || name == "True")
        e->value = Value::Bool(true);
      else if (name == "false" || name == "False")
        e->value = Value::Bool(false);
      else if (name == "none" || name == "None")
        e->value = Value::None();
      else
        e->kind = ExprKind::kName, e->name = std::move(name);
      return e;
    }
    case Tok::kString: {
      std::string s;
      while (Cur().type == Tok::kString) s += Next().text;  // adjacent literals concatenate
      ExprPtr e = MakeExpr(ExprKind::kLiteral, line);
      e->value = Value::Str(std::move(s));
      return e;
    }
    case Tok::kInt:
    case Tok::kFloat: {
      ExprPtr e = MakeExpr(ExprKind::kLiteral, line);
      e->value = t.type == Tok::kInt ? Value::Int(t.int_value) : Value::Float(t.float_value);
      Next();
      return e;
    }
    default:
      break;
  }
  if (IsOp("(")) return ParseParenthesized();
  if (IsOp("[")) return ParseList();
  if (IsOp("{")) return ParseDict();
  Error("unexpected " + Describe(t));
}

ExprPtr Parser::ParseParenthesized() {
  Next();
  ExprPtr e = ParseTuple(false, true, {}, true);
  ExpectOp(")");
  return e;
}

ExprPtr Parser::ParseList() {
  int line = Next().line;
  std::vector<ExprPtr> items;
  while (!IsOp("]")) {
    if (!items.empty()) ExpectOp(",");
    if (IsOp("]")) break;
    items.push_back(ParseExpression());
  }
  ExpectOp("]");
  return MakeExpr(ExprKind::kList, line, std::move(items));
}

ExprPtr Parser::ParseDict() {
  int line = Next().line;
  std::vector<ExprPtr> items;
  while (!IsOp("}")) {
    if (!items.empty()) ExpectOp(",");
    if (IsOp("}")) break;
    items.push_back(ParseExpression());
    ExpectOp(":");
    items.push_back(ParseExpression());
  }
  ExpectOp("}");
  return MakeExpr(ExprKind::kDict, line, std::move(items));
}

ExprPtr Parser::ParsePostfix(ExprPtr node) {
  while (true) {
    if (IsOp(".") || IsOp("["))
      node = ParseSubscript(std::move(node));
    else if (IsOp("("))
      node = ParseCall(std::move(node));
    else
      return node;
  }
}

ExprPtr Parser::ParseFilterExpr(ExprPtr node) {
  while (true) {
    if (IsOp("|"))
      node = ParseFilter(std::move(node), false);
    else if (IsName("is"))
      node = ParseTest(std::move(node));
    else if (IsOp("("))
      node = ParseCall(std::move(node));
    else
      return node;
  }
}

ExprPtr Parser::ParseSubscript(ExprPtr node) {
  const Token& t = Next();
  int line = t.line;
  if (t.text == ".") {
    const Token& attr = Next();
    std::vector<ExprPtr> items;
    items.push_back(std::move(node));
    if (attr.type == Tok::kName) {
      ExprPtr e = MakeExpr(ExprKind::kGetAttr, line, std::move(items));
      e->name = attr.text;
      return e;
    }
    if (attr.type != Tok::kInt) Error("expected name or number after '.'");
    ExprPtr index = MakeExpr(ExprKind::kLiteral, line);
    index->value = Value::Int(attr.int_value);
    items.push_back(std::move(index));
    return MakeExpr(ExprKind::kGetItem, line, std::move(items));
  }
  ExprPtr e = ParseSubscribed(std::move(node));
  ExpectOp("]");
  return e;
}

ExprPtr Parser::ParseSubscribed(ExprPtr node) {
  int line = Cur().line;
  std::vector<ExprPtr> parts;  // start, stop, step; a plain index has one part
  bool is_slice = false;
  if (!IsOp(":"))
    parts.push_back(ParseExpression());
  else
    parts.push_back(nullptr);
  for (int k = 0; k < 2 && IsOp(":"); ++k) {
    Next();
    is_slice = true;
    parts.push_back(IsOp("]") || IsOp(",") || IsOp(":") ? nullptr : ParseExpression());
  }
  if (IsOp(",")) Error("tuple subscripts are not supported");
  std::vector<ExprPtr> items;
  items.push_back(std::move(node));
  for (auto& p : parts) items.push_back(std::move(p));
  if (!is_slice) return MakeExpr(ExprKind::kGetItem, line, std::move(items));
  items.resize(4);
  return MakeExpr(ExprKind::kSlice, line, std::move(items));
}

ExprPtr Parser::ParseCall(ExprPtr callee) {
  int line = Cur().line;
  std::vector<ExprPtr> items;
  items.push_back(std::move(callee));
  ExprPtr e = MakeExpr(ExprKind::kCall, line, std::move(items));
  ParseCallArgs(*e);
  UpdateHeight(*e);
  return e;
}

void Parser::ParseCallArgs(Expr& node) {
  ExpectOp("(");
  bool first = true;
  while (!IsOp(")")) {
    if (!first) ExpectOp(",");
    first = false;
    if (IsOp(")")) break;
    if (SkipOp("**")) {
      node.star_kwargs = ParseExpression();
    } else if (SkipOp("*")) {
      node.star_args = ParseExpression();
    } else if (Cur().type == Tok::kName && Peek().type == Tok::kOp && Peek().text == "=") {
      std::string key = Next().text;
      Next();
      node.keywords.emplace_back(std::move(key), ParseExpression());
    } else {
      if (!node.keywords.empty() || node.star_kwargs)
        Error("positional argument follows keyword argument");
      node.items.push_back(ParseExpression());
    }
  }
  ExpectOp(")");
}

ExprPtr Parser::ParseFilter(ExprPtr node, bool start_inline) {
  while (IsOp("|") || start_inline) {
    if (!start_inline || IsOp("|")) Next();
    start_inline = false;
    int line = Cur().line;
    std::string name = ExpectIdentifier();
    while (SkipOp(".")) name += "." + ExpectIdentifier();
    std::vector<ExprPtr> items;
    items.push_back(std::move(node));
    ExprPtr e = MakeExpr(ExprKind::kFilter, line, std::move(items));
    e->name = std::move(name);
    if (IsOp("(")) ParseCallArgs(*e);
    UpdateHeight(*e);
    node = std::move(e);
  }
  return node;
}

ExprPtr Parser::ParseTest(ExprPtr node) {
  int line = Next().line;
  bool negated = SkipName("not");
  std::string name = ExpectIdentifier();
  while (SkipOp(".")) name += "." + ExpectIdentifier();
  std::vector<ExprPtr> items;
  items.push_back(std::move(node));
  ExprPtr e = MakeExpr(ExprKind::kTest, line, std::move(items));
  e->name = std::move(name);
  Tok t = Cur().type;
  if (IsOp("(")) {
    ParseCallArgs(*e);
  } else if ((t == Tok::kName || t == Tok::kString || t == Tok::kInt || t == Tok::kFloat ||
              IsOp("[") || IsOp("{")) &&
             !IsName("else") && !IsName("or") && !IsName("and")) {
    // A single argument without parentheses: `x is divisibleby 3`, `x is sameas none`.
    e->items.push_back(ParsePostfix(ParsePrimary()));
  }
  UpdateHeight(*e);
  if (!negated) return e;
  std::vector<ExprPtr> inner;
  inner.push_back(std::move(e));
  ExprPtr n = MakeExpr(ExprKind::kUnary, line, std::move(inner));
  n->name = "not";
  return n;
}

}  // namespace kiln::jinja
