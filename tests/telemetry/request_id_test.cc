#include "telemetry/request_id.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kiln::telemetry {
namespace {

bool IsLowerHex(const std::string& s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

TEST(RequestId, KeepsPrintableAsciiIds) {
  const std::vector<std::string> good = {
      "a",
      "req-123",
      "0f8fad5b-d9cb-469f-a165-70867728950e",
      "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",  // every printable punctuation mark
      std::string(kMaxRequestIdLength, 'x'),
  };
  for (const std::string& id : good) {
    EXPECT_TRUE(IsAcceptableRequestId(id)) << id;
    EXPECT_EQ(RequestIdFor(&id), id);
  }
}

TEST(RequestId, ReplacesUnsafeIds) {
  const std::vector<std::string> bad = {
      "",
      std::string(kMaxRequestIdLength + 1, 'x'),
      "has space",
      "tab\there",
      "line\r\nInjected: header",
      "nul" + std::string(1, '\0'),
      "bell\a",
      "del\x7f",
      "caf\xc3\xa9",  // UTF-8
      "\xff\xfe",     // not UTF-8 at all
      " leading",
      "trailing ",
  };
  for (const std::string& id : bad) {
    EXPECT_FALSE(IsAcceptableRequestId(id)) << id;
    const std::string replaced = RequestIdFor(&id);
    EXPECT_NE(replaced, id);
    EXPECT_EQ(replaced.size(), 32u);
    EXPECT_TRUE(IsLowerHex(replaced)) << replaced;
  }
}

TEST(RequestId, NoneSentGetsANewOne) {
  const std::string a = RequestIdFor(nullptr), b = RequestIdFor(nullptr);
  EXPECT_EQ(a.size(), 32u);
  EXPECT_TRUE(IsLowerHex(a));
  EXPECT_TRUE(IsAcceptableRequestId(a));
  EXPECT_NE(a, b);
  EXPECT_NE(NewRequestId(), NewRequestId());
}

}  // namespace
}  // namespace kiln::telemetry
