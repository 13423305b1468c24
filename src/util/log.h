// Minimal leveled logging to stderr. Level from KILN_LOG (error|warn|info|debug), default info.
#pragma once

#include <string_view>

namespace kiln::log {

enum class Level { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

Level CurrentLevel();
void SetLevel(Level level);
void Write(Level level, std::string_view message);

inline void Error(std::string_view m) { Write(Level::kError, m); }
inline void Warn(std::string_view m) { Write(Level::kWarn, m); }
inline void Info(std::string_view m) { Write(Level::kInfo, m); }
inline void Debug(std::string_view m) { Write(Level::kDebug, m); }

}  // namespace kiln::log
