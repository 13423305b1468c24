#include "util/metrics_merge.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

TEST(AddLabel, PutsTheLabelFirst) {
  EXPECT_EQ(AddLabel("tgi_request_count 3", "replica", "0"), "tgi_request_count{replica=\"0\"} 3");
  EXPECT_EQ(AddLabel("x_bucket{le=\"0.1\"} 2", "replica", "1"),
            "x_bucket{replica=\"1\",le=\"0.1\"} 2");
  EXPECT_EQ(AddLabel("x{} 2", "replica", "1"), "x{replica=\"1\"} 2");
  EXPECT_EQ(AddLabel("x 2", "", ""), "x 2");
}

TEST(MetricsMerger, GroupsFamiliesAcrossReplicas) {
  const std::string a =
      "# HELP c Requests\n# TYPE c counter\nc 1\n"
      "# HELP h Latency\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\n"
      "h_sum 0.5\nh_count 1\n";
  const std::string b = "# HELP c Requests\n# TYPE c counter\nc 2\n";
  MetricsMerger m;
  m.Add("# HELP own Mine\n# TYPE own gauge\nown 7\n", "", "");
  m.Add(a, "replica", "0");
  m.Add(b, "replica", "1");
  EXPECT_EQ(m.Render(),
            "# HELP own Mine\n# TYPE own gauge\nown 7\n"
            "# HELP c Requests\n# TYPE c counter\nc{replica=\"0\"} 1\nc{replica=\"1\"} 2\n"
            "# HELP h Latency\n# TYPE h histogram\nh_bucket{replica=\"0\",le=\"1\"} 1\n"
            "h_bucket{replica=\"0\",le=\"+Inf\"} 1\nh_sum{replica=\"0\"} 0.5\n"
            "h_count{replica=\"0\"} 1\n");
}

TEST(MetricsMerger, ToleratesCrlfBlankLinesAndSamplesWithoutHelp) {
  MetricsMerger m;
  m.Add("\r\nlonely 1\r\n\r\n# a comment\n", "replica", "0");
  EXPECT_EQ(m.Render(), "lonely{replica=\"0\"} 1\n");
}

}  // namespace
}  // namespace kiln
