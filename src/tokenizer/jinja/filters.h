// Filters (`x | name(args)`) and tests (`x is name(args)`) by name, with jinja2's semantics
// and transformers' tojson (ensure_ascii=False, indent, separators, sort_keys).
#pragma once

#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/value.h"

namespace kiln::jinja {

using FilterFn = Value (*)(Evaluator& ev, const Value& input, const CallArgs& args);
using TestFn = bool (*)(Evaluator& ev, const Value& input, const CallArgs& args);
using FilterTable = std::vector<std::pair<std::string_view, FilterFn>>;

FilterFn FindFilter(std::string_view name);  // nullptr when unknown
TestFn FindTest(std::string_view name);      // nullptr when unknown

// The filter groups (filters_text.cc, filters_seq.cc, filters_num.cc).
const FilterTable& TextFilters();
const FilterTable& SequenceFilters();
const FilterTable& NumberFilters();

// jinja2's make_attrgetter: "a.b.0" looked up item by item (dict key first, then attribute).
Value GetAttributePath(Evaluator& ev, const Value& item, const Value& attribute);
// Sort / unique key: strings lowercased unless case_sensitive.
Value CaseKey(const Value& v, bool case_sensitive);

}  // namespace kiln::jinja
