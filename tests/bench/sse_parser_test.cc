#include "http/client/sse_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/error.h"

namespace kiln::http {
namespace {

std::vector<SseEvent> ParseInPieces(const std::string& stream, size_t piece) {
  SseParser parser;
  std::vector<SseEvent> events;
  auto collect = [&](const SseEvent& e) { events.push_back(e); };
  for (size_t i = 0; i < stream.size(); i += piece) parser.Feed(stream.substr(i, piece), collect);
  parser.Finish(collect);
  return events;
}

std::vector<std::string> Data(const std::vector<SseEvent>& events) {
  std::vector<std::string> out;
  for (const SseEvent& e : events) out.push_back(e.data);
  return out;
}

TEST(SseParser, BothDataFramingsAndDone) {
  const std::string stream = "data: {\"a\":1}\n\ndata:{\"b\":2}\n\ndata:[DONE]\n\n";
  EXPECT_EQ(Data(ParseInPieces(stream, 1000)),
            (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "[DONE]"}));
}

TEST(SseParser, AnyChunkingGivesTheSameEvents) {
  const std::string stream =
      "data: one\r\n\r\n: keep-alive comment\r\n\r\nevent: update\r\ndata: two\r\ndata: "
      "lines\r\n\r\n"
      "id: 7\rdata:  three\r\rdata: [DONE]\n\n";
  const std::vector<std::string> expected = {"one", "two\nlines", " three", "[DONE]"};
  for (size_t piece : {1, 2, 3, 5, 7, 64, 4096}) {
    SCOPED_TRACE(piece);
    std::vector<SseEvent> events = ParseInPieces(stream, piece);
    EXPECT_EQ(Data(events), expected);
    ASSERT_EQ(events.size(), 4u);
    EXPECT_EQ(events[1].event, "update");
    EXPECT_EQ(events[2].id, "7");
    EXPECT_EQ(events[3].event, "");
  }
}

TEST(SseParser, CommentsAreCountedNotDelivered) {
  SseParser parser;
  std::vector<SseEvent> events;
  parser.Feed(":\n\n: ping\n\ndata: x\n\n", [&](const SseEvent& e) { events.push_back(e); });
  EXPECT_EQ(Data(events), std::vector<std::string>{"x"});
  EXPECT_EQ(parser.comment_count(), 2u);
}

TEST(SseParser, LastEventWithoutBlankLineIsFlushedAtFinish) {
  EXPECT_EQ(Data(ParseInPieces("data: a\n\ndata: [DONE]\n", 3)),
            (std::vector<std::string>{"a", "[DONE]"}));
  EXPECT_EQ(Data(ParseInPieces("data: a\n\ndata: [DONE]", 4)),
            (std::vector<std::string>{"a", "[DONE]"}));
}

TEST(SseParser, ByteOrderMarkAndFieldsWithoutValue) {
  EXPECT_EQ(Data(ParseInPieces("\xEF\xBB\xBF"
                               "data: a\n\ndata\n\n",
                               1)),
            (std::vector<std::string>{"a", ""}));
}

TEST(SseParser, EmptyEventsAreNotDispatched) {
  EXPECT_TRUE(ParseInPieces("\n\n\nevent: x\n\nretry: 10\n\n", 2).empty());
}

TEST(SseParser, OverlongLineThrows) {
  SseParser parser(16);
  EXPECT_THROW(parser.Feed(std::string(64, 'x'), [](const SseEvent&) {}), Error);
}

}  // namespace
}  // namespace kiln::http
