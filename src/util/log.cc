#include "util/log.h"

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

#include "util/utf8.h"

namespace kiln::log {
namespace {

Level LevelFromEnv() {
  for (const char* name : {"KILN_LOG", "LOG_LEVEL"}) {
    const char* env = std::getenv(name);
    if (env == nullptr || *env == '\0') continue;
    if (std::optional<Level> level = ParseLevel(env)) return *level;
  }
  return Level::kInfo;
}

std::atomic<int>& LevelStore() {
  static std::atomic<int> level{static_cast<int>(LevelFromEnv())};
  return level;
}

std::atomic<int>& FormatStore() {
  static std::atomic<int> format{static_cast<int>(Format::kText)};
  return format;
}

const char* const kTextNames[] = {"error", "warn", "info", "debug"};
const char* const kJsonNames[] = {"ERROR", "WARN", "INFO", "DEBUG"};

void AppendValueJson(std::string& out, const FieldValue& v) {
  if (const auto* s = std::get_if<std::string_view>(&v)) return AppendJsonString(out, *s);
  if (const auto* i = std::get_if<int64_t>(&v)) {
    out += std::to_string(*i);
  } else if (const auto* d = std::get_if<double>(&v)) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.6g", *d);
    out += buf;
  } else {
    out += std::get<bool>(v) ? "true" : "false";
  }
}

// A text value: bare when it is a plain word, else JSON-quoted (spaces, quotes, controls).
void AppendValueText(std::string& out, const FieldValue& v) {
  const auto* s = std::get_if<std::string_view>(&v);
  if (s == nullptr) return AppendValueJson(out, v);
  bool bare = !s->empty();
  for (unsigned char c : *s) bare = bare && c > 0x20 && c < 0x7f && c != '"' && c != '=';
  if (bare) {
    out += *s;
  } else {
    AppendJsonString(out, *s);
  }
}

int64_t NowUnixMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Level CurrentLevel() { return static_cast<Level>(LevelStore().load(std::memory_order_relaxed)); }
void SetLevel(Level level) { LevelStore().store(static_cast<int>(level)); }
Format CurrentFormat() {
  return static_cast<Format>(FormatStore().load(std::memory_order_relaxed));
}
void SetFormat(Format format) { FormatStore().store(static_cast<int>(format)); }
bool Enabled(Level level) { return static_cast<int>(level) <= static_cast<int>(CurrentLevel()); }

std::optional<Level> ParseLevel(std::string_view name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "error") return Level::kError;
  if (lower == "warn" || lower == "warning") return Level::kWarn;
  if (lower == "info") return Level::kInfo;
  if (lower == "debug" || lower == "trace") return Level::kDebug;
  return std::nullopt;
}

void AppendJsonString(std::string& out, std::string_view raw) {
  const std::string s = ValidUtf8OrReplace(raw);
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

std::string Rfc3339Utc(int64_t unix_micros) {
  const std::time_t seconds = static_cast<std::time_t>(unix_micros / 1'000'000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06d", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(unix_micros % 1'000'000));
  std::strcat(buf, "Z");
  return buf;
}

std::string FormatLine(Format format, Level level, std::string_view target,
                       std::string_view message, const Fields& fields, int64_t unix_micros) {
  const int index = static_cast<int>(level);
  std::string out;
  out.reserve(128 + message.size());
  if (format == Format::kText) {
    out += "kiln ";
    out += kTextNames[index];
    out += ": ";
    out += message;
    for (const auto& [key, value] : fields) {
      out += ' ';
      out += key;
      out += '=';
      AppendValueText(out, value);
    }
    return out;
  }
  out += "{\"timestamp\":\"" + Rfc3339Utc(unix_micros) + "\",\"level\":\"";
  out += kJsonNames[index];
  out += "\",\"target\":";
  AppendJsonString(out, target);
  out += ",\"message\":";
  AppendJsonString(out, message);
  if (!fields.empty()) {
    out += ",\"fields\":{";
    for (size_t i = 0; i < fields.size(); ++i) {
      if (i > 0) out += ',';
      AppendJsonString(out, fields[i].first);
      out += ':';
      AppendValueJson(out, fields[i].second);
    }
    out += '}';
  }
  out += '}';
  return out;
}

void Write(Level level, std::string_view target, std::string_view message,
           const Fields& fields) {
  if (!Enabled(level)) return;
  std::string line = FormatLine(CurrentFormat(), level, target, message, fields, NowUnixMicros());
  line += '\n';
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace kiln::log
