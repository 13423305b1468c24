// Leveled logging to stderr, one line per event, in one of two formats:
//   text (default):  kiln info: message key=value key="a value"
//   JSON (--json-output): {"timestamp":"2026-12-07T06:40:00.123456Z","level":"INFO",
//                          "target":"kiln::server","message":"...","fields":{"key":"value"}}
// Level from KILN_LOG, else LOG_LEVEL (TGI's name): error|warn|info|debug (trace = debug,
// warning = warn, any case); default info. Lines are written whole under a lock, so lines of
// concurrent threads never interleave.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kiln::log {

enum class Level { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };
enum class Format { kText, kJson };

// A structured field's value; string_view fields must outlive the Write call only.
using FieldValue = std::variant<std::string_view, int64_t, double, bool>;
using Fields = std::vector<std::pair<std::string_view, FieldValue>>;

Level CurrentLevel();
void SetLevel(Level level);
Format CurrentFormat();
void SetFormat(Format format);
// "error", "WARN", "warning", "trace", ...; nullopt for anything else.
std::optional<Level> ParseLevel(std::string_view name);
bool Enabled(Level level);

// `target`: the component ("kiln::server", "kiln::router", ...).
void Write(Level level, std::string_view target, std::string_view message,
           const Fields& fields = {});
inline void Write(Level level, std::string_view message) { Write(level, "kiln", message); }

inline void Error(std::string_view m) { Write(Level::kError, m); }
inline void Warn(std::string_view m) { Write(Level::kWarn, m); }
inline void Info(std::string_view m) { Write(Level::kInfo, m); }
inline void Debug(std::string_view m) { Write(Level::kDebug, m); }

// The line Write would print (without the newline), for tests. `unix_micros`: its timestamp.
std::string FormatLine(Format format, Level level, std::string_view target,
                       std::string_view message, const Fields& fields, int64_t unix_micros);
// `s` as a JSON string literal (quotes included): control characters escaped, invalid UTF-8
// replaced by U+FFFD.
void AppendJsonString(std::string& out, std::string_view s);
// RFC 3339 UTC with microseconds: "2026-12-07T06:40:00.123456Z".
std::string Rfc3339Utc(int64_t unix_micros);

}  // namespace kiln::log
