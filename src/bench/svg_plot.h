// Line charts as inline SVG (no scripts, no external files), for the HTML report.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln::bench {

struct PlotSeries {
  std::string name;
  std::string color;  // "#1f77b4"
  std::vector<double> x, y;
  bool dashed = false;
};

struct PlotSpec {
  std::string title, x_label, y_label;
  std::vector<PlotSeries> series;
  int width = 560, height = 340;
};

// Axes with grid and tick labels, one polyline with point markers per series, a legend. Points
// are drawn in x order; non-finite points are skipped. An empty plot says "no data".
std::string RenderSvgPlot(const PlotSpec& spec);

// About `target` round tick values (1, 2, 2.5 or 5 times a power of ten) covering [lo, hi].
std::vector<double> NiceTicks(double lo, double hi, int target);

// Escapes & < > " ' for HTML and SVG text.
std::string EscapeXml(std::string_view text);

}  // namespace kiln::bench
