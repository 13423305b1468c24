#include "bench/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace kiln::bench {
namespace {

constexpr double kLeft = 64, kRight = 16, kTop = 52, kBottom = 52;
constexpr double kLegendY = 40;  // one row of legend entries between the title and the plot

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string TickLabel(double v) {
  char buf[32];
  const double a = std::abs(v);
  const char* format = a >= 10000 ? "%.3g" : (a >= 100 || v == std::floor(v)) ? "%.0f" : "%.3g";
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void Add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

// Widens a degenerate range and snaps both ends to ticks.
std::vector<double> AxisTicks(Range r, bool from_zero) {
  if (from_zero && r.lo > 0) r.lo = 0;
  if (r.hi - r.lo < 1e-12) {
    const double pad = r.hi == 0 ? 1 : std::abs(r.hi) * 0.1;
    r.lo = from_zero && r.lo >= 0 ? std::max(0.0, r.lo - pad) : r.lo - pad;
    r.hi += pad;
  }
  return NiceTicks(r.lo, r.hi, 6);
}

std::string Text(double x, double y, const std::string& text, const char* anchor, int size,
                 const char* extra = "") {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" text-anchor=\"" + anchor +
         "\" font-size=\"" + std::to_string(size) + "\" " + extra + ">" + EscapeXml(text) +
         "</text>";
}

// The polyline and point markers of one series, in x order, skipping non-finite points.
template <typename Px, typename Py>
std::string SeriesSvg(const PlotSeries& s, const Px& px, const Py& py) {
  std::vector<size_t> order;
  for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
    if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s.x[a] < s.x[b]; });
  std::string points;
  for (size_t i : order) points += Num(px(s.x[i])) + "," + Num(py(s.y[i])) + " ";
  std::string svg = "<g class=\"series\" data-series=\"" + EscapeXml(s.name) + "\">";
  svg += "<polyline fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"2.5\"" +
         (s.dashed ? " stroke-dasharray=\"6 4\"" : "") + " points=\"" + points + "\"/>";
  for (size_t i : order) {
    svg += "<circle cx=\"" + Num(px(s.x[i])) + "\" cy=\"" + Num(py(s.y[i])) + "\" r=\"4\" fill=\"" +
           s.color + "\"><title>" + EscapeXml(s.name) + ": " + TickLabel(s.y[i]) + " at " +
           TickLabel(s.x[i]) + "</title></circle>";
  }
  return svg + "</g>";
}

}  // namespace

std::string EscapeXml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::vector<double> NiceTicks(double lo, double hi, int target) {
  if (!(hi > lo) || target < 2) return {lo, hi};
  const double raw = (hi - lo) / (target - 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude * 10;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9) * step;
  for (double t = first; t < hi + step * 0.999; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

namespace {

// Grid, tick labels, frame and axis titles.
template <typename Px, typename Py>
std::string AxesSvg(const PlotSpec& spec, const std::vector<double>& xt,
                    const std::vector<double>& yt, const Px& px, const Py& py) {
  const double pw = spec.width - kLeft - kRight, ph = spec.height - kTop - kBottom;
  std::string svg;
  for (double t : yt) {
    svg += "<line x1=\"" + Num(kLeft) + "\" y1=\"" + Num(py(t)) + "\" x2=\"" + Num(kLeft + pw) +
           "\" y2=\"" + Num(py(t)) + "\" stroke=\"#e3e3e3\"/>";
    svg += Text(kLeft - 6, py(t) + 4, TickLabel(t), "end", 11, "fill=\"#444444\"");
  }
  for (double t : xt) {
    svg += "<line x1=\"" + Num(px(t)) + "\" y1=\"" + Num(kTop) + "\" x2=\"" + Num(px(t)) +
           "\" y2=\"" + Num(kTop + ph) + "\" stroke=\"#efefef\"/>";
    svg += Text(px(t), kTop + ph + 16, TickLabel(t), "middle", 11, "fill=\"#444444\"");
  }
  svg += "<rect x=\"" + Num(kLeft) + "\" y=\"" + Num(kTop) + "\" width=\"" + Num(pw) +
         "\" height=\"" + Num(ph) + "\" fill=\"none\" stroke=\"#555555\"/>";
  svg += Text(kLeft + pw / 2, spec.height - 12, spec.x_label, "middle", 12);
  svg += Text(16, kTop + ph / 2, spec.y_label, "middle", 12,
              ("transform=\"rotate(-90 16 " + Num(kTop + ph / 2) + ")\"").c_str());

  return svg;
}

}  // namespace

std::string RenderSvgPlot(const PlotSpec& spec) {
  const double w = spec.width, h = spec.height;
  const double pw = w - kLeft - kRight, ph = h - kTop - kBottom;
  Range xr, yr;
  for (const PlotSeries& s : spec.series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      xr.Add(s.x[i]);
      yr.Add(s.y[i]);
    }
  }
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"" + Num(w) +
                    "\" height=\"" + Num(h) + "\" viewBox=\"0 0 " + Num(w) + " " + Num(h) +
                    "\" font-family=\"sans-serif\">";
  svg +=
      "<rect x=\"0\" y=\"0\" width=\"" + Num(w) + "\" height=\"" + Num(h) + "\" fill=\"#ffffff\"/>";
  svg += Text(w / 2, 20, spec.title, "middle", 14, "font-weight=\"bold\"");
  if (xr.empty()) {
    return svg + Text(w / 2, h / 2, "no data", "middle", 13, "fill=\"#888888\"") + "</svg>";
  }
  const std::vector<double> xt = AxisTicks(xr, false), yt = AxisTicks(yr, true);
  const double x0 = xt.front(), x1 = xt.back(), y0 = yt.front(), y1 = yt.back();
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return kTop + ph - (y - y0) / (y1 - y0) * ph; };

  svg += AxesSvg(spec, xt, yt, px, py);

  double legend_x = kLeft;
  for (const PlotSeries& s : spec.series) {
    svg += SeriesSvg(s, px, py);
    svg += "<line x1=\"" + Num(legend_x) + "\" y1=\"" + Num(kLegendY - 4) + "\" x2=\"" +
           Num(legend_x + 22) + "\" y2=\"" + Num(kLegendY - 4) + "\" stroke=\"" + s.color +
           "\" stroke-width=\"3\"" + (s.dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>";
    svg += Text(legend_x + 28, kLegendY, s.name, "start", 11);
    legend_x += 44 + 6.5 * static_cast<double>(s.name.size());
  }
  return svg + "</svg>";
}

}  // namespace kiln::bench
