#include "cli/observability_flags.h"

#include "util/log.h"

namespace kiln {

void AddLogFlags(CLI::App* cmd, ObservabilityOptions& o) {
  cmd->add_flag("--json-output", o.json_output,
                "Log one JSON object per line (timestamp, level, target, message, fields) "
                "instead of text; level from LOG_LEVEL or KILN_LOG")
      ->envname("JSON_OUTPUT");
}

void AddObservabilityFlags(CLI::App* cmd, ObservabilityOptions& o) {
  AddLogFlags(cmd, o);
  cmd->add_option("--otlp-endpoint", o.otlp_endpoint,
                  "Send OpenTelemetry spans of every request over OTLP/HTTP (protobuf) to this "
                  "collector, e.g. http://127.0.0.1:4318 (/v1/traces is added to a bare URL)")
      ->envname("OTLP_ENDPOINT");
  cmd->add_option("--otlp-service-name", o.otlp_service_name,
                  "The spans' resource attribute service.name")
      ->envname("OTLP_SERVICE_NAME")
      ->capture_default_str();
  cmd->add_flag("--log-prompts", o.log_prompts,
                "Debugging aid: access-log lines carry the request body (prompts); off by "
                "default, never for production");
}

void ApplyLogFlags(const ObservabilityOptions& o) {
  if (o.json_output) log::SetFormat(log::Format::kJson);
}

}  // namespace kiln
