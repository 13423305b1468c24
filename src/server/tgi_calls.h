// TGI response shapes of a generation call: /generate (and POST /, whose body is an array)
// and /generate_stream.
#pragma once

#include <memory>
#include <string>

#include "server/generation_call.h"

namespace kiln {

struct TgiCallOptions {
  std::string inputs;  // prepended when return_full_text
  bool details = false;
  bool return_full_text = false;
  bool do_sample = false;     // details.seed is null for greedy
  bool compat_array = false;  // POST /: [GenerateResponse]
  int32_t input_length = 0;
};

class TgiGenerateCall : public GenerationCall {
 public:
  TgiGenerateCall(ServerState& state, Reply reply, Admission::Permit permit,
                  Clock::time_point arrival, TgiCallOptions options);

 protected:
  void OnEvent(int32_t, const GenerationEvent&) override {}
  void OnAllFinished() override;

 private:
  api::SequenceResult Result(int32_t index) const;
  int32_t BestChoice() const;  // highest mean token logprob (TGI's best_of rule)
  http::Headers TimingHeaders() const;
  TgiCallOptions options_;
};

class TgiStreamCall : public GenerationCall {
 public:
  TgiStreamCall(ServerState& state, Reply reply, Admission::Permit permit,
                Clock::time_point arrival, TgiCallOptions options);

 protected:
  void OnEvent(int32_t index, const GenerationEvent& event) override;
  void OnAllFinished() override {}

 private:
  TgiCallOptions options_;
  int32_t frames_ = 0;
};

}  // namespace kiln
