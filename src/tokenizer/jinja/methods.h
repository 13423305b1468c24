// Python methods of str, dict and list that templates call: 'x'.strip(), d.items(), ...
// Mutating methods (list.append, dict.update, ...) are refused, as in transformers'
// ImmutableSandboxedEnvironment.
#pragma once

#include <string_view>

#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/value.h"

namespace kiln::jinja {

bool HasMethod(const Value& obj, std::string_view name);
bool IsUnsafeMethod(const Value& obj, std::string_view name);
Value CallMethod(Evaluator& ev, const Value& obj, std::string_view name, CallArgs args);

}  // namespace kiln::jinja
