// The interactive monitor: an ncurses screen redrawn after every poll (erase + refresh, so
// ncurses sends only the cells that changed: no flicker), keys q (quit), up/down/tab (select a
// target), and KEY_RESIZE (relayout to the new size).
#pragma once

#include <chrono>

#include "top/poller.h"

namespace kiln::top {

struct ScreenOptions {
  std::chrono::milliseconds interval{1000};
  bool color = true;  // used only when the terminal has colours and NO_COLOR is unset
};

// Runs until q, SIGINT or SIGTERM; restores the terminal on every way out.
void RunScreen(Poller& poller, const ScreenOptions& options);

}  // namespace kiln::top
