// PCRE2 (JIT) regexes with the semantics the HF tokenizers library gets from Oniguruma: Unicode
// classes (\p{L}, \s, \w as Unicode sets), leftmost-first matches scanned left to right.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::hf {

// One match: byte offsets [start, end) into the searched text.
struct Match {
  size_t start;
  size_t end;
};

class Regex {
 public:
  // Throws kiln::Error naming `what` and the PCRE2 message when the pattern does not compile.
  Regex(std::string_view pattern, std::string_view what);
  // A regex matching `literal` exactly.
  static Regex Literal(std::string_view literal, std::string_view what);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // All non-overlapping matches in `text` (valid UTF-8). An empty match advances one character.
  // Thread-safe. Throws kiln::Error when PCRE2 gives up (match or depth limit).
  void FindAll(std::string_view text, std::vector<Match>* out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string pattern_;
};

// Rewrites Oniguruma-only syntax into PCRE2's: \w and \W become Oniguruma's Unicode word set
// (letters, marks, numbers, connector punctuation), \h becomes hex digits as in Ruby.
std::string OnigToPcre2(std::string_view pattern);

}  // namespace kiln::hf
