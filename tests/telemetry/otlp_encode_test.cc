#include "telemetry/otlp_encode.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "telemetry/otlp_trace.pb.h"

namespace kiln::telemetry {
namespace {

template <size_t N>
std::string Bytes(const std::array<uint8_t, N>& id) {
  return std::string(reinterpret_cast<const char*>(id.data()), N);
}

Span ServerSpan() {
  Span s;
  for (size_t i = 0; i < s.trace_id.size(); ++i) s.trace_id[i] = static_cast<uint8_t>(i + 1);
  for (size_t i = 0; i < s.span_id.size(); ++i) s.span_id[i] = static_cast<uint8_t>(0xa0 + i);
  s.parent_span_id[7] = 0x42;
  s.name = "POST /generate";
  s.kind = SpanKind::kServer;
  s.start_unix_nanos = 1'765'000'000'123'456'789ull;
  s.end_unix_nanos = 1'765'000'001'000'000'000ull;
  s.attributes = {{"http.request.method", std::string("POST")},
                  {"http.response.status_code", int64_t{200}},
                  {"kiln.ttft_seconds", 0.125},
                  {"kiln.stream", true},
                  {"kiln.negative", int64_t{-7}}};
  s.status = SpanStatus::kError;
  s.status_message = "client went away";
  return s;
}

otlp::ExportTraceServiceRequest Decode(const std::string& bytes) {
  otlp::ExportTraceServiceRequest r;
  EXPECT_TRUE(r.ParseFromString(bytes));
  return r;
}

TEST(OtlpEncode, SpanFieldsSurviveTheWire) {
  Span root = ServerSpan();
  Span child;
  child.trace_id = root.trace_id;
  child.span_id[0] = 9;
  child.parent_span_id = root.span_id;
  child.name = "queue";
  child.kind = SpanKind::kInternal;
  child.start_unix_nanos = 5;
  child.end_unix_nanos = 6;
  Span root_only = ServerSpan();
  root_only.parent_span_id = {};
  root_only.kind = SpanKind::kClient;
  root_only.status = SpanStatus::kOk;
  root_only.status_message.clear();

  const auto r = Decode(EncodeExportRequest({root, child, root_only}, "kiln-test", {}));
  ASSERT_EQ(r.resource_spans_size(), 1);
  ASSERT_EQ(r.resource_spans(0).scope_spans_size(), 1);
  const auto& ss = r.resource_spans(0).scope_spans(0);
  EXPECT_EQ(ss.scope().name(), "kiln");
  EXPECT_EQ(ss.scope().version(), KILN_VERSION);
  ASSERT_EQ(ss.spans_size(), 3);

  const otlp::Span& a = ss.spans(0);
  EXPECT_EQ(a.trace_id(), Bytes(root.trace_id));
  EXPECT_EQ(a.span_id(), Bytes(root.span_id));
  EXPECT_EQ(a.parent_span_id(), Bytes(root.parent_span_id));
  EXPECT_EQ(a.name(), "POST /generate");
  EXPECT_EQ(a.kind(), otlp::Span::SPAN_KIND_SERVER);
  EXPECT_EQ(a.start_time_unix_nano(), root.start_unix_nanos);
  EXPECT_EQ(a.end_time_unix_nano(), root.end_unix_nanos);
  EXPECT_EQ(a.status().code(), otlp::Status::STATUS_CODE_ERROR);
  EXPECT_EQ(a.status().message(), "client went away");
  ASSERT_EQ(a.attributes_size(), 5);
  EXPECT_EQ(a.attributes(0).key(), "http.request.method");
  EXPECT_EQ(a.attributes(0).value().string_value(), "POST");
  EXPECT_EQ(a.attributes(1).value().value_case(), otlp::AnyValue::kIntValue);
  EXPECT_EQ(a.attributes(1).value().int_value(), 200);
  EXPECT_EQ(a.attributes(2).value().value_case(), otlp::AnyValue::kDoubleValue);
  EXPECT_DOUBLE_EQ(a.attributes(2).value().double_value(), 0.125);
  EXPECT_EQ(a.attributes(3).value().value_case(), otlp::AnyValue::kBoolValue);
  EXPECT_TRUE(a.attributes(3).value().bool_value());
  EXPECT_EQ(a.attributes(4).value().int_value(), -7);

  const otlp::Span& b = ss.spans(1);
  EXPECT_EQ(b.parent_span_id(), Bytes(root.span_id));
  EXPECT_EQ(b.kind(), otlp::Span::SPAN_KIND_INTERNAL);
  EXPECT_FALSE(b.has_status());  // unset: no status message at all
  EXPECT_EQ(b.attributes_size(), 0);

  const otlp::Span& c = ss.spans(2);
  EXPECT_TRUE(c.parent_span_id().empty());  // a root span has no parent id, not zeros
  EXPECT_EQ(c.kind(), otlp::Span::SPAN_KIND_CLIENT);
  EXPECT_EQ(c.status().code(), otlp::Status::STATUS_CODE_OK);
}

TEST(OtlpEncode, ResourceHasServiceNameFirstThenTheRest) {
  const auto r = Decode(EncodeExportRequest(
      {ServerSpan()}, "kiln-router",
      {{"service.version", std::string("0.1.0")}, {"service.instance.id", std::string("r1")}}));
  const auto& attrs = r.resource_spans(0).resource().attributes();
  ASSERT_EQ(attrs.size(), 3);
  EXPECT_EQ(attrs[0].key(), "service.name");
  EXPECT_EQ(attrs[0].value().string_value(), "kiln-router");
  EXPECT_EQ(attrs[1].key(), "service.version");
  EXPECT_EQ(attrs[2].value().string_value(), "r1");
}

TEST(OtlpEncode, WireBytesAreOtlps) {
  // Hand-checked prefix: field 1 (resource_spans), length-delimited; inside, field 1
  // (resource), then field 1 (attributes) -> KeyValue{1: "service.name"}. A renumbered field
  // would change these bytes.
  const std::string bytes = EncodeExportRequest({}, "s", {});
  ASSERT_GE(bytes.size(), 8u);
  EXPECT_EQ(static_cast<uint8_t>(bytes[0]), 0x0a);  // ExportTraceServiceRequest.resource_spans
  const size_t resource = 2;
  EXPECT_EQ(static_cast<uint8_t>(bytes[resource]), 0x0a);      // ResourceSpans.resource
  EXPECT_EQ(static_cast<uint8_t>(bytes[resource + 2]), 0x0a);  // Resource.attributes
  EXPECT_EQ(static_cast<uint8_t>(bytes[resource + 4]), 0x0a);  // KeyValue.key
  EXPECT_EQ(bytes.substr(resource + 6, 12), "service.name");

  // Span.start/end_time_unix_nano are fixed64 fields 7 and 8 (wire type 1): tags 0x39, 0x41.
  Span s;
  s.start_unix_nanos = 1;
  s.end_unix_nanos = 2;
  const std::string one = EncodeExportRequest({s}, "s", {});
  EXPECT_NE(one.find(std::string("\x39\x01\0\0\0\0\0\0\0", 9)), std::string::npos);
  EXPECT_NE(one.find(std::string("\x41\x02\0\0\0\0\0\0\0", 9)), std::string::npos);
  EXPECT_NE(one.find(std::string("\x30\x01", 2)), std::string::npos);  // kind = 1 (varint, 6)
}

TEST(OtlpEncode, EmptyBatchIsValid) {
  const auto r = Decode(EncodeExportRequest({}, "kiln", {}));
  EXPECT_EQ(r.resource_spans(0).scope_spans(0).spans_size(), 0);
}

}  // namespace
}  // namespace kiln::telemetry
