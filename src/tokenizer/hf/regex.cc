#include "tokenizer/hf/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "util/error.h"

namespace kiln::hf {
namespace {

// Bounds on backtracking, so that a hostile pattern fails with an error instead of hanging.
constexpr uint32_t kMatchLimit = 10'000'000;
constexpr uint32_t kDepthLimit = 100'000;

std::string Pcre2Message(int code) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(code, buf, sizeof(buf)) < 0) return "unknown PCRE2 error";
  return reinterpret_cast<const char*>(buf);
}

// Per-thread match state: one ovector pair is all FindAll reads, so it fits every pattern.
struct ThreadState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
  ThreadState() {
    pcre2_set_match_limit(context, kMatchLimit);
    pcre2_set_depth_limit(context, kDepthLimit);
    pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~ThreadState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

ThreadState& State() {
  thread_local ThreadState state;
  return state;
}

size_t NextCharEnd(std::string_view text, size_t pos) {
  ++pos;
  while (pos < text.size() && (static_cast<uint8_t>(text[pos]) & 0xC0) == 0x80) ++pos;
  return pos;
}

// Oniguruma's Unicode \w: letters, marks, numbers, connector punctuation and the join controls
// (ZWNJ, ZWJ).
constexpr std::string_view kWordSet = "\\p{L}\\p{M}\\p{N}\\p{Pc}\\x{200C}\\x{200D}";

}  // namespace

struct Regex::Impl {
  pcre2_code* code = nullptr;
  ~Impl() { pcre2_code_free(code); }
};

Regex::Regex(std::string_view pattern, std::string_view what)
    : impl_(std::make_unique<Impl>()), pattern_(pattern) {
  const std::string translated = OnigToPcre2(pattern);
  int err = 0;
  PCRE2_SIZE offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                              PCRE2_UTF | PCRE2_UCP, &err, &offset, nullptr);
  KILN_CHECK(impl_->code != nullptr, what, ": bad regex '", std::string(pattern),
             "': ", Pcre2Message(err), " at offset ", static_cast<uint64_t>(offset));
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter on failure
}

Regex Regex::Literal(std::string_view literal, std::string_view what) {
  std::string quoted;
  for (char c : literal) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       (static_cast<uint8_t>(c) >= 0x80) || c == ' ' || c == '_';
    if (c == '\0') {
      quoted += "\\x{0}";
      continue;
    }
    if (!plain) quoted += '\\';
    quoted += c;
  }
  Regex r(quoted, what);
  r.pattern_ = literal;
  return r;
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

void Regex::FindAll(std::string_view text, std::vector<Match>* out) const {
  out->clear();
  ThreadState& st = State();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos <= text.size()) {
    const int rc = pcre2_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, st.data,
                               st.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    KILN_CHECK(rc >= 0, "regex '", pattern_, "' failed on the input: ", Pcre2Message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
    const size_t start = ov[0], end = ov[1];
    if (end < start) break;  // \K tricks; not meaningful for splitting
    out->push_back({start, end});
    pos = end > start ? end : NextCharEnd(text, end);
  }
}

std::string OnigToPcre2(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[++i];
      if (n == 'w') {
        out += in_class ? std::string(kWordSet) : "[" + std::string(kWordSet) + "]";
      } else if (n == 'W' && !in_class) {
        out += "[^" + std::string(kWordSet) + "]";
      } else if (n == 'h') {
        out += in_class ? "0-9a-fA-F" : "[0-9a-fA-F]";
      } else {
        out += c;
        out += n;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

}  // namespace kiln::hf
