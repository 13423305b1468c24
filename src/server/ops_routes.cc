// Operational routes: health, info, metrics, OpenAPI document and its viewer.
#include "api/api_error.h"
#include "api/json_output.h"
#include "server/openapi.h"
#include "server/routes.h"
#include "telemetry/exporter_metrics.h"
#include "util/error.h"

namespace kiln {

namespace {

// The Hub's pipeline tag of what the server runs.
const char* PipelineTag(const ServerState& s) {
  if (s.encoder == nullptr) return "text-generation";
  switch (s.encoder->model_config().head) {
    case EncoderHead::kSequenceClassification:
      return "text-classification";
    case EncoderHead::kQuestionAnswering:
      return "question-answering";
    case EncoderHead::kNone:
      break;
  }
  return "feature-extraction";
}

}  // namespace

void HandleHealth(RouteContext& ctx) {
  if (ctx.state.draining) {
    return RespondJson(ctx.reply, 503,
                       api::TgiErrorJson(api::ApiError(503, "healthcheck", "unhealthy")));
  }
  RespondText(ctx.reply, 200, "", "");
}

void HandleInfo(RouteContext& ctx) {
  const ServerConfig& c = ctx.state.config;
  nlohmann::json info = {{"model_id", c.model_id},
                         {"model_sha", nullptr},
                         {"model_pipeline_tag", PipelineTag(ctx.state)},
                         {"model_device_type", "cpu"},
                         {"max_concurrent_requests", c.max_concurrent_requests},
                         {"max_queue", c.max_queue},
                         {"max_best_of", c.limits.max_best_of},
                         {"max_stop_sequences", c.limits.max_stop_sequences},
                         {"max_input_tokens", c.limits.max_input_tokens},
                         {"max_total_tokens", c.limits.max_total_tokens},
                         {"max_top_n_tokens", c.limits.max_top_n_tokens},
                         {"max_batch_size", c.max_batch_size},
                         {"max_batch_prefill_tokens", c.max_batch_prefill_tokens},
                         {"max_batch_total_tokens", c.max_batch_total_tokens},
                         {"validation_workers", c.http.io_threads},
                         {"max_client_batch_size", c.limits.max_client_batch_size},
                         {"router", "kiln"},
                         {"version", c.version},
                         {"sha", nullptr},
                         {"docker_label", nullptr}};
  if (!c.artifact_info.is_null()) info["kiln_artifact"] = c.artifact_info;
  RespondJson(ctx.reply, 200, api::DumpJson(info));
}

EngineStats BackendStats(const ServerState& s) {
  if (s.backend != nullptr) return s.backend->Stats();
  EngineStats e;
  if (s.encoder != nullptr) {
    EncoderEngineStats enc = s.encoder->Stats();
    e.queued = enc.queued;
    e.running = enc.running;
    e.steps = enc.batches;
    e.prompt_tokens = enc.tokens;
    e.cores = std::move(enc.cores);
    e.core_cpu_seconds = std::move(enc.core_cpu_seconds);
  }
  return e;
}

void AppendEncoderMetrics(std::string& text, const EncoderEngineStats& st) {
  auto counter = [&](const char* name, const char* help, int64_t v) {
    text += StrCat("# HELP ", name, " ", help, "\n# TYPE ", name, " counter\n", name, " ", v, "\n");
  };
  counter("kiln_encoder_batches_total", "Forward passes the encoder ran", st.batches);
  counter("kiln_encoder_sequences_total", "Sequences the encoder ran", st.requests);
  counter("kiln_encoder_tokens_total", "Tokens the encoder ran", st.tokens);
  text += StrCat("# HELP kiln_encoder_queue_size Sequences waiting for the encoder\n",
                 "# TYPE kiln_encoder_queue_size gauge\nkiln_encoder_queue_size ", st.queued, "\n");
}

std::string RenderMetrics(ServerState& s) {
  ServerGauges g;
  g.in_flight = s.admission.in_flight();
  g.admission_capacity = s.admission.capacity();
  g.max_batch_total_tokens = s.config.max_batch_total_tokens;
  g.connections = s.connection_count ? static_cast<int64_t>(s.connection_count()) : 0;
  g.draining = s.draining;
  std::string text = s.metrics.Render(BackendStats(s), g);
  if (s.encoder != nullptr) AppendEncoderMetrics(text, s.encoder->Stats());
  if (s.spans != nullptr) telemetry::AppendExporterMetrics(text, s.spans->counters());
  return text;
}

void HandleMetrics(RouteContext& ctx) {
  ServerState& s = ctx.state;
  std::string text = s.merged_metrics ? s.merged_metrics() : RenderMetrics(s);
  RespondText(ctx.reply, 200, "text/plain; version=0.0.4; charset=utf-8", std::move(text));
}

void HandleOpenApi(RouteContext& ctx) {
  RespondJson(ctx.reply, 200, OpenApiDocument(ctx.state.config.version));
}

void HandleDocs(RouteContext& ctx) {
  // Swagger UI from a CDN, reading our document: nothing to serve locally but the JSON.
  static const char kPage[] = R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Kiln API</title>
<link rel="stylesheet" href="https://unpkg.com/swagger-ui-dist@5/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"><p>The OpenAPI document is at <a href="/api-doc/openapi.json">/api-doc/openapi.json</a>.</p></div>
<script src="https://unpkg.com/swagger-ui-dist@5/swagger-ui-bundle.js"></script>
<script>
if (window.SwaggerUIBundle) {
  window.ui = SwaggerUIBundle({url: "/api-doc/openapi.json", dom_id: "#swagger-ui"});
}
</script>
</body>
</html>
)";
  RespondText(ctx.reply, 200, "text/html; charset=utf-8", kPage);
}

}  // namespace kiln
