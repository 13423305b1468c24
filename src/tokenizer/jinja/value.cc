#include "tokenizer/jinja/value.h"

#include <algorithm>
#include <cmath>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/pyformat.h"
#include "tokenizer/jinja/text.h"

namespace kiln::jinja {
namespace {

const std::string kNoHint;

int ChildDepth(const Value& v) { return v.depth(); }

void CheckDepth(int depth) {
  if (depth > kMaxValueDepth)
    Fail("value nested more than " + std::to_string(kMaxValueDepth) + " levels deep");
}

}  // namespace

Value Value::Undefined(std::string hint) {
  UndefinedTag tag;
  if (!hint.empty()) tag.hint = std::make_shared<const std::string>(std::move(hint));
  return Value(std::move(tag));
}

Value Value::MakeList(std::vector<Value> items, bool tuple) {
  auto list = std::make_shared<List>();
  for (const Value& v : items) list->depth = std::max(list->depth, ChildDepth(v) + 1);
  CheckDepth(list->depth);
  list->items = std::move(items);
  list->tuple = tuple;
  return Value(ListPtr(std::move(list)));
}

Value Value::MakeDict(std::vector<std::pair<std::string, Value>> items) {
  auto dict = std::make_shared<Dict>();
  dict->items.reserve(items.size());
  for (auto& item : items) {
    dict->depth = std::max(dict->depth, ChildDepth(item.second) + 1);
    const std::string& key = item.first;
    auto same = std::find_if(dict->items.begin(), dict->items.end(),
                             [&](const auto& kv) { return kv.first == key; });
    if (same != dict->items.end()) {
      same->second = std::move(item.second);  // a repeated key keeps its first position
    } else {
      dict->items.push_back(std::move(item));
    }
  }
  CheckDepth(dict->depth);
  return Value(DictPtr(std::move(dict)));
}

bool Value::is_tuple() const { return is_list() && list().tuple; }

const std::string& Value::undefined_hint() const {
  const auto& tag = std::get<UndefinedTag>(v_);
  return tag.hint ? *tag.hint : kNoHint;
}

int Value::depth() const {
  switch (kind()) {
    case Kind::kList:
      return list().depth;
    case Kind::kDict:
      return dict().depth;
    case Kind::kObject:
      return 1;
    default:
      return 0;
  }
}

bool Value::Truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int() != 0;
    case Kind::kFloat:
      return as_float() != 0.0;
    case Kind::kString:
      return !as_string().empty();
    case Kind::kList:
      return !list().items.empty();
    case Kind::kDict:
      return !dict().items.empty();
    case Kind::kObject:
      return true;
  }
  return false;
}

std::string Value::TypeName() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return is_tuple() ? "tuple" : "list";
    case Kind::kDict:
      return "dict";
    case Kind::kObject:
      return object().TypeName();
  }
  return "?";
}

std::string Value::Str() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "";
    case Kind::kString:
      return as_string();
    case Kind::kObject:
      return object().Str();
    default:
      return Repr();
  }
}

namespace {

void AppendRepr(std::string& out, const Value& v, int depth);

void AppendItemsRepr(std::string& out, const std::vector<Value>& items, int depth) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    AppendRepr(out, items[i], depth + 1);
  }
}

void AppendRepr(std::string& out, const Value& v, int depth) {
  if (depth > kMaxValueDepth) Fail("value nested too deeply to print");
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return;
    case Value::Kind::kNone:
      out += "None";
      return;
    case Value::Kind::kBool:
      out += v.as_bool() ? "True" : "False";
      return;
    case Value::Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::kFloat:
      out += FloatRepr(v.as_float());
      return;
    case Value::Kind::kString:
      out += StrRepr(v.as_string());
      return;
    case Value::Kind::kList:
      out += v.is_tuple() ? '(' : '[';
      AppendItemsRepr(out, v.list().items, depth);
      if (v.is_tuple() && v.list().items.size() == 1) out += ',';
      out += v.is_tuple() ? ')' : ']';
      return;
    case Value::Kind::kDict: {
      out += '{';
      bool first = true;
      for (const auto& [key, value] : v.dict().items) {
        if (!first) out += ", ";
        first = false;
        out += StrRepr(key) + ": ";
        AppendRepr(out, value, depth + 1);
      }
      out += '}';
      return;
    }
    case Value::Kind::kObject:
      out += v.object().Str(depth + 1);
      return;
  }
}

}  // namespace

std::string Value::Repr() const {
  std::string out;
  AppendRepr(out, *this, 0);
  return out;
}

const Value* Dict::Find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

Value Object::GetAttr(std::string_view) const { return Value::Undefined(); }

Value Object::Call(Evaluator&, CallArgs) { Fail("'" + TypeName() + "' object is not callable"); }

bool Equals(const Value& a, const Value& b, int depth) {
  if (depth > kMaxValueDepth) Fail("values nested too deeply to compare");
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::kUndefined:
    case K::kNone:
      return true;
    case K::kString:
      return a.as_string() == b.as_string();
    case K::kList: {
      const auto& x = a.list().items;
      const auto& y = b.list().items;
      if (a.is_tuple() != b.is_tuple() || x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!Equals(x[i], y[i], depth + 1)) return false;
      }
      return true;
    }
    case K::kDict: {
      const auto& x = a.dict();
      const auto& y = b.dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [key, value] : x.items) {
        const Value* other = y.Find(key);
        if (!other || !Equals(value, *other, depth + 1)) return false;
      }
      return true;
    }
    case K::kObject:
      return &a.object() == &b.object();
    default:
      return false;
  }
}

bool Less(const Value& a, const Value& b, int depth) {
  if (depth > kMaxValueDepth) Fail("values nested too deeply to compare");
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_float() < b.as_float();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string())
    return a.as_string() < b.as_string();  // UTF-8 = code point order
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!Equals(x[i], y[i], depth + 1)) return Less(x[i], y[i], depth + 1);
    }
    return x.size() < y.size();
  }
  Fail("'<' not supported between instances of '" + a.TypeName() + "' and '" + b.TypeName() + "'");
}

bool Contains(const Value& haystack, const Value& needle) {
  switch (haystack.kind()) {
    case Value::Kind::kString:
      if (!needle.is_string()) {
        Fail("'in <string>' requires string as left operand, not " + needle.TypeName());
      }
      return haystack.as_string().find(needle.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : haystack.list().items) {
        if (Equals(v, needle)) return true;
      }
      return false;
    case Value::Kind::kDict:
      return needle.is_string() && haystack.dict().Find(needle.as_string()) != nullptr;
    case Value::Kind::kUndefined:
      return false;
    default:
      Fail("argument of type '" + haystack.TypeName() + "' is not iterable");
  }
}

std::vector<Value> Iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kList:
      return v.list().items;
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      keys.reserve(v.dict().items.size());
      for (const auto& kv : v.dict().items) keys.push_back(Value::Str(kv.first));
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      for (char32_t c : text::Decode(v.as_string())) {
        std::string s;
        text::AppendUtf8(s, c);
        chars.push_back(Value::Str(std::move(s)));
      }
      return chars;
    }
    default:
      Fail("'" + v.TypeName() + "' object is not iterable");
  }
}

int64_t Length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return 0;
    case Value::Kind::kString:
      return static_cast<int64_t>(text::Length(v.as_string()));
    case Value::Kind::kList:
      return static_cast<int64_t>(v.list().items.size());
    case Value::Kind::kDict:
      return static_cast<int64_t>(v.dict().items.size());
    default:
      Fail("object of type '" + v.TypeName() + "' has no len()");
  }
}

}  // namespace kiln::jinja
