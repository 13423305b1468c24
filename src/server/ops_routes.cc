// Operational routes: health, info, metrics, OpenAPI document and its viewer.
#include "api/api_error.h"
#include "api/json_output.h"
#include "server/openapi.h"
#include "server/routes.h"
#include "telemetry/exporter_metrics.h"

namespace kiln {

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
                         {"model_pipeline_tag", "text-generation"},
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

void HandleMetrics(RouteContext& ctx) {
  ServerState& s = ctx.state;
  ServerGauges g;
  g.in_flight = s.admission.in_flight();
  g.admission_capacity = s.admission.capacity();
  g.max_batch_total_tokens = s.config.max_batch_total_tokens;
  g.connections = s.connection_count ? static_cast<int64_t>(s.connection_count()) : 0;
  g.draining = s.draining;
  std::string text = s.metrics.Render(s.backend->Stats(), g);
  if (s.spans != nullptr) telemetry::AppendExporterMetrics(text, s.spans->counters());
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
