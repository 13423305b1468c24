// Spans as the body of an OTLP/HTTP trace export: a serialized ExportTraceServiceRequest
// (otlp_trace.proto) with one resource (service.name and the given attributes) and one
// instrumentation scope ("kiln", KILN_VERSION).
#pragma once

#include <string>
#include <vector>

#include "telemetry/span.h"

namespace kiln::telemetry {

std::string EncodeExportRequest(const std::vector<Span>& spans, const std::string& service_name,
                                const std::vector<Attribute>& resource_attributes);

}  // namespace kiln::telemetry
