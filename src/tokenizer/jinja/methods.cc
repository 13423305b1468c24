#include "tokenizer/jinja/methods.h"

#include <algorithm>
#include <array>
#include <optional>

#include "tokenizer/jinja/args.h"
#include "tokenizer/jinja/text.h"

namespace kiln::jinja {
namespace {

constexpr std::array kStrMethods = {
    "strip",      "lstrip",   "rstrip",   "split",        "rsplit",       "splitlines",
    "startswith", "endswith", "upper",    "lower",        "title",        "capitalize",
    "replace",    "find",     "rfind",    "index",        "rindex",       "count",
    "join",       "format",   "isdigit",  "isalpha",      "isalnum",      "isspace",
    "islower",    "isupper",  "casefold", "removeprefix", "removesuffix", "partition",
    "rpartition", "swapcase"};
constexpr std::array kDictMethods = {"items", "keys", "values", "get"};
constexpr std::array kListMethods = {"index", "count"};
constexpr std::array kUnsafeList = {"append", "clear",  "extend",  "insert",
                                    "pop",    "remove", "reverse", "sort"};
constexpr std::array kUnsafeDict = {"clear", "pop", "popitem", "setdefault", "update"};

template <size_t N>
bool In(const std::array<const char*, N>& names, std::string_view name) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return name == n; });
}

std::optional<std::string> OptString(const Value* v, std::string_view what) {
  if (!v || v->is_none()) return std::nullopt;
  return ToString(*v, what);
}

Value StrList(std::vector<std::string> parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (auto& p : parts) items.push_back(Value::Str(std::move(p)));
  return Value::MakeList(std::move(items));
}

// startswith / endswith: the argument may be a tuple of candidates.
bool Affix(const std::string& s, const Value& arg, bool prefix) {
  std::vector<Value> options = arg.is_tuple() ? arg.list().items : std::vector<Value>{arg};
  for (const Value& o : options) {
    std::string a = ToString(o, prefix ? "startswith arg" : "endswith arg");
    if (a.size() > s.size()) continue;
    if (prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0)
      return true;
  }
  return false;
}

template <typename Pred>
bool AllChars(const std::string& s, Pred pred) {
  std::u32string cps = text::Decode(s);
  return !cps.empty() && std::all_of(cps.begin(), cps.end(), pred);
}

bool CaseIs(const std::string& s, bool lower) {
  bool cased = false;
  for (char32_t c : text::Decode(s)) {
    if (lower ? text::IsUpper(c) : text::IsLower(c)) return false;
    cased |= text::IsCased(c);
  }
  return cased;
}

// str.format with automatic ({}) or numbered ({0}) or named ({name}) fields, and !s / !r.
Value Format(Evaluator& ev, const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if ((c == '{' || c == '}') && i + 1 < fmt.size() && fmt[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '}') Fail("Single '}' encountered in format string");
    if (c != '{') {
      out += c;
      continue;
    }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos) Fail("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    char conversion = 's';
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = bang + 1 < field.size() ? field[bang + 1] : 's';
      field.resize(bang);
    }
    if (field.find(':') != std::string::npos) Fail("format specifications are not supported");
    const Value* v = nullptr;
    if (field.empty() || std::all_of(field.begin(), field.end(), ::isdigit)) {
      size_t index = field.empty() ? auto_index++ : std::stoul(field.substr(0, 9));
      if (index >= args.positional.size())
        Fail("Replacement index " + std::to_string(index) + " out of range");
      v = &args.positional[index];
    } else {
      for (const auto& kv : args.keyword)
        if (kv.first == field) v = &kv.second;
      if (!v) Fail("KeyError: '" + field + "'");
    }
    out += conversion == 'r' ? v->Repr() : v->Str();
    ev.CheckString(out.size());
  }
  return Value::Str(std::move(out));
}

Value Partition(const std::string& s, const std::string& sep, bool from_right) {
  if (sep.empty()) Fail("empty separator");
  size_t at = from_right ? s.rfind(sep) : s.find(sep);
  std::vector<Value> parts;
  if (at == std::string::npos) {
    parts = from_right ? std::vector<Value>{Value::Str(""), Value::Str(""), Value::Str(s)}
                       : std::vector<Value>{Value::Str(s), Value::Str(""), Value::Str("")};
  } else {
    parts = {Value::Str(s.substr(0, at)), Value::Str(sep), Value::Str(s.substr(at + sep.size()))};
  }
  return Value::MakeList(std::move(parts), true);
}

Value StrMethod(Evaluator& ev, const std::string& s, std::string_view name, const CallArgs& args) {
  std::string fn = "str." + std::string(name);
  if (name == "format") return Format(ev, s, args);
  ArgReader r(fn, args);
  Value result;
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    auto chars = OptString(r.Find(0, "chars"), "strip arg");
    result = Value::Str(text::Strip(s, chars, name != "rstrip", name != "lstrip"));
  } else if (name == "split" || name == "rsplit") {
    auto sep = OptString(r.Find(0, "sep"), "separator");
    if (sep && sep->empty()) Fail("empty separator");
    int64_t maxsplit = ToInt(r.Get(1, "maxsplit", Value::Int(-1)), "maxsplit");
    auto parts = text::Split(s, sep, maxsplit, name == "rsplit");
    ev.Work(static_cast<int64_t>(parts.size()));
    result = StrList(std::move(parts));
  } else if (name == "splitlines") {
    result = StrList(text::SplitLines(s, r.Get(0, "keepends", Value::Bool(false)).Truthy()));
  } else if (name == "startswith" || name == "endswith") {
    result = Value::Bool(Affix(s, r.Required(0, "prefix"), name == "startswith"));
  } else if (name == "upper") {
    result = Value::Str(text::Upper(s));
  } else if (name == "lower" || name == "casefold") {
    result = Value::Str(text::Lower(s));
  } else if (name == "title") {
    result = Value::Str(text::Title(s));
  } else if (name == "capitalize") {
    result = Value::Str(text::Capitalize(s));
  } else if (name == "swapcase") {
    std::u32string cps = text::Decode(s);
    for (char32_t& c : cps) c = text::IsUpper(c) ? text::ToLower(c) : text::ToUpper(c);
    result = Value::Str(text::Encode(cps));
  } else if (name == "replace") {
    std::string old = ToString(r.Required(0, "old"), "replace() old");
    std::string repl = ToString(r.Required(1, "new"), "replace() new");
    int64_t count = ToInt(r.Get(2, "count", Value::Int(-1)), "count");
    result = ev.MakeString(text::Replace(s, old, repl, count));
  } else if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    int64_t at = text::Find(s, ToString(r.Required(0, "sub"), "sub"), name[0] == 'r');
    if (at < 0 && name.find("index") != std::string_view::npos) Fail("substring not found");
    result = Value::Int(at);
  } else if (name == "count") {
    result = Value::Int(text::Count(s, ToString(r.Required(0, "sub"), "sub")));
  } else if (name == "join") {
    std::string out;
    std::vector<Value> items = Iterate(r.Required(0, "iterable"));
    ev.Work(static_cast<int64_t>(items.size()));
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += s;
      out += ToString(items[i], "sequence item");
      ev.CheckString(out.size());
    }
    result = Value::Str(std::move(out));
  } else if (name == "removeprefix" || name == "removesuffix") {
    std::string a = ToString(r.Required(0, "affix"), fn + "() arg");
    bool prefix = name == "removeprefix";
    bool has = a.size() <= s.size() && (prefix ? s.compare(0, a.size(), a) == 0
                                               : s.compare(s.size() - a.size(), a.size(), a) == 0);
    result = Value::Str(!has ? s : prefix ? s.substr(a.size()) : s.substr(0, s.size() - a.size()));
  } else if (name == "partition" || name == "rpartition") {
    result = Partition(s, ToString(r.Required(0, "sep"), "sep"), name == "rpartition");
  } else if (name == "isdigit") {
    result = Value::Bool(AllChars(s, text::IsDigit));
  } else if (name == "isalpha") {
    result = Value::Bool(AllChars(s, text::IsAlpha));
  } else if (name == "isalnum") {
    result = Value::Bool(AllChars(s, text::IsAlnum));
  } else if (name == "isspace") {
    result = Value::Bool(AllChars(s, text::IsSpace));
  } else if (name == "islower" || name == "isupper") {
    result = Value::Bool(CaseIs(s, name == "islower"));
  }
  r.Finish();
  return result;
}

Value DictMethod(const Value& d, std::string_view name, const CallArgs& args) {
  ArgReader r("dict." + std::string(name), args);
  Value result;
  if (name == "get") {
    Value key = r.Required(0, "key");
    Value fallback = r.Get(1, "default", Value::None());
    const Value* found = key.is_string() ? d.dict().Find(key.as_string()) : nullptr;
    result = found ? *found : fallback;
  } else {
    std::vector<Value> items;
    for (const auto& [key, value] : d.dict().items) {
      if (name == "keys")
        items.push_back(Value::Str(key));
      else if (name == "values")
        items.push_back(value);
      else
        items.push_back(Value::MakeList({Value::Str(key), value}, true));
    }
    result = Value::MakeList(std::move(items));
  }
  r.Finish();
  return result;
}

Value ListMethod(const Value& l, std::string_view name, const CallArgs& args) {
  ArgReader r("list." + std::string(name), args);
  Value x = r.Required(0, "value");
  r.Finish();
  const auto& items = l.list().items;
  if (name == "count")
    return Value::Int(
        std::count_if(items.begin(), items.end(), [&](const Value& v) { return Equals(v, x); }));
  for (size_t i = 0; i < items.size(); ++i) {
    if (Equals(items[i], x)) return Value::Int(static_cast<int64_t>(i));
  }
  Fail(x.Repr() + " is not in list");
}

}  // namespace

bool HasMethod(const Value& obj, std::string_view name) {
  if (obj.is_string()) return In(kStrMethods, name);
  if (obj.is_dict()) return In(kDictMethods, name);
  if (obj.is_list()) return In(kListMethods, name);
  return false;
}

bool IsUnsafeMethod(const Value& obj, std::string_view name) {
  if (obj.is_dict()) return In(kUnsafeDict, name);
  if (obj.is_list() && !obj.is_tuple()) return In(kUnsafeList, name);
  return false;
}

Value CallMethod(Evaluator& ev, const Value& obj, std::string_view name, CallArgs args) {
  ev.Work(1 + static_cast<int64_t>(obj.is_string() ? obj.as_string().size() / 64 : 0));
  if (obj.is_string()) return StrMethod(ev, obj.as_string(), name, args);
  if (obj.is_dict()) return DictMethod(obj, name, args);
  return ListMethod(obj, name, args);
}

}  // namespace kiln::jinja
