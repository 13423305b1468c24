// The span exporter's counters in the Prometheus text format, for /metrics of kiln serve and
// of the kiln launch router.
#pragma once

#include <string>

#include "telemetry/span_exporter.h"

namespace kiln::telemetry {

inline void AppendExporterMetrics(std::string& out, const ExporterCounters& c) {
  const auto metric = [&out](const char* name, const char* type, const char* help, uint64_t value) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
    out += name;
    out += ' ';
    out += std::to_string(value);
    out += '\n';
  };
  metric("kiln_otlp_spans_exported_total", "counter", "Spans the OTLP collector accepted",
         c.exported);
  metric("kiln_otlp_spans_dropped_total", "counter",
         "Spans dropped: export queue full, or their export failed", c.dropped);
  metric("kiln_otlp_export_failures_total", "counter",
         "OTLP export requests that failed (refused, timed out, non-2xx)", c.failed_exports);
  metric("kiln_otlp_spans_queued", "gauge", "Spans waiting to be exported", c.queued);
}

}  // namespace kiln::telemetry
