#include "bench/text_source.h"

#include <array>
#include <random>
#include <string_view>

namespace kiln::bench {
namespace {

// Frequent English words: single tokens in GPT-2/Llama-style vocabularies when space-prefixed.
constexpr std::array<std::string_view, 256> kWords = {
    "the",     "of",      "and",       "to",         "in",        "is",        "that",
    "for",     "it",      "as",        "was",        "with",      "be",        "by",
    "on",      "not",     "he",        "this",       "are",       "or",        "his",
    "from",    "at",      "which",     "but",        "have",      "an",        "had",
    "they",    "you",     "were",      "their",      "one",       "all",       "we",
    "can",     "her",     "has",       "there",      "been",      "if",        "more",
    "when",    "will",    "would",     "who",        "so",        "no",        "she",
    "other",   "its",     "may",       "these",      "what",      "them",      "than",
    "some",    "him",     "time",      "into",       "only",      "do",        "out",
    "could",   "about",   "two",       "then",       "first",     "also",      "new",
    "any",     "like",    "my",        "our",        "over",      "such",      "made",
    "after",   "most",    "very",      "many",       "must",      "before",    "through",
    "back",    "years",   "where",     "much",       "your",      "way",       "well",
    "down",    "should",  "because",   "each",       "just",      "those",     "people",
    "how",     "too",     "little",    "state",      "good",      "make",      "world",
    "still",   "own",     "see",       "men",        "work",      "long",      "here",
    "get",     "both",    "between",   "life",       "being",     "under",     "never",
    "day",     "same",    "another",   "know",       "while",     "last",      "might",
    "us",      "great",   "old",       "year",       "off",       "come",      "since",
    "against", "go",      "came",      "right",      "used",      "take",      "three",
    "house",   "use",     "during",    "without",    "again",     "place",     "around",
    "however", "home",    "small",     "found",      "thought",   "went",      "say",
    "part",    "once",    "general",   "high",       "upon",      "school",    "every",
    "does",    "got",     "left",      "number",     "course",    "war",       "until",
    "always",  "away",    "something", "fact",       "water",     "though",    "less",
    "public",  "put",     "think",     "almost",     "hand",      "enough",    "far",
    "took",    "head",    "yet",       "government", "system",    "better",    "set",
    "told",    "nothing", "night",     "end",        "why",       "called",    "eyes",
    "find",    "going",   "look",      "asked",      "later",     "knew",      "point",
    "next",    "program", "city",      "business",   "give",      "group",     "toward",
    "young",   "days",    "let",       "room",       "president", "side",      "social",
    "given",   "present", "several",   "order",      "national",  "second",    "possible",
    "rather",  "per",     "face",      "among",      "form",      "important", "often",
    "things",  "looked",  "early",     "white",      "case",      "large",     "become",
    "big",     "need",    "four",      "within",     "felt",      "along",     "children",
    "saw",     "best",    "church",    "ever",       "least",     "power",     "development",
    "light",   "thing",   "seemed",    "family"};

}  // namespace

std::string GenerateWords(uint64_t seed, int64_t words) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, kWords.size() - 1);
  std::string out;
  out.reserve(static_cast<size_t>(words) * 6);
  for (int64_t i = 0; i < words; ++i) {
    if (i > 0) out += ' ';
    out += kWords[pick(rng)];
  }
  return out;
}

}  // namespace kiln::bench
