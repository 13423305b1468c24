// What the monitor says about its targets, as lines the plain-text snapshot (kiln top --once)
// and the ncurses screen both print, and as JSON (--once --json).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "top/host_info.h"
#include "top/target_view.h"

namespace kiln::top {

// How a line should stand out on a colour terminal.
enum class Tone { kNormal, kGood, kWarn, kBad };

struct Line {
  std::string text;
  Tone tone = Tone::kNormal;
};

std::string HostLine(const HostInfo& host);
std::string TableHeader();
Line TableRow(const TargetView& t);
// The detail pane of one target: model, cores with bars, memory, KV, sequences, tokens,
// latency, requests, uptime; one line with the error when it is down or not Kiln.
std::vector<Line> DetailLines(const TargetView& t, int bar_width);

// kiln top --once: host line, the table, then every target's details.
std::string PlainReport(const HostInfo& host, const std::vector<TargetView>& targets);
nlohmann::json JsonReport(const HostInfo& host, const std::vector<TargetView>& targets);

}  // namespace kiln::top
