// Flags shared by kiln serve, launch and export for logs and traces, in TGI's names:
// --json-output (env JSON_OUTPUT), --otlp-endpoint (env OTLP_ENDPOINT), --otlp-service-name
// (env OTLP_SERVICE_NAME), and Kiln's --log-prompts.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace kiln {

struct ObservabilityOptions {
  bool json_output = false;
  std::string otlp_endpoint;
  std::string otlp_service_name = "kiln";
  bool log_prompts = false;
};

// --json-output only (kiln export: it serves nothing, so it has no traces).
void AddLogFlags(CLI::App* cmd, ObservabilityOptions& o);
// --json-output, --otlp-endpoint, --otlp-service-name, --log-prompts.
void AddObservabilityFlags(CLI::App* cmd, ObservabilityOptions& o);
// Applies --json-output to the logger; call first in the subcommand's callback.
void ApplyLogFlags(const ObservabilityOptions& o);

}  // namespace kiln
