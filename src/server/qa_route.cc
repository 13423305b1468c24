// POST /qa: {"question", "context", top_k?, doc_stride?, max_answer_len?, max_seq_len?,
// handle_impossible_answer?} -> {"answer", "score", "start", "end"} (a list of them when
// top_k > 1), as transformers' question-answering pipeline returns them.
#include "api/api_error.h"
#include "api/json_input.h"
#include "api/json_output.h"
#include "server/encoder_call.h"
#include "server/question_answering.h"
#include "server/routes.h"
#include "util/error.h"

namespace kiln {

void HandleQa(RouteContext& ctx) {
  EncoderEngine* enc = ctx.state.encoder;
  if (enc == nullptr || enc->model_config().head != EncoderHead::kQuestionAnswering) {
    throw api::ApiError(400, "validation",
                        StrCat("/qa needs an extractive question-answering model "
                               "(*ForQuestionAnswering); model '",
                               ctx.state.config.model_id, "' is not one"));
  }
  const nlohmann::json body = api::ParseJsonObject(ctx.request.body);
  api::QaRequest req = api::ParseQaRequest(body);
  auto plan = std::make_shared<QaPlan>(PlanQuestionAnswering(RequireTokenizer(ctx.state), req,
                                                             enc->model_config().max_input_tokens));
  std::vector<EncoderRequest> inputs;
  for (const QaWindow& w : plan->windows) {
    EncoderRequest r;
    r.tokens = w.input.ids;
    r.type_ids = w.input.type_ids;
    r.task = EncoderTask::kSpans;
    inputs.push_back(std::move(r));
  }
  RunEncoderCall(
      ctx.state, ctx.reply, Admit(ctx.state), std::move(inputs),
      [plan, req = std::move(req)](std::vector<EncoderResult>& results) {
        std::vector<std::vector<float>> logits;
        for (EncoderResult& r : results) logits.push_back(std::move(r.values));
        nlohmann::json out = nlohmann::json::array();
        for (const QaAnswer& a : SelectAnswers(*plan, req, req.context, logits)) {
          out.push_back(
              {{"score", a.score}, {"start", a.start}, {"end", a.end}, {"answer", a.answer}});
        }
        // One answer is returned alone, whatever top_k asked for (as the pipeline).
        if (out.size() == 1) return api::DumpJson(out[0]);
        return api::DumpJson(out);
      });
}

}  // namespace kiln
