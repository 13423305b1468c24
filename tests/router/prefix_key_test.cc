#include "router/prefix_key.h"

#include <gtest/gtest.h>

#include <string>

namespace kiln {
namespace {

TEST(PromptPrefixKey, SamePrefixSameKey) {
  const auto a =
      PromptPrefixKey(R"({"inputs":"You are a helpful assistant. Q1","parameters":{}})", 20);
  const auto b = PromptPrefixKey(
      R"({"parameters":{"seed":1},"inputs":"You are a helpful assistant. Q2"})", 20);
  const auto c = PromptPrefixKey(R"({"inputs":"Something else entirely, Q1"})", 20);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
}

TEST(PromptPrefixKey, OpenAiShapes) {
  const auto chat1 = PromptPrefixKey(
      R"({"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"A"}]})",
      14);
  const auto chat2 = PromptPrefixKey(
      R"({"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"B"}]})",
      14);
  const auto chat3 = PromptPrefixKey(R"({"messages":[{"role":"user","content":"Be brief."}]})", 14);
  ASSERT_TRUE(chat1 && chat2 && chat3);
  EXPECT_EQ(*chat1, *chat2);
  EXPECT_NE(*chat1, *chat3);  // the role is part of the prefix
  const auto list = PromptPrefixKey(R"({"prompt":["Once upon","x"]})", 64);
  const auto one = PromptPrefixKey(R"({"prompt":"Once upon"})", 64);
  ASSERT_TRUE(list && one);
  EXPECT_EQ(*list, *one);
}

TEST(PromptPrefixKey, NoPromptNoKey) {
  EXPECT_FALSE(PromptPrefixKey("not json", 16));
  EXPECT_FALSE(PromptPrefixKey("[1,2]", 16));
  EXPECT_FALSE(PromptPrefixKey(R"({"model":"m"})", 16));
  EXPECT_FALSE(PromptPrefixKey("", 16));
  // Deeper than any request a replica accepts: refused before the recursive parser runs.
  EXPECT_FALSE(PromptPrefixKey(std::string(100000, '['), 16));
  EXPECT_FALSE(PromptPrefixKey("{\"inputs\":" + std::string(100, '[') + "]}", 16));
}

}  // namespace
}  // namespace kiln
