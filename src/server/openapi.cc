#include "server/openapi.h"

#include <nlohmann/json.hpp>

namespace kiln {
namespace {

using nlohmann::json;

json Ref(const char* name) { return {{"$ref", std::string("#/components/schemas/") + name}}; }

json JsonBody(const char* schema) {
  return {{"required", true}, {"content", {{"application/json", {{"schema", Ref(schema)}}}}}};
}

json JsonResponse(const char* description, const json& schema) {
  return {{"description", description}, {"content", {{"application/json", {{"schema", schema}}}}}};
}

json SseResponse(const char* description, const char* schema) {
  return {{"description", description},
          {"content", {{"text/event-stream", {{"schema", Ref(schema)}}}}}};
}

// The error responses every generation route can give, in TGI's shape or OpenAI's.
json Errors(const char* schema) {
  json out;
  for (const auto& [code, text] : {std::pair{"400", "Body is not valid JSON"},
                                   {"401", "Missing or wrong API key"},
                                   {"413", "Body over --payload-limit"},
                                   {"422", "Input validation error"},
                                   {"424", "Generation error"},
                                   {"429", "Model is overloaded"},
                                   {"500", "Incomplete generation"},
                                   {"503", "Server is shutting down"}}) {
    out[code] = JsonResponse(text, Ref(schema));
  }
  return out;
}

json Operation(const char* tag, const char* id, const char* summary) {
  return {{"tags", {tag}}, {"operationId", id}, {"summary", summary}};
}

json GenerationPaths() {
  json paths;
  json generate = Operation("Text Generation Inference", "generate", "Generate tokens");
  generate["requestBody"] = JsonBody("GenerateRequest");
  generate["responses"] = Errors("ErrorResponse");
  generate["responses"]["200"] = JsonResponse("Generated text", Ref("GenerateResponse"));
  paths["/generate"]["post"] = generate;

  json stream = Operation("Text Generation Inference", "generate_stream",
                          "Generate a stream of token events (SSE)");
  stream["requestBody"] = JsonBody("GenerateRequest");
  stream["responses"] = Errors("ErrorResponse");
  stream["responses"]["200"] = SseResponse("One StreamResponse per token", "StreamResponse");
  paths["/generate_stream"]["post"] = stream;

  json compat = Operation("Text Generation Inference", "compat_generate",
                          "Generate (\"stream\": true streams as /generate_stream)");
  compat["requestBody"] = JsonBody("CompatGenerateRequest");
  compat["responses"] = Errors("ErrorResponse");
  compat["responses"]["200"] =
      JsonResponse("Generated text", {{"type", "array"}, {"items", Ref("GenerateResponse")}});
  paths["/"]["post"] = compat;

  json chat = Operation("OpenAI", "chat_completions", "OpenAI chat completions");
  chat["requestBody"] = JsonBody("ChatRequest");
  chat["responses"] = Errors("OpenAiError");
  chat["responses"]["200"] = JsonResponse(
      "A chat.completion, or with stream a text/event-stream of chat.completion.chunk objects "
      "ending with `data: [DONE]`",
      Ref("ChatCompletion"));
  paths["/v1/chat/completions"]["post"] = chat;

  json completions = Operation("OpenAI", "completions", "OpenAI completions");
  completions["requestBody"] = JsonBody("CompletionRequest");
  completions["responses"] = Errors("OpenAiError");
  completions["responses"]["200"] = JsonResponse(
      "A text_completion, or with stream a text/event-stream of them ending with "
      "`data: [DONE]`",
      Ref("Completion"));
  paths["/v1/completions"]["post"] = completions;
  return paths;
}

json OperationalPaths() {
  json paths;
  json tokenize = Operation("Text Generation Inference", "tokenize", "Tokenize inputs");
  tokenize["requestBody"] = JsonBody("GenerateRequest");
  tokenize["responses"]["200"] =
      JsonResponse("Tokens", {{"type", "array"}, {"items", Ref("SimpleToken")}});
  paths["/tokenize"]["post"] = tokenize;

  json health = Operation("Text Generation Inference", "health", "Health check");
  health["responses"]["200"] = {{"description", "Ready"}};
  health["responses"]["503"] = JsonResponse("Draining before exit", Ref("ErrorResponse"));
  paths["/health"]["get"] = health;
  json ping = health;
  ping["operationId"] = "ping";
  paths["/ping"]["get"] = ping;

  json info = Operation("Text Generation Inference", "get_model_info", "Model and limits");
  info["responses"]["200"] = JsonResponse("Served model info", Ref("Info"));
  paths["/info"]["get"] = info;

  json metrics = Operation("Text Generation Inference", "metrics", "Prometheus metrics");
  metrics["responses"]["200"] = {{"description", "Prometheus text exposition"},
                                 {"content", {{"text/plain", {{"schema", {{"type", "string"}}}}}}}};
  paths["/metrics"]["get"] = metrics;

  json status = Operation("Kiln", "status", "Live status for monitors (kiln top)");
  status["responses"]["200"] = JsonResponse(
      "Model, cores' CPU seconds, memory, KV cache, sequences, cumulative token and request "
      "counts, TTFT/ITL p50/p95 over the last 60 s",
      {{"type", "object"}});
  paths["/v1/status"]["get"] = status;

  json models = Operation("OpenAI", "models", "The served model");
  models["responses"]["200"] = JsonResponse("Model list", Ref("ModelList"));
  paths["/v1/models"]["get"] = models;
  return paths;
}

json Schemas() {
  const json number = {{"type", "number"}}, integer = {{"type", "integer"}},
             boolean = {{"type", "boolean"}}, string = {{"type", "string"}};
  const json strings = {{"type", "array"}, {"items", string}};
  json s;
  s["GenerateParameters"] = {{"type", "object"},
                             {"properties",
                              {{"best_of", integer},
                               {"decoder_input_details", boolean},
                               {"details", boolean},
                               {"do_sample", boolean},
                               {"frequency_penalty", number},
                               {"max_new_tokens", integer},
                               {"repetition_penalty", number},
                               {"return_full_text", boolean},
                               {"seed", integer},
                               {"stop", strings},
                               {"temperature", number},
                               {"top_k", integer},
                               {"top_n_tokens", integer},
                               {"top_p", number},
                               {"truncate", integer},
                               {"typical_p", number},
                               {"watermark", boolean}}}};
  s["GenerateRequest"] = {
      {"type", "object"},
      {"required", {"inputs"}},
      {"properties", {{"inputs", string}, {"parameters", Ref("GenerateParameters")}}}};
  s["CompatGenerateRequest"] = s["GenerateRequest"];
  s["CompatGenerateRequest"]["properties"]["stream"] = boolean;
  s["Token"] = {{"type", "object"},
                {"properties",
                 {{"id", integer}, {"text", string}, {"logprob", number}, {"special", boolean}}}};
  s["SimpleToken"] = {
      {"type", "object"},
      {"properties", {{"id", integer}, {"text", string}, {"start", integer}, {"stop", integer}}}};
  s["Details"] = {{"type", "object"},
                  {"properties",
                   {{"finish_reason", string},
                    {"generated_tokens", integer},
                    {"seed", integer},
                    {"prefill", {{"type", "array"}, {"items", Ref("Token")}}},
                    {"tokens", {{"type", "array"}, {"items", Ref("Token")}}}}}};
  s["GenerateResponse"] = {
      {"type", "object"},
      {"properties", {{"generated_text", string}, {"details", Ref("Details")}}}};
  s["StreamResponse"] = {{"type", "object"},
                         {"properties",
                          {{"index", integer},
                           {"token", Ref("Token")},
                           {"generated_text", string},
                           {"details", {{"type", "object"}}}}}};
  s["ErrorResponse"] = {{"type", "object"},
                        {"properties", {{"error", string}, {"error_type", string}}}};
  s["OpenAiError"] = {
      {"type", "object"},
      {"properties",
       {{"error",
         {{"type", "object"},
          {"properties",
           {{"message", string}, {"type", string}, {"param", string}, {"code", string}}}}}}}};
  json sampling = {
      {"model", string},
      {"max_tokens", integer},
      {"max_completion_tokens", integer},
      {"temperature", number},
      {"top_p", number},
      {"top_k", integer},
      {"min_p", number},
      {"presence_penalty", number},
      {"frequency_penalty", number},
      {"repetition_penalty", number},
      {"seed", integer},
      {"n", integer},
      {"stop", {{"oneOf", {string, strings}}}},
      {"stop_token_ids", {{"type", "array"}, {"items", integer}}},
      {"ignore_eos", boolean},
      {"min_tokens", integer},
      {"logit_bias", {{"type", "object"}}},
      {"stream", boolean},
      {"stream_options",
       {{"type", "object"},
        {"properties", {{"include_usage", boolean}, {"continuous_usage_stats", boolean}}}}}};
  s["ChatRequest"] = {{"type", "object"}, {"required", {"messages"}}, {"properties", sampling}};
  s["ChatRequest"]["properties"]["messages"] = {
      {"type", "array"},
      {"items", {{"type", "object"}, {"properties", {{"role", string}, {"content", string}}}}}};
  s["ChatRequest"]["properties"]["logprobs"] = boolean;
  s["ChatRequest"]["properties"]["top_logprobs"] = integer;
  s["CompletionRequest"] = {{"type", "object"}, {"required", {"prompt"}}, {"properties", sampling}};
  s["CompletionRequest"]["properties"]["prompt"] = {{"oneOf", {string, strings}}};
  s["CompletionRequest"]["properties"]["echo"] = boolean;
  s["CompletionRequest"]["properties"]["logprobs"] = integer;
  json usage = {
      {"type", "object"},
      {"properties",
       {{"prompt_tokens", integer}, {"completion_tokens", integer}, {"total_tokens", integer}}}};
  s["ChatCompletion"] = {{"type", "object"},
                         {"properties",
                          {{"id", string},
                           {"object", string},
                           {"created", integer},
                           {"model", string},
                           {"choices", {{"type", "array"}}},
                           {"usage", usage}}}};
  s["Completion"] = s["ChatCompletion"];
  s["Info"] = {{"type", "object"},
               {"properties",
                {{"model_id", string},
                 {"max_concurrent_requests", integer},
                 {"max_best_of", integer},
                 {"max_stop_sequences", integer},
                 {"max_input_tokens", integer},
                 {"max_total_tokens", integer},
                 {"max_client_batch_size", integer},
                 {"router", string},
                 {"version", string}}}};
  s["ModelList"] = {{"type", "object"},
                    {"properties", {{"object", string}, {"data", {{"type", "array"}}}}}};
  return s;
}

}  // namespace

std::string OpenApiDocument(const std::string& version) {
  json doc = {{"openapi", "3.0.3"},
              {"info",
               {{"title", "Kiln"},
                {"description", "LLM inference server for CPUs: TGI- and OpenAI-compatible API"},
                {"license", {{"name", "Apache 2.0"}}},
                {"version", version}}}};
  json paths = GenerationPaths();
  paths.update(OperationalPaths());
  doc["paths"] = std::move(paths);
  doc["components"]["schemas"] = Schemas();
  doc["components"]["securitySchemes"]["bearer"] = {{"type", "http"}, {"scheme", "bearer"}};
  return doc.dump();
}

}  // namespace kiln
