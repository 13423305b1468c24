// Span selection of /qa (question_answering.h) on hand-made windows and logits: the best
// p_start * p_end span inside the context, widened to its words; equal answers merged with
// their scores added; the empty answer; top_k; character (not byte) offsets.
#include "server/question_answering.h"

#include <gtest/gtest.h>

#include <cmath>

#include "util/error.h"

namespace kiln {
namespace {

// Context "héllo big world": words [0,6) "héllo" (é is 2 bytes), [7,10) "big", [11,16) "world".
// Tokens: "hé" "##llo" "big" "world" -> words 0 0 1 2.
QaPlan OneWindowPlan() {
  QaPlan plan;
  plan.context = {{10, 0, 0, 6}, {11, 0, 0, 6}, {12, 1, 7, 10}, {13, 2, 11, 16}};
  QaWindow w;
  // [CLS] q [SEP] c0 c1 c2 c3 [SEP]
  w.input.ids = {1, 5, 2, 10, 11, 12, 13, 2};
  w.input.type_ids = {0, 0, 0, 1, 1, 1, 1, 1};
  w.context_at = 3;
  w.first = 0;
  w.count = 4;
  plan.windows.push_back(w);
  return plan;
}

std::vector<float> Logits(const std::vector<float>& start, const std::vector<float>& end) {
  std::vector<float> out;
  for (size_t i = 0; i < start.size(); ++i) {
    out.push_back(start[i]);
    out.push_back(end[i]);
  }
  return out;
}

const std::string kContext = "h\xc3\xa9llo big world";

TEST(QuestionAnswering, BestSpanWidenedToWords) {
  api::QaRequest r;
  // Start at "##llo" (mid-word), end at "big": widened to "héllo big".
  const auto logits = Logits({0, 9, 9, 0, 5, 0, 0, 9}, {0, 9, 9, 0, 0, 5, 0, 9});
  std::vector<QaAnswer> a = SelectAnswers(OneWindowPlan(), r, kContext, {logits});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].answer, "h\xc3\xa9llo big");
  EXPECT_EQ(a[0].start, 0);
  EXPECT_EQ(a[0].end, 9);  // characters: é counts once
  // The question and special tokens' high logits are masked out of the softmax.
  const double denom = std::exp(5.0) + 4;  // 4 context tokens + [CLS]; the rest masked
  const double p = std::exp(5.0) / denom, p0 = 1.0 / denom;
  // Spans (hé, big) and (##llo, big) widen to the same text: one answer, scores added.
  EXPECT_NEAR(a[0].score, p * p + p0 * p, 1e-9);
}

TEST(QuestionAnswering, SameTextMergesAndTopK) {
  api::QaRequest r;
  r.top_k = 3;
  // "hé" and "##llo" both widen to "héllo": one answer, the scores added.
  const auto logits = Logits({0, 0, 0, 3, 3, 0, 0, 0}, {0, 0, 0, 3, 3, 0, 1, 0});
  std::vector<QaAnswer> a = SelectAnswers(OneWindowPlan(), r, kContext, {logits});
  ASSERT_GE(a.size(), 2u);
  EXPECT_EQ(a[0].answer, "h\xc3\xa9llo");
  for (size_t i = 1; i < a.size(); ++i) EXPECT_NE(a[i].answer, a[0].answer);
  for (size_t i = 1; i < a.size(); ++i) EXPECT_LE(a[i].score, a[i - 1].score);
}

TEST(QuestionAnswering, ImpossibleAnswerAndMaxLength) {
  api::QaRequest r;
  r.handle_impossible_answer = true;
  // [CLS] is the most likely start and end: the empty answer wins.
  std::vector<QaAnswer> a = SelectAnswers(
      OneWindowPlan(), r, kContext, {Logits({8, 0, 0, 1, 0, 0, 0, 0}, {8, 0, 0, 0, 0, 0, 1, 0})});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].answer, "");
  EXPECT_EQ(a[0].start, 0);
  EXPECT_EQ(a[0].end, 0);
  // max_answer_len 1: only one-token spans.
  api::QaRequest one;
  one.max_answer_len = 1;
  a = SelectAnswers(OneWindowPlan(), one, kContext,
                    {Logits({0, 0, 0, 0, 0, 6, 0, 0}, {0, 0, 0, 0, 0, 0, 6, 0})});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(a[0].answer == "big" || a[0].answer == "world") << a[0].answer;
}

TEST(QuestionAnswering, WindowCountMustMatch) {
  api::QaRequest r;
  EXPECT_THROW(SelectAnswers(OneWindowPlan(), r, kContext, {}), Error);
  EXPECT_THROW(SelectAnswers(OneWindowPlan(), r, kContext, {{1.0f}}), Error);
}

}  // namespace
}  // namespace kiln
