// A plain-text table with '|' column separators, columns padded to their widest cell, so the
// console report pastes into Markdown as well as reading well in a terminal.
#pragma once

#include <string>
#include <vector>

namespace kiln::bench {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Fixed-point with `digits` decimals ("12.35"); "-" for NaN.
std::string FormatFixed(double value, int digits);

}  // namespace kiln::bench
