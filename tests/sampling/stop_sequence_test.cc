#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sampling/stop_sequence_matcher.h"

namespace kiln {
namespace {

struct Outcome {
  std::string text;     // everything emitted
  int stopped_at = -1;  // index of the piece that completed a stop sequence
};

Outcome Feed(const std::vector<std::string>& stops, const std::vector<std::string>& pieces,
             int min_pieces = 0) {
  StopSequenceMatcher m(stops);
  Outcome run;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const bool allow = static_cast<int>(i) + 1 >= min_pieces;
    if (m.Push(pieces[i], allow, run.text)) {
      run.stopped_at = static_cast<int>(i);
      return run;
    }
  }
  m.Flush(run.text);
  return run;
}

TEST(StopSequenceMatcher, MatchesAcrossPiecesAndDropsTheStop) {
  Outcome r = Feed({"STOP"}, {"Hello ", "ST", "O", "P and more"});
  EXPECT_EQ(r.text, "Hello ");
  EXPECT_EQ(r.stopped_at, 3);
}

TEST(StopSequenceMatcher, HoldsBackOnlyWhatCouldStillMatch) {
  const std::vector<std::string> stops = {"abc"};
  StopSequenceMatcher m(stops);
  std::string out;
  EXPECT_FALSE(m.Push("xxab", true, out));
  EXPECT_EQ(out, "xx");  // "ab" may start "abc"
  EXPECT_FALSE(m.Push("d", true, out));
  EXPECT_EQ(out, "xxabd");  // it did not
  EXPECT_FALSE(m.Push("a", true, out));
  m.Flush(out);
  EXPECT_EQ(out, "xxabda");
}

TEST(StopSequenceMatcher, EarliestOfSeveralStopsWins) {
  Outcome r = Feed({"world", "lo w"}, {"Hel", "lo", " wor", "ld"});
  EXPECT_EQ(r.text, "Hel");
  EXPECT_EQ(r.stopped_at, 2);
}

TEST(StopSequenceMatcher, MultibyteStopAndText) {
  // "é" = C3 A9, "€" = E2 82 AC. Pieces arrive as complete characters from the detokenizer.
  Outcome r = Feed({"€!"}, {"caf", "é ", "€", "5", " €", "!", "tail"});
  EXPECT_EQ(r.text, "café €5 ");
  EXPECT_EQ(r.stopped_at, 5);
  const std::vector<std::string> stops = {"é€"};
  StopSequenceMatcher m(stops);
  std::string out;
  EXPECT_FALSE(m.Push("aé", true, out));
  EXPECT_EQ(out, "a");  // the held suffix starts on a character boundary
  EXPECT_FALSE(m.Push("b", true, out));
  EXPECT_EQ(out, "aéb");
}

TEST(StopSequenceMatcher, StopInsideOnePiece) {
  Outcome r = Feed({"\n\n"}, {"line one\n\nline two"});
  EXPECT_EQ(r.text, "line one");
}

TEST(StopSequenceMatcher, MatchesBeforeMinTokensPassThrough) {
  // The first "ab" completes at piece 1, before min (3 pieces): it is text. The second counts.
  Outcome r = Feed({"ab"}, {"a", "b", "x", "a", "b", "c"}, 3);
  EXPECT_EQ(r.text, "abx");
  EXPECT_EQ(r.stopped_at, 4);
  // A stop that straddles the min_tokens boundary completes after it and counts.
  r = Feed({"abc"}, {"a", "b", "c"}, 3);
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(r.stopped_at, 2);
}

TEST(StopSequenceMatcher, NoStopsPassesEverythingThrough) {
  Outcome r = Feed({}, {"a", "b"});
  EXPECT_EQ(r.text, "ab");
  EXPECT_EQ(r.stopped_at, -1);
}

}  // namespace
}  // namespace kiln
