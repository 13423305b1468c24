#include "top/report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "top/format.h"

namespace kiln::top {
namespace {

std::string Printf(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), fmt, args...);
  return buf;
}

double MeanUtilization(const Rates& r) {
  if (r.core_utilization_pct.empty()) return 0.0;
  double sum = 0.0;
  for (double u : r.core_utilization_pct) sum += u;
  return sum / static_cast<double>(r.core_utilization_pct.size());
}

Tone UtilizationTone(double pct) {
  return pct >= 90.0 ? Tone::kBad : pct >= 50.0 ? Tone::kWarn : Tone::kGood;
}

std::vector<Line> CoreLines(const StatusSnapshot& s, const Rates& r, int bar_width) {
  std::vector<Line> lines;
  for (size_t i = 0; i < s.cores.size(); ++i) {
    const bool known = r.valid && i < r.core_utilization_pct.size();
    const double pct = known ? r.core_utilization_pct[i] : 0.0;
    const std::string id = s.cores[i].id >= 0 ? std::to_string(s.cores[i].id) : "?";
    lines.push_back(
        {Printf("  core %-3s %s %s  (cpu %.1f s)", id.c_str(), Bar(pct, bar_width).c_str(),
                known ? Printf("%5.1f%%", pct).c_str() : "    -%", s.cores[i].cpu_seconds),
         known ? UtilizationTone(pct) : Tone::kNormal});
  }
  return lines;
}

std::string Rate(const Rates& r, double v) { return r.valid ? Printf("%.1f/s", v) : "-/s"; }

std::vector<Line> SnapshotLines(const StatusSnapshot& s, const Rates& r) {
  const double kv_pct =
      s.kv_total > 0 ? 100.0 * static_cast<double>(s.kv_used) / static_cast<double>(s.kv_total)
                     : 0.0;
  return {
      {Printf("memory: rss %s  weights %s", FormatBytes(s.rss_bytes).c_str(),
              FormatBytes(s.weight_bytes).c_str())},
      {Printf("kv cache: %lld / %lld blocks used (%.0f%%), %lld free, %lld prefix-cached",
              static_cast<long long>(s.kv_used), static_cast<long long>(s.kv_total), kv_pct,
              static_cast<long long>(s.kv_free), static_cast<long long>(s.kv_cached)),
       UtilizationTone(kv_pct)},
      {Printf("sequences: %lld running, %lld waiting", static_cast<long long>(s.running),
              static_cast<long long>(s.waiting))},
      {Printf("tokens: generated %lld (%s), prompt %lld (%s)",
              static_cast<long long>(s.generated_tokens), Rate(r, r.generated_tokens_per_s).c_str(),
              static_cast<long long>(s.prompt_tokens), Rate(r, r.prompt_tokens_per_s).c_str())},
      {Printf("latency (last %.0f s): TTFT p50 %s p95 %s   ITL p50 %s p95 %s", s.latency_window_s,
              FormatLatency(s.ttft.p50, s.ttft.count).c_str(),
              FormatLatency(s.ttft.p95, s.ttft.count).c_str(),
              FormatLatency(s.itl.p50, s.itl.count).c_str(),
              FormatLatency(s.itl.p95, s.itl.count).c_str())},
      {Printf("requests: %lld generation (%s), %lld in flight; responses %lld: 4xx %lld, 5xx "
              "%lld, 429 %lld",
              static_cast<long long>(s.generation_requests), Rate(r, r.requests_per_s).c_str(),
              static_cast<long long>(s.in_flight), static_cast<long long>(s.requests),
              static_cast<long long>(s.status_4xx), static_cast<long long>(s.status_5xx),
              static_cast<long long>(s.status_429)),
       s.status_5xx > 0   ? Tone::kBad
       : s.status_429 > 0 ? Tone::kWarn
                          : Tone::kNormal},
  };
}

// The end of a long name (a model path's file name is what tells models apart).
std::string Tail(const std::string& s, size_t width) {
  return s.size() <= width ? s : "..." + s.substr(s.size() - (width - 3));
}

}  // namespace

std::string HostLine(const HostInfo& h) {
  return Printf("host: %s (%d CPUs)  mem %s free of %s  load %.2f %.2f %.2f",
                h.cpu_model.empty() ? "unknown CPU" : h.cpu_model.c_str(), h.cpus,
                FormatBytes(h.mem_available_bytes).c_str(), FormatBytes(h.mem_total_bytes).c_str(),
                h.load1, h.load5, h.load15);
}

std::string TableHeader() {
  return Printf("%-28s %-11s %-20s %8s %4s %4s %9s %6s %9s %5s", "TARGET", "STATE", "MODEL",
                "UPTIME", "RUN", "WAIT", "GEN TOK/S", "REQ/S", "KV USED", "CPU%");
}

Line TableRow(const TargetView& t) {
  if (t.health != Health::kUp || !t.current) {
    return {Printf("%-28s %-11s %s", t.url.c_str(), HealthName(t.health), t.error.c_str()),
            t.health == Health::kPending ? Tone::kNormal : Tone::kBad};
  }
  const StatusSnapshot& s = *t.current;
  const Rates& r = t.rates;
  const std::string kv = std::to_string(s.kv_used) + "/" + std::to_string(s.kv_total);
  return {Printf("%-28s %-11s %-20.20s %8s %4lld %4lld %9s %6s %9s %5s", t.url.c_str(), "up",
                 Tail(s.model, 20).c_str(), FormatUptime(s.uptime_s).c_str(),
                 static_cast<long long>(s.running), static_cast<long long>(s.waiting),
                 r.valid ? Printf("%.1f", r.generated_tokens_per_s).c_str() : "-",
                 r.valid ? Printf("%.2f", r.requests_per_s).c_str() : "-", kv.c_str(),
                 r.valid ? Printf("%.0f", MeanUtilization(r)).c_str() : "-"),
          Tone::kGood};
}

std::vector<Line> DetailLines(const TargetView& t, int bar_width) {
  std::vector<Line> lines;
  if (t.health != Health::kUp) {
    lines.push_back({t.url + ": " + HealthName(t.health) + (t.error.empty() ? "" : ": " + t.error),
                     t.health == Health::kPending ? Tone::kNormal : Tone::kBad});
    if (t.health == Health::kUnreachable) lines.push_back({"(retrying every interval)"});
    return lines;
  }
  const StatusSnapshot& s = *t.current;
  lines.push_back(
      {Printf("%s  model %s  version %s  uptime %s%s", t.url.c_str(), s.model.c_str(),
              s.version.c_str(), FormatUptime(s.uptime_s).c_str(), s.draining ? "  DRAINING" : ""),
       s.draining ? Tone::kWarn : Tone::kNormal});
  lines.push_back({Printf("cores (%zu):", s.cores.size())});
  for (Line& l : CoreLines(s, t.rates, bar_width)) lines.push_back(std::move(l));
  for (Line& l : SnapshotLines(s, t.rates)) lines.push_back(std::move(l));
  return lines;
}

std::string PlainReport(const HostInfo& host, const std::vector<TargetView>& targets) {
  std::string out = HostLine(host) + "\n\n" + TableHeader() + "\n";
  for (const TargetView& t : targets) out += TableRow(t).text + "\n";
  for (const TargetView& t : targets) {
    out += "\n";
    for (const Line& l : DetailLines(t, 20)) out += l.text + "\n";
  }
  return out;
}

}  // namespace kiln::top
