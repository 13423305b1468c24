#include "top/screen.h"

#include <curses.h>

#include <algorithm>
#include <atomic>
#include <clocale>
#include <csignal>
#include <cstdlib>
#include <string>

#include "top/host_info.h"
#include "top/report.h"

namespace kiln::top {
namespace {

std::atomic<bool> g_stop{false};

extern "C" void OnStopSignal(int) { g_stop.store(true); }

// initscr..endwin, also when something throws.
class Curses {
 public:
  explicit Curses(bool want_color) {
    std::setlocale(LC_ALL, "");
    // The terminal's own size (TIOCGWINSZ) over LINES/COLUMNS from the environment: a stale
    // exported LINES would otherwise pin the layout through every resize.
    use_tioctl(TRUE);
    initscr();
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    color_ = want_color && has_colors() && std::getenv("NO_COLOR") == nullptr;
    if (color_) {
      start_color();
      use_default_colors();
      init_pair(1, COLOR_GREEN, -1);
      init_pair(2, COLOR_YELLOW, -1);
      init_pair(3, COLOR_RED, -1);
    }
  }
  ~Curses() { endwin(); }
  Curses(const Curses&) = delete;
  Curses& operator=(const Curses&) = delete;

  int Attr(Tone tone) const {
    if (!color_) return tone == Tone::kBad ? A_BOLD : A_NORMAL;
    switch (tone) {
      case Tone::kGood:
        return COLOR_PAIR(1);
      case Tone::kWarn:
        return COLOR_PAIR(2);
      case Tone::kBad:
        return COLOR_PAIR(3) | A_BOLD;
      case Tone::kNormal:
        break;
    }
    return A_NORMAL;
  }

 private:
  bool color_ = false;
};

void Put(int row, int attr, const std::string& text) {
  if (row >= LINES) return;
  attron(attr);
  mvaddnstr(row, 0, text.c_str(), COLS);  // cut at the right edge: no wrapping on resize
  attroff(attr);
}

void Draw(const Curses& c, const std::vector<TargetView>& targets, size_t selected,
          std::chrono::milliseconds interval) {
  erase();
  int row = 0;
  Put(row++, A_REVERSE, HostLine(ReadHostInfo()) + std::string(static_cast<size_t>(COLS), ' '));
  row++;
  Put(row++, A_BOLD, TableHeader());
  for (size_t i = 0; i < targets.size(); ++i) {
    const Line line = TableRow(targets[i]);
    Put(row++, c.Attr(line.tone) | (i == selected ? A_REVERSE : 0), line.text);
  }
  row++;
  const int bar = std::clamp(COLS - 48, 10, 50);
  for (const Line& l : DetailLines(targets[selected], bar)) Put(row++, c.Attr(l.tone), l.text);
  char help[128];
  std::snprintf(help, sizeof(help), "q quit   up/down/tab select   polling every %.1f s",
                static_cast<double>(interval.count()) / 1000.0);
  Put(LINES - 1, A_DIM, help);
  refresh();
}

// Handles one key; returns false to quit.
bool OnKey(int key, size_t& selected, size_t count) {
  switch (key) {
    case 'q':
    case 'Q':
      return false;
    case KEY_UP:
    case KEY_BTAB:
      selected = (selected + count - 1) % count;
      return true;
    case KEY_DOWN:
    case '\t':
      selected = (selected + 1) % count;
      return true;
    default:
      return true;  // KEY_RESIZE included: the caller redraws at the new LINES/COLS
  }
}

}  // namespace

void RunScreen(Poller& poller, const ScreenOptions& options) {
  std::signal(SIGINT, OnStopSignal);
  std::signal(SIGTERM, OnStopSignal);
  Curses curses(options.color);
  size_t selected = 0;
  using Clock = std::chrono::steady_clock;
  while (!g_stop.load()) {
    const Clock::time_point next = Clock::now() + options.interval;
    poller.PollOnce();
    const size_t count = poller.targets().size();  // a router's replicas may come and go
    selected = std::min(selected, count - 1);
    Draw(curses, poller.targets(), selected, options.interval);
    // Keys until the next poll; each one redraws at once.
    for (Clock::time_point now = Clock::now(); now < next && !g_stop.load(); now = Clock::now()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - now);
      timeout(static_cast<int>(std::max<int64_t>(1, left.count())));
      const int key = getch();
      if (key == ERR) continue;
      if (!OnKey(key, selected, count)) return;
      // The terminal may have dropped or reflowed cells ncurses believes are on screen: one
      // full repaint after a resize (only then: every other redraw sends changes only).
      if (key == KEY_RESIZE) clearok(curscr, TRUE);
      Draw(curses, poller.targets(), selected, options.interval);
    }
  }
}

}  // namespace kiln::top
