// Binds call arguments to a Python-style signature: Get(i, "name") takes the i-th positional
// argument or the keyword `name`; Finish() rejects arguments no parameter took.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/value.h"

namespace kiln::jinja {

class ArgReader {
 public:
  ArgReader(std::string_view function, const CallArgs& args)
      : function_(function), args_(args), used_(args.keyword.size(), false) {}

  const Value* Find(size_t pos, std::string_view name) {
    max_pos_ = std::max(max_pos_, pos + 1);
    const Value* found = pos < args_.positional.size() ? &args_.positional[pos] : nullptr;
    for (size_t k = 0; k < args_.keyword.size(); ++k) {
      if (args_.keyword[k].first != name) continue;
      if (found && !used_[k]) {
        Fail(function_ + "() got multiple values for argument '" + std::string(name) + "'");
      }
      used_[k] = true;
      found = &args_.keyword[k].second;
    }
    return found;
  }

  Value Get(size_t pos, std::string_view name, Value fallback) {
    const Value* v = Find(pos, name);
    return v ? *v : fallback;
  }

  Value Required(size_t pos, std::string_view name) {
    const Value* v = Find(pos, name);
    if (!v) Fail(function_ + "() missing required argument '" + std::string(name) + "'");
    return *v;
  }

  void Finish() const {
    if (args_.positional.size() > max_pos_) {
      Fail(function_ + "() takes at most " + std::to_string(max_pos_) + " positional arguments (" +
           std::to_string(args_.positional.size()) + " given)");
    }
    for (size_t k = 0; k < used_.size(); ++k) {
      if (!used_[k])
        Fail(function_ + "() got an unexpected keyword argument '" + args_.keyword[k].first + "'");
    }
  }

 private:
  std::string function_;
  const CallArgs& args_;
  std::vector<bool> used_;
  size_t max_pos_ = 0;
};

// Checked conversions for arguments.
inline int64_t ToInt(const Value& v, std::string_view what) {
  if (!v.is_integral()) Fail(std::string(what) + " must be an integer, not " + v.TypeName());
  return v.as_int();
}

inline std::string ToString(const Value& v, std::string_view what) {
  if (!v.is_string()) Fail(std::string(what) + " must be a string, not " + v.TypeName());
  return v.as_string();
}

}  // namespace kiln::jinja
