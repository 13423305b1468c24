// Joins the Prometheus text of several replicas into one exposition: every sample gets a
// `replica` label, and the samples of one metric family from all replicas sit together under
// one HELP/TYPE pair, as the text format requires.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class MetricsMerger {
 public:
  // Adds every sample of `text` with label `label`="`value`" put first (`label` empty: as is).
  void Add(std::string_view text, std::string_view label, std::string_view value);
  // Families in the order first seen.
  std::string Render() const;

 private:
  struct Family {
    std::string name;
    std::string help_line;  // "# HELP ..." as first seen, or empty
    std::string type_line;  // "# TYPE ..." as first seen, or empty
    std::vector<std::string> samples;
  };
  Family& FamilyNamed(std::string_view name);

  std::vector<Family> families_;
};

// `sample` ("name{a=\"b\"} 1" or "name 1") with label="value" put first.
std::string AddLabel(std::string_view sample, std::string_view label, std::string_view value);

}  // namespace kiln
