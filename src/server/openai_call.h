// OpenAI response shapes of a generation call: chat.completion / text_completion, or their
// chunk streams ending with `data: [DONE]`, with usage (include_usage, continuous_usage_stats),
// logprobs and n choices.
#pragma once

#include <string>
#include <vector>

#include "api/openai_common.h"
#include "api/openai_response.h"
#include "server/generation_call.h"

namespace kiln {

struct OpenAiCallOptions {
  bool chat = true;  // chat.completion(.chunk), else text_completion
  api::StreamOptions stream;
  std::string model;
  bool logprobs = false;
  std::vector<std::string> echo_prefix;  // per prompt (completions with echo), else empty
};

class OpenAiCall : public GenerationCall {
 public:
  OpenAiCall(ServerState& state, Reply reply, Admission::Permit permit, Clock::time_point arrival,
             OpenAiCallOptions options);

 protected:
  void OnEvent(int32_t index, const GenerationEvent& event) override;
  void OnAllFinished() override;

 private:
  void RespondWhole();
  nlohmann::json TokenLogprobs(const GenerationEvent& event, int64_t text_offset) const;
  const std::string& EchoPrefix(int32_t index) const;

  OpenAiCallOptions options_;
  api::OpenAiHeader header_;
  std::string fingerprint_;
  std::vector<bool> started_;         // per choice: first chunk sent
  std::vector<int64_t> text_offset_;  // per choice: completion logprobs text_offset
  bool ended_ = false;
};

}  // namespace kiln
