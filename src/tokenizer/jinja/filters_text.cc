// String filters: trim, case, replace, indent, escape, format, tojson, ...
#include <optional>

#include "tokenizer/jinja/args.h"
#include "tokenizer/jinja/filters.h"
#include "tokenizer/jinja/pyformat.h"
#include "tokenizer/jinja/text.h"

namespace kiln::jinja {
namespace {

Value Trim(Evaluator&, const Value& v, const CallArgs& args) {
  ArgReader r("trim", args);
  const Value* chars = r.Find(0, "chars");
  r.Finish();
  std::optional<std::string> set;
  if (chars && !chars->is_none()) set = ToString(*chars, "trim chars");
  return Value::Str(text::Strip(v.Str(), set, true, true));
}

template <std::string (*Fn)(std::string_view)>
Value CaseFilter(Evaluator&, const Value& v, const CallArgs& args) {
  ArgReader("case filter", args).Finish();
  return Value::Str(Fn(v.Str()));
}

Value Replace(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader r("replace", args);
  std::string old = r.Required(0, "old").Str();
  std::string repl = r.Required(1, "new").Str();
  Value count = r.Get(2, "count", Value::None());
  r.Finish();
  int64_t n = count.is_none() ? -1 : ToInt(count, "replace count");
  return ev.MakeString(text::Replace(v.Str(), old, repl, n));
}

// jinja2's do_indent, including its habit of treating the text as ending with a newline.
Value Indent(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader r("indent", args);
  Value width = r.Get(0, "width", Value::Int(4));
  bool first = r.Get(1, "first", Value::Bool(false)).Truthy();
  bool blank = r.Get(2, "blank", Value::Bool(false)).Truthy();
  r.Finish();
  std::string pad =
      width.is_string()
          ? width.as_string()
          : std::string(static_cast<size_t>(std::max<int64_t>(
                            0, std::min<int64_t>(ToInt(width, "indent width"), 1 << 16))),
                        ' ');
  std::vector<std::string> lines = text::SplitLines(v.Str() + "\n", false);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    if (i > 0 && (blank || !lines[i].empty())) out += pad;
    out += lines[i];
    ev.CheckString(out.size());
  }
  if (first) out = pad + out;
  return ev.MakeString(std::move(out));
}

Value Center(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader r("center", args);
  int64_t width = ToInt(r.Get(0, "width", Value::Int(80)), "center width");
  r.Finish();
  std::string s = v.Str();
  int64_t len = static_cast<int64_t>(text::Length(s));
  if (width <= len) return Value::Str(s);
  ev.CheckString(static_cast<size_t>(width));
  int64_t pad = width - len;
  int64_t left = pad / 2 + (pad & width & 1);
  return Value::Str(std::string(left, ' ') + s + std::string(pad - left, ' '));
}

Value WordCount(Evaluator&, const Value& v, const CallArgs& args) {
  ArgReader("wordcount", args).Finish();
  int64_t words = 0;
  bool in_word = false;
  for (char32_t c : text::Decode(v.Str())) {
    bool word_char = text::IsAlnum(c) || c == '_';
    words += word_char && !in_word;
    in_word = word_char;
  }
  return Value::Int(words);
}

Value String(Evaluator&, const Value& v, const CallArgs& args) {
  ArgReader("string", args).Finish();
  return v.is_string() ? v : Value::Str(v.Str());
}

Value Escape(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader("escape", args).Finish();
  std::string out;
  for (char c : v.Str()) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return ev.MakeString(std::move(out));
}

Value Format(Evaluator& ev, const Value& v, const CallArgs& args) {
  if (!args.keyword.empty()) Fail("format filter: keyword arguments are not supported");
  return BinaryOp(ev, "%", Value::Str(v.Str()), Value::MakeList(args.positional, true));
}

Value ToJsonFilter(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader r("tojson", args);
  JsonOptions o;
  o.ensure_ascii = r.Get(0, "ensure_ascii", Value::Bool(false)).Truthy();
  Value indent = r.Get(1, "indent", Value::None());
  Value separators = r.Get(2, "separators", Value::None());
  o.sort_keys = r.Get(3, "sort_keys", Value::Bool(false)).Truthy();
  r.Finish();
  if (indent.is_string()) {
    o.indent = indent.as_string();
  } else if (!indent.is_none()) {
    int64_t n = ToInt(indent, "tojson indent");
    o.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(n, 0, 64)), ' ');
  }
  if (!separators.is_none()) {
    if (!separators.is_list() || separators.list().items.size() != 2)
      Fail("tojson separators must be a pair");
    o.item_separator = ToString(separators.list().items[0], "item separator");
    o.key_separator = ToString(separators.list().items[1], "key separator");
  }
  ev.Work(1);
  return ev.MakeString(ToJson(v, o));
}

Value Safe(Evaluator&, const Value& v, const CallArgs& args) {
  ArgReader("safe", args).Finish();
  return v.is_string() ? v : Value::Str(v.Str());
}

}  // namespace

const FilterTable& TextFilters() {
  static const FilterTable table = {
      {"trim", Trim},
      {"upper", CaseFilter<text::Upper>},
      {"lower", CaseFilter<text::Lower>},
      {"title", CaseFilter<text::JinjaTitle>},
      {"capitalize", CaseFilter<text::Capitalize>},
      {"replace", Replace},
      {"indent", Indent},
      {"center", Center},
      {"wordcount", WordCount},
      {"string", String},
      {"safe", Safe},
      {"e", Escape},
      {"escape", Escape},
      {"forceescape", Escape},
      {"format", Format},
      {"tojson", ToJsonFilter},
  };
  return table;
}

}  // namespace kiln::jinja
