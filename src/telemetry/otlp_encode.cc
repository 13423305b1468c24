#include "telemetry/otlp_encode.h"

#include "telemetry/otlp_trace.pb.h"

namespace kiln::telemetry {
namespace {

void SetValue(const AttributeValue& v, otlp::AnyValue& out) {
  if (const auto* s = std::get_if<std::string>(&v)) {
    out.set_string_value(*s);
  } else if (const auto* i = std::get_if<int64_t>(&v)) {
    out.set_int_value(*i);
  } else if (const auto* d = std::get_if<double>(&v)) {
    out.set_double_value(*d);
  } else {
    out.set_bool_value(std::get<bool>(v));
  }
}

void AddAttribute(const Attribute& a, otlp::KeyValue& out) {
  out.set_key(a.key);
  SetValue(a.value, *out.mutable_value());
}

template <size_t N>
std::string Bytes(const std::array<uint8_t, N>& id) {
  return std::string(reinterpret_cast<const char*>(id.data()), N);
}

template <size_t N>
bool AllZero(const std::array<uint8_t, N>& id) {
  for (uint8_t b : id) {
    if (b != 0) return false;
  }
  return true;
}

void FillSpan(const Span& s, otlp::Span& out) {
  out.set_trace_id(Bytes(s.trace_id));
  out.set_span_id(Bytes(s.span_id));
  if (!AllZero(s.parent_span_id)) out.set_parent_span_id(Bytes(s.parent_span_id));
  out.set_name(s.name);
  out.set_kind(static_cast<otlp::Span::SpanKind>(s.kind));
  out.set_start_time_unix_nano(s.start_unix_nanos);
  out.set_end_time_unix_nano(s.end_unix_nanos);
  for (const Attribute& a : s.attributes) AddAttribute(a, *out.add_attributes());
  if (s.status != SpanStatus::kUnset) {
    out.mutable_status()->set_code(static_cast<otlp::Status::StatusCode>(s.status));
    out.mutable_status()->set_message(s.status_message);
  }
}

}  // namespace

std::string EncodeExportRequest(const std::vector<Span>& spans, const std::string& service_name,
                                const std::vector<Attribute>& resource_attributes) {
  otlp::ExportTraceServiceRequest request;
  otlp::ResourceSpans* rs = request.add_resource_spans();
  AddAttribute({"service.name", service_name}, *rs->mutable_resource()->add_attributes());
  for (const Attribute& a : resource_attributes) {
    AddAttribute(a, *rs->mutable_resource()->add_attributes());
  }
  otlp::ScopeSpans* scope = rs->add_scope_spans();
  scope->mutable_scope()->set_name("kiln");
  scope->mutable_scope()->set_version(KILN_VERSION);
  for (const Span& s : spans) FillSpan(s, *scope->add_spans());
  return request.SerializeAsString();
}

}  // namespace kiln::telemetry
