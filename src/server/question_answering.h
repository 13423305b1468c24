// Extractive question answering as transformers' question-answering pipeline does it: the
// context split into windows of max_seq_len tokens (doc_stride tokens shared between
// neighbours), each window read as [CLS] question [SEP] window [SEP], and the best spans
// chosen from the start/end logits: softmax over the window's context tokens (and [CLS]),
// score = p_start * p_end for start <= end < start + max_answer_len, the span widened to whole
// words of the original text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/encoder_request.h"
#include "tokenizer/pair_encoding.h"
#include "tokenizer/tokenizer.h"

namespace kiln {

struct QaWindow {
  EncodedInput input;      // the model's tokens of this window
  int64_t context_at = 0;  // index in `input` of the window's first context token
  int64_t first = 0;       // index of that token among the context's tokens
  int64_t count = 0;       // context tokens in the window
};

struct QaPlan {
  std::vector<QaWindow> windows;
  std::vector<WordSpan> context;  // every context token with its word's bytes
};

// kiln::api::ApiError (422) when the question leaves no room for context in max_seq_len, or
// doc_stride is not below the room left.
QaPlan PlanQuestionAnswering(const Tokenizer& tokenizer, const api::QaRequest& request,
                             int64_t model_max_tokens);

struct QaAnswer {
  double score = 0;
  int64_t start = 0, end = 0;  // characters (code points) of the context, end exclusive
  std::string answer;
};

// `logits[w]`: window w's start/end logits [n_w, 2]. The top_k answers, best first; answers
// with the same text (ASCII case aside) are one, their scores added, as the pipeline does.
std::vector<QaAnswer> SelectAnswers(const QaPlan& plan, const api::QaRequest& request,
                                    const std::string& context,
                                    const std::vector<std::vector<float>>& logits);

}  // namespace kiln
