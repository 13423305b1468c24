// Python str semantics over UTF-8 bytes. Templates index, slice, strip and case-map strings by
// code point as Python does; an invalid byte counts as one code point and survives unchanged
// (like Python's surrogateescape), so no input makes these functions fail.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::jinja::text {

std::u32string Decode(std::string_view s);
std::string Encode(std::u32string_view cps);
void AppendUtf8(std::string& out, char32_t cp);
size_t Length(std::string_view s);  // in code points
bool IsAscii(std::string_view s);

bool IsSpace(char32_t c);      // str.isspace
bool IsPrintable(char32_t c);  // str.isprintable, for repr()
bool IsAlnum(char32_t c);
bool IsAlpha(char32_t c);
bool IsDigit(char32_t c);
bool IsLower(char32_t c);
bool IsUpper(char32_t c);
bool IsCased(char32_t c);
char32_t ToUpper(char32_t c);
char32_t ToLower(char32_t c);
char32_t ToTitle(char32_t c);

std::string Upper(std::string_view s);
std::string Lower(std::string_view s);
std::string Capitalize(std::string_view s);  // str.capitalize
std::string Title(std::string_view s);       // str.title
std::string JinjaTitle(std::string_view s);  // the |title filter: words split at [-\s({[<]

// str.strip / lstrip / rstrip; `chars` unset = whitespace.
std::string Strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right);
// str.split(sep, maxsplit) / str.rsplit; sep unset = runs of whitespace.
std::vector<std::string> Split(std::string_view s, const std::optional<std::string>& sep,
                               int64_t maxsplit, bool from_right);
std::vector<std::string> SplitLines(std::string_view s, bool keepends);  // str.splitlines
std::string Replace(std::string_view s, std::string_view old, std::string_view repl,
                    int64_t count);                       // str.replace; count < 0 = all
int64_t Count(std::string_view s, std::string_view sub);  // str.count
// str.find / rfind in code points; -1 when absent.
int64_t Find(std::string_view s, std::string_view sub, bool from_right);

}  // namespace kiln::jinja::text
