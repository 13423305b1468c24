#include "util/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace kiln::log {
namespace {

Level LevelFromEnv() {
  const char* env = std::getenv("KILN_LOG");
  if (env == nullptr) return Level::kInfo;
  if (std::strcmp(env, "error") == 0) return Level::kError;
  if (std::strcmp(env, "warn") == 0) return Level::kWarn;
  if (std::strcmp(env, "debug") == 0) return Level::kDebug;
  return Level::kInfo;
}

std::atomic<int>& LevelStore() {
  static std::atomic<int> level{static_cast<int>(LevelFromEnv())};
  return level;
}

}  // namespace

Level CurrentLevel() { return static_cast<Level>(LevelStore().load(std::memory_order_relaxed)); }
void SetLevel(Level level) { LevelStore().store(static_cast<int>(level)); }

void Write(Level level, std::string_view message) {
  if (static_cast<int>(level) > static_cast<int>(CurrentLevel())) return;
  static const char* const kNames[] = {"error", "warn", "info", "debug"};
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "kiln %s: %.*s\n", kNames[static_cast<int>(level)],
               static_cast<int>(message.size()), message.data());
}

}  // namespace kiln::log
