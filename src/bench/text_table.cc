#include "bench/text_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kiln::bench {

std::string FormatFixed(double value, int digits) {
  if (std::isnan(value)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

std::string TextTable::Render() const {
  std::vector<size_t> widths(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  };
  measure(header_);
  for (const auto& row : rows_) measure(row);

  auto line = [&](const std::vector<std::string>& row, bool left_first) {
    std::string out = "|";
    for (size_t i = 0; i < widths.size(); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      const std::string pad(widths[i] - cell.size(), ' ');
      out += " " + ((i == 0 && left_first) ? cell + pad : pad + cell) + " |";
    }
    return out + "\n";
  };
  std::string out = line(header_, true);
  out += "|";
  for (size_t w : widths) out += std::string(w + 2, '-') + "|";
  out += "\n";
  for (const auto& row : rows_) out += line(row, true);
  return out;
}

}  // namespace kiln::bench
