// Compiled grammars kept by their content (kind + text, e.g. "json:" + schema dump): the same
// schema sent again, by any client, reuses its DFA and every token mask computed so far. Bounded
// by entry count, least recently used out first; thread-safe (the server's I/O threads share it).
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "grammar/compiled_grammar.h"

namespace kiln::grammar {

class GrammarCache {
 public:
  using Compile = std::function<std::shared_ptr<CompiledGrammar>()>;

  explicit GrammarCache(size_t capacity) : capacity_(capacity) {}

  // The grammar for `key`, compiled by `compile` when it is not here (outside the lock: a slow
  // compile does not hold up other requests; two racing compiles of one key keep the first).
  // Errors from `compile` propagate and nothing is stored.
  std::shared_ptr<CompiledGrammar> Get(const std::string& key, const Compile& compile);

  size_t size() const;
  int64_t hits() const;
  int64_t misses() const;

 private:
  using Lru = std::list<std::pair<std::string, std::shared_ptr<CompiledGrammar>>>;
  mutable std::mutex mu_;
  size_t capacity_;
  Lru lru_;  // most recent first
  std::unordered_map<std::string, Lru::iterator> index_;
  int64_t hits_ = 0, misses_ = 0;
};

}  // namespace kiln::grammar
