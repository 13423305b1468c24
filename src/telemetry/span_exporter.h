// Sends finished spans to an OpenTelemetry collector over OTLP/HTTP (protobuf,
// ExportTraceServiceRequest POSTed to .../v1/traces). Serving never waits on it: Export()
// only appends to a bounded in-memory queue (a full queue drops the span and counts it), and
// one background thread sends batches. A slow, dead or misbehaving collector costs dropped
// spans (counted, logged at most once a minute), never a blocked or failed request.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "telemetry/span.h"

namespace kiln::telemetry {

struct ExporterOptions {
  // http://host:port[/path]. A URL with no path (or "/") gets OTLP/HTTP's "/v1/traces".
  std::string endpoint;
  std::string service_name = "kiln";  // resource attribute service.name
  // Further resource attributes (service.version, service.instance.id, ...).
  std::vector<Attribute> resource_attributes;
  size_t max_queue_spans = 4096;                   // spans waiting to be sent; more are dropped
  size_t max_batch_spans = 512;                    // spans per export request
  std::chrono::milliseconds flush_interval{1000};  // a partial batch waits at most this long
  std::chrono::milliseconds export_timeout{5000};  // one export request, connect included
};

struct ExporterCounters {
  uint64_t exported = 0;        // spans the collector accepted (2xx)
  uint64_t dropped = 0;         // spans lost: queue full, or their export failed
  uint64_t failed_exports = 0;  // export requests that failed (refused, timeout, non-2xx)
  uint64_t queued = 0;          // spans waiting now
};

class SpanExporter {
 public:
  // Throws kiln::Error for a malformed endpoint URL. Starts the sending thread.
  explicit SpanExporter(ExporterOptions options);
  // Shutdown(2 s) if not done yet.
  ~SpanExporter();
  SpanExporter(const SpanExporter&) = delete;
  SpanExporter& operator=(const SpanExporter&) = delete;

  // Never blocks on the network; drops (and counts) what does not fit in the queue.
  void Export(std::vector<Span> spans);
  // Sends what is queued, for at most `deadline`, then stops the thread; later Export calls
  // drop. Idempotent.
  void Shutdown(std::chrono::milliseconds deadline);
  ExporterCounters counters() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::telemetry
