// Syntax tree of a parsed template. Nodes are plain structs tagged with a kind; the evaluator
// switches on the kind. Every node remembers its source line for error messages.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace kiln::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind {
  kLiteral,  // value
  kName,     // name
  kList,     // items
  kTuple,    // items
  kDict,     // items = key, value, key, value, ...
  kUnary,    // op ("-", "+", "not"), items[0]
  kBinary,   // op, items[0], items[1]: arithmetic, "~", "and", "or"
  kCompare,  // items[0] then (ops[i], items[i + 1]) pairs, chained like Python
  kCond,     // items = then, test, else (else may be null)
  kGetAttr,  // items[0] . name
  kGetItem,  // items[0] [ items[1] ]
  kSlice,    // items[0] [ items[1] : items[2] : items[3] ] (any may be null)
  kCall,     // items[0] ( items[1..] , keywords ) with optional *args / **kwargs
  kFilter,   // name, items[0] (null inside {% filter %}) then arguments
  kTest,     // name, items[0] then arguments
};

struct Expr {
  ExprKind kind;
  int line = 0;
  int height = 1;    // longest path to a leaf: bounds the evaluator's recursion
  std::string name;  // name, attribute, filter/test name or operator
  Value value;       // literal
  std::vector<ExprPtr> items;
  std::vector<std::string> ops;                           // compare operators
  std::vector<std::pair<std::string, ExprPtr>> keywords;  // call / filter / test keywords
  ExprPtr star_args;                                      // *args
  ExprPtr star_kwargs;                                    // **kwargs
};

enum class StmtKind {
  kText,         // text
  kOutput,       // {{ expr }}
  kIf,           // conditions[i] guards bodies[i]; an extra body is the else branch
  kFor,          // targets in expr [if filter], body = bodies[0], else = bodies[1]
  kSet,          // targets (or ns.attr) = expr
  kSetBlock,     // {% set x %}bodies[0]{% endset %}, optional filter
  kMacro,        // name(params) bodies[0]
  kCallBlock,    // {% call(params) expr %}bodies[0]{% endcall %}
  kFilterBlock,  // {% filter f %}bodies[0]{% endfilter %}
  kWith,         // targets = values, bodies[0]
  kScope,        // bodies[0] in a scope of its own ({% generation %})
  kBreak,
  kContinue,
};

struct Param {
  std::string name;
  ExprPtr default_value;  // null when required
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;                 // text, macro name
  ExprPtr expr;                     // output, for iterable, set value, call, filter chain
  ExprPtr filter;                   // for-loop condition or set-block filter
  std::vector<ExprPtr> conditions;  // if / elif
  std::vector<Body> bodies;
  std::vector<std::string> targets;  // assigned names; a tuple target has several
  std::string ns_attr;               // set ns.attr: targets[0] is the namespace
  bool tuple_target = false;
  std::vector<Param> params;    // macro / call-block parameters
  std::vector<ExprPtr> values;  // with-statement values
};

struct Template {
  Body body;
};

}  // namespace kiln::jinja
