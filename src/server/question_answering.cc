#include "server/question_answering.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "api/api_error.h"
#include "util/error.h"

namespace kiln {
namespace {

// Characters (code points) before byte `offset` of UTF-8 `text`: Python's string indices.
int64_t CharIndex(const std::string& text, size_t offset) {
  int64_t n = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if ((static_cast<uint8_t>(text[i]) & 0xC0) != 0x80) ++n;
  }
  return n;
}

// Softmax of the logits column `col` over the desired tokens; the others get exp(-10000) = 0,
// as the pipeline masks them with -10000 before its softmax.
std::vector<double> MaskedSoftmax(const std::vector<float>& logits, int col,
                                  const std::vector<bool>& desired) {
  const size_t n = desired.size();
  std::vector<double> p(n);
  double max = -1e300;
  for (size_t i = 0; i < n; ++i) {
    p[i] = desired[i] ? logits[2 * i + col] : -10000.0;
    max = std::max(max, p[i]);
  }
  double sum = 0;
  for (double& v : p) sum += v = std::exp(v - max);
  for (double& v : p) v /= sum;
  return p;
}

std::string AsciiLower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The same answer text (case aside) found again, in another window or another place, adds its
// score to the first one's, as the pipeline merges them.
void AddAnswer(std::vector<QaAnswer>& answers, QaAnswer a) {
  const std::string key = AsciiLower(a.answer);
  for (QaAnswer& seen : answers) {
    if (AsciiLower(seen.answer) == key) {
      seen.score += a.score;
      return;
    }
  }
  answers.push_back(std::move(a));
}

}  // namespace

QaPlan PlanQuestionAnswering(const Tokenizer& tokenizer, const api::QaRequest& r,
                             int64_t model_max_tokens) {
  const SpecialLayout layout = tokenizer.Layout();
  const std::vector<int32_t> question = tokenizer.Encode(r.question, false);
  QaPlan plan;
  plan.context = tokenizer.EncodeWords(r.context);
  const int64_t max_len = std::min<int64_t>(r.max_seq_len, model_max_tokens);
  const int64_t room = max_len - static_cast<int64_t>(question.size()) -
                       static_cast<int64_t>(NumSpecialTokens(layout, /*pair=*/true));
  if (room <= 0) {
    throw api::ValidationError(StrCat("the question (", question.size(),
                                      " tokens) leaves no room "
                                      "for the context in max_seq_len ",
                                      max_len),
                               "question");
  }
  // The pipeline's default stride: half the window, at most 128.
  const int64_t stride = r.doc_stride >= 0 ? r.doc_stride : std::min<int64_t>(max_len / 2, 128);
  const auto n = static_cast<int64_t>(plan.context.size());
  if (stride >= room && n > room) {
    throw api::ValidationError(StrCat("doc_stride ", stride, " must be below the ", room,
                                      " context tokens a window holds"),
                               "doc_stride");
  }
  std::vector<int32_t> ids;
  for (int64_t start = 0;; start += room - stride) {
    const int64_t stop = std::min(start + room, n);
    ids.clear();
    for (int64_t i = start; i < stop; ++i) ids.push_back(plan.context[i].id);
    QaWindow w;
    w.input = AssemblePair(layout, question, ids);
    w.context_at = static_cast<int64_t>(layout.pair_before.size() + question.size() +
                                        layout.pair_middle.size());
    w.first = start;
    w.count = stop - start;
    plan.windows.push_back(std::move(w));
    if (stop >= n) break;
  }
  return plan;
}

std::vector<QaAnswer> SelectAnswers(const QaPlan& plan, const api::QaRequest& r,
                                    const std::string& context,
                                    const std::vector<std::vector<float>>& logits) {
  KILN_CHECK(logits.size() == plan.windows.size(), "QA: logits for ", logits.size(), " of ",
             plan.windows.size(), " windows");
  std::vector<QaAnswer> answers;
  double min_null = 1e6;
  for (size_t wi = 0; wi < plan.windows.size(); ++wi) {
    const QaWindow& w = plan.windows[wi];
    const size_t n = w.input.ids.size();
    KILN_CHECK(logits[wi].size() == 2 * n, "QA: window logits do not match its tokens");
    // Desired: the window's context tokens, and the first token ([CLS]), whose score stands
    // for "no answer".
    std::vector<bool> desired(n, false);
    for (int64_t i = 0; i < w.count; ++i) desired[w.context_at + i] = true;
    desired[0] = true;
    std::vector<double> ps = MaskedSoftmax(logits[wi], 0, desired);
    std::vector<double> pe = MaskedSoftmax(logits[wi], 1, desired);
    if (r.handle_impossible_answer) min_null = std::min(min_null, ps[0] * pe[0]);
    ps[0] = pe[0] = 0;
    struct Span {
      double score;
      size_t s, e;
    };
    std::vector<Span> spans;
    for (size_t s = 0; s < n; ++s) {
      if (!desired[s]) continue;
      for (size_t e = s; e < n && e < s + static_cast<size_t>(r.max_answer_len); ++e) {
        if (desired[e]) spans.push_back({ps[s] * pe[e], s, e});
      }
    }
    // Best first; among equal scores the first in (start, end) order, as numpy's argmax. The
    // pipeline keeps 2 top_k + 10 per window, since widening to words may merge some.
    std::stable_sort(spans.begin(), spans.end(),
                     [](const Span& a, const Span& b) { return a.score > b.score; });
    const size_t keep = 2 * static_cast<size_t>(r.top_k) + 10;
    if (spans.size() > keep) spans.resize(keep);
    for (const Span& sp : spans) {
      QaAnswer a;
      a.score = sp.score;
      if (sp.s != 0 && sp.e != 0) {  // else [CLS]: no word of the context, the empty answer
        const WordSpan& first = plan.context[w.first + (sp.s - w.context_at)];
        const WordSpan& last = plan.context[w.first + (sp.e - w.context_at)];
        a.start = CharIndex(context, first.begin);
        a.end = CharIndex(context, last.end);
        a.answer = context.substr(first.begin, last.end > first.begin ? last.end - first.begin : 0);
      }
      AddAnswer(answers, std::move(a));
    }
  }
  if (r.handle_impossible_answer) answers.push_back(QaAnswer{min_null, 0, 0, ""});
  std::stable_sort(answers.begin(), answers.end(),
                   [](const QaAnswer& a, const QaAnswer& b) { return a.score > b.score; });
  if (answers.size() > static_cast<size_t>(r.top_k)) answers.resize(r.top_k);
  return answers;
}

}  // namespace kiln
