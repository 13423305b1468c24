// Sequence filters: length, first, last, join, map, select*, reject*, sort, unique, ...
#include <algorithm>

#include "tokenizer/jinja/args.h"
#include "tokenizer/jinja/filters.h"
#include "tokenizer/jinja/methods.h"
#include "tokenizer/jinja/text.h"

namespace kiln::jinja {
namespace {

std::vector<Value> Items(Evaluator& ev, const Value& v) {
  std::vector<Value> items = Iterate(v);
  ev.Work(static_cast<int64_t>(items.size()));
  return items;
}

Value LengthFilter(Evaluator&, const Value& v, const CallArgs& args) {
  ArgReader("length", args).Finish();
  return Value::Int(Length(v));
}

Value First(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader("first", args).Finish();
  if (v.is_list())
    return v.list().items.empty() ? Value::Undefined("No first item, sequence was empty.")
                                  : v.list().items.front();
  std::vector<Value> items = Items(ev, v);
  return items.empty() ? Value::Undefined("No first item, sequence was empty.") : items.front();
}

Value Last(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader("last", args).Finish();
  if (v.is_list())
    return v.list().items.empty() ? Value::Undefined("No last item, sequence was empty.")
                                  : v.list().items.back();
  std::vector<Value> items = Items(ev, v);
  return items.empty() ? Value::Undefined("No last item, sequence was empty.") : items.back();
}

Value ListFilter(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader("list", args).Finish();
  if (v.is_list() && !v.is_tuple()) return v;
  return Value::MakeList(Items(ev, v));
}

Value Join(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader r("join", args);
  std::string sep = r.Get(0, "d", Value::Str("")).Str();
  const Value* attribute = r.Find(1, "attribute");
  r.Finish();
  std::string out;
  bool first = true;
  for (const Value& item : Items(ev, v)) {
    if (!first) out += sep;
    first = false;
    out += (attribute ? GetAttributePath(ev, item, *attribute) : item).Str();
    ev.CheckString(out.size());
  }
  return Value::Str(std::move(out));
}

Value Default(Evaluator&, const Value& v, const CallArgs& args) {
  ArgReader r("default", args);
  Value fallback = r.Get(0, "default_value", Value::Str(""));
  bool boolean = r.Get(1, "boolean", Value::Bool(false)).Truthy();
  r.Finish();
  return v.is_undefined() || (boolean && !v.Truthy()) ? fallback : v;
}

Value Map(Evaluator& ev, const Value& v, const CallArgs& args) {
  std::vector<Value> out;
  bool by_attribute = args.positional.empty();
  CallArgs rest;
  Value attribute, fallback;
  if (by_attribute) {
    ArgReader r("map", args);
    attribute = r.Required(99, "attribute");
    fallback = r.Get(99, "default", Value());
    r.Finish();
  } else {
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keyword = args.keyword;
  }
  if (!v.Truthy()) return Value::MakeList({});
  for (const Value& item : Items(ev, v)) {
    if (!by_attribute) {
      out.push_back(ev.ApplyFilter(ToString(args.positional[0], "map filter name"), item, rest));
      continue;
    }
    Value x = GetAttributePath(ev, item, attribute);
    out.push_back(x.is_undefined() && !fallback.is_undefined() ? fallback : x);
  }
  return Value::MakeList(std::move(out));
}

// select / reject / selectattr / rejectattr share jinja2's select_or_reject.
template <bool kAttr, bool kSelect>
Value SelectOrReject(Evaluator& ev, const Value& v, const CallArgs& args) {
  size_t off = kAttr ? 1 : 0;
  if (kAttr && args.positional.empty()) Fail("Missing parameter for attribute name");
  if (!v.Truthy()) return Value::MakeList({});
  bool has_test = args.positional.size() > off;
  CallArgs test_args;
  if (has_test) {
    test_args.positional.assign(args.positional.begin() + off + 1, args.positional.end());
    test_args.keyword = args.keyword;
  }
  std::vector<Value> out;
  for (const Value& item : Items(ev, v)) {
    Value x = kAttr ? GetAttributePath(ev, item, args.positional[0]) : item;
    bool pass = has_test ? ev.ApplyTest(ToString(args.positional[off], "test name"), x, test_args)
                         : x.Truthy();
    if (pass == kSelect) out.push_back(item);
  }
  return Value::MakeList(std::move(out));
}

Value ItemsFilter(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader("items", args).Finish();
  if (v.is_undefined()) return Value::MakeList({});
  if (!v.is_dict()) Fail("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [key, value] : v.dict().items)
    out.push_back(Value::MakeList({Value::Str(key), value}, true));
  ev.Work(static_cast<int64_t>(out.size()));
  return Value::MakeList(std::move(out));
}

void StableSort(std::vector<Value>& items, std::vector<Value>& keys, bool reverse) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return reverse ? Less(keys[b], keys[a]) : Less(keys[a], keys[b]);
  });
  std::vector<Value> sorted;
  for (size_t i : order) sorted.push_back(items[i]);
  items = std::move(sorted);
}

Value DictSort(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader r("dictsort", args);
  bool case_sensitive = r.Get(0, "case_sensitive", Value::Bool(false)).Truthy();
  std::string by = r.Get(1, "by", Value::Str("key")).Str();
  bool reverse = r.Get(2, "reverse", Value::Bool(false)).Truthy();
  r.Finish();
  if (by != "key" && by != "value") Fail("You can only sort by either 'key' or 'value'");
  if (!v.is_dict()) Fail("dictsort expects a mapping");
  std::vector<Value> items, keys;
  for (const auto& [key, value] : v.dict().items) {
    items.push_back(Value::MakeList({Value::Str(key), value}, true));
    keys.push_back(CaseKey(by == "key" ? Value::Str(key) : value, case_sensitive));
  }
  ev.Work(static_cast<int64_t>(items.size()));
  StableSort(items, keys, reverse);
  return Value::MakeList(std::move(items));
}

// Keys for sort/unique/min/max: the attribute (comma-separated list for sort) and case folding.
Value KeyOf(Evaluator& ev, const Value& item, const Value* attribute, bool case_sensitive) {
  if (!attribute || attribute->is_none()) return CaseKey(item, case_sensitive);
  if (attribute->is_string() && attribute->as_string().find(',') != std::string::npos) {
    std::vector<Value> parts;
    for (const std::string& a : text::Split(attribute->as_string(), ",", -1, false)) {
      parts.push_back(
          CaseKey(GetAttributePath(ev, item, Value::Str(text::Strip(a, std::nullopt, true, true))),
                  case_sensitive));
    }
    return Value::MakeList(std::move(parts), true);
  }
  return CaseKey(GetAttributePath(ev, item, *attribute), case_sensitive);
}

Value Sort(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader r("sort", args);
  bool reverse = r.Get(0, "reverse", Value::Bool(false)).Truthy();
  bool case_sensitive = r.Get(1, "case_sensitive", Value::Bool(false)).Truthy();
  const Value* attribute = r.Find(2, "attribute");
  r.Finish();
  std::vector<Value> items = Items(ev, v), keys;
  for (const Value& item : items) keys.push_back(KeyOf(ev, item, attribute, case_sensitive));
  StableSort(items, keys, reverse);
  return Value::MakeList(std::move(items));
}

Value Unique(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader r("unique", args);
  bool case_sensitive = r.Get(0, "case_sensitive", Value::Bool(false)).Truthy();
  const Value* attribute = r.Find(1, "attribute");
  r.Finish();
  std::vector<Value> out, seen;
  for (const Value& item : Items(ev, v)) {
    Value key = KeyOf(ev, item, attribute, case_sensitive);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return Equals(s, key); }))
      continue;
    ev.Work(static_cast<int64_t>(seen.size()));
    seen.push_back(std::move(key));
    out.push_back(item);
  }
  return Value::MakeList(std::move(out));
}

template <bool kMax>
Value MinMax(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader r(kMax ? "max" : "min", args);
  bool case_sensitive = r.Get(0, "case_sensitive", Value::Bool(false)).Truthy();
  const Value* attribute = r.Find(1, "attribute");
  r.Finish();
  std::vector<Value> items = Items(ev, v);
  if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = KeyOf(ev, items[0], attribute, case_sensitive);
  for (size_t i = 1; i < items.size(); ++i) {
    Value key = KeyOf(ev, items[i], attribute, case_sensitive);
    if (kMax ? Less(best_key, key) : Less(key, best_key)) best = i, best_key = key;
  }
  return items[best];
}

Value Sum(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader r("sum", args);
  const Value* attribute = r.Find(0, "attribute");
  Value total = r.Get(1, "start", Value::Int(0));
  r.Finish();
  for (const Value& item : Items(ev, v)) {
    total = BinaryOp(
        ev, "+", total,
        attribute && !attribute->is_none() ? GetAttributePath(ev, item, *attribute) : item);
  }
  return total;
}

Value Batch(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader r("batch", args);
  int64_t size = ToInt(r.Required(0, "linecount"), "batch linecount");
  const Value* fill = r.Find(1, "fill_with");
  r.Finish();
  if (size <= 0) Fail("batch linecount must be positive");
  std::vector<Value> out, row;
  for (const Value& item : Items(ev, v)) {
    row.push_back(item);
    if (static_cast<int64_t>(row.size()) == size)
      out.push_back(Value::MakeList(std::move(row))), row.clear();
  }
  if (!row.empty()) {
    if (fill && !fill->is_none())
      while (static_cast<int64_t>(row.size()) < size) row.push_back(*fill);
    out.push_back(Value::MakeList(std::move(row)));
  }
  return Value::MakeList(std::move(out));
}

Value Reverse(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader("reverse", args).Finish();
  if (v.is_string()) {
    std::u32string cps = text::Decode(v.as_string());
    std::reverse(cps.begin(), cps.end());
    return Value::Str(text::Encode(cps));
  }
  std::vector<Value> items = Items(ev, v);
  std::reverse(items.begin(), items.end());
  return Value::MakeList(std::move(items));
}

Value Attr(Evaluator& ev, const Value& v, const CallArgs& args) {
  ArgReader r("attr", args);
  std::string name = ToString(r.Required(0, "name"), "attr name");
  r.Finish();
  // jinja2's attr filter reads attributes only: a dict's keys are not attributes.
  if (v.is_dict() && !HasMethod(v, name))
    return Value::Undefined("'dict object' has no attribute '" + name + "'");
  return ev.GetAttr(v, name);
}

}  // namespace

const FilterTable& SequenceFilters() {
  static const FilterTable table = {
      {"length", LengthFilter},
      {"count", LengthFilter},
      {"first", First},
      {"last", Last},
      {"list", ListFilter},
      {"join", Join},
      {"default", Default},
      {"d", Default},
      {"map", Map},
      {"select", SelectOrReject<false, true>},
      {"reject", SelectOrReject<false, false>},
      {"selectattr", SelectOrReject<true, true>},
      {"rejectattr", SelectOrReject<true, false>},
      {"items", ItemsFilter},
      {"dictsort", DictSort},
      {"sort", Sort},
      {"unique", Unique},
      {"min", MinMax<false>},
      {"max", MinMax<true>},
      {"sum", Sum},
      {"batch", Batch},
      {"reverse", Reverse},
      {"attr", Attr},
  };
  return table;
}

}  // namespace kiln::jinja
