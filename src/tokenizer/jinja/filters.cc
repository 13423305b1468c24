#include "tokenizer/jinja/filters.h"

#include <unordered_map>

#include "tokenizer/jinja/text.h"

namespace kiln::jinja {

FilterFn FindFilter(std::string_view name) {
  static const std::unordered_map<std::string_view, FilterFn> table = [] {
    std::unordered_map<std::string_view, FilterFn> t;
    for (const FilterTable* group : {&TextFilters(), &SequenceFilters(), &NumberFilters()}) {
      for (const auto& [n, fn] : *group) t.emplace(n, fn);
    }
    return t;
  }();
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

Value GetAttributePath(Evaluator& ev, const Value& item, const Value& attribute) {
  if (!attribute.is_string()) return ev.GetItem(item, attribute);
  Value v = item;
  std::string_view path = attribute.as_string();
  while (true) {
    size_t dot = path.find('.');
    std::string_view part = path.substr(0, dot);
    bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string_view::npos &&
                  part.size() < 18;
    v = ev.GetItem(
        v, digits ? Value::Int(std::stoll(std::string(part))) : Value::Str(std::string(part)));
    if (dot == std::string_view::npos) return v;
    path.remove_prefix(dot + 1);
  }
}

Value CaseKey(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::Str(text::Lower(v.as_string()));
  return v;
}

}  // namespace kiln::jinja
