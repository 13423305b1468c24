// Malformed tokenizer.json / tokenizer_config.json corpus: every case must fail with a
// kiln::Error whose message names the problem, never crash. Each case is a small valid file with
// one thing broken.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace kiln {
namespace {

// A minimal valid tokenizer.json with placeholders: @MODEL@, @NORM@, @PRE@, @POST@, @DEC@, @ADDED@.
std::string Make(std::string model = "", std::string norm = "null", std::string pre = "null",
                 std::string post = "null", std::string dec = "null", std::string added = "[]") {
  if (model.empty()) {
    model = R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "<s>": 3}, "merges": ["a b"]})";
  }
  return R"({"version": "1.0", "added_tokens": )" + added + R"(, "normalizer": )" + norm +
         R"(, "pre_tokenizer": )" + pre + R"(, "post_processor": )" + post + R"(, "decoder": )" +
         dec + R"(, "model": )" + model + "}";
}

// `depth` nested empty arrays.
std::string Deep(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

struct Case {
  const char* name;
  std::string json;
  const char* expect;  // substring of the error message
};

std::vector<Case> Cases() {
  return {
      {"not_json", "{\"model\": ", "not valid JSON"},
      {"not_object", "[1, 2]", "expected an object"},
      {"no_model", R"({"normalizer": null})", "model: missing"},
      {"model_not_object", R"({"model": 5})", "expected an object"},
      {"unknown_model", Make(R"({"type": "Magic", "vocab": {}})"), "unsupported model type"},
      {"vocab_not_object", Make(R"({"type": "BPE", "vocab": [1], "merges": []})"),
       "expected an object {token: id}"},
      {"vocab_empty", Make(R"({"type": "BPE", "vocab": {}, "merges": []})"), "vocabulary is empty"},
      {"vocab_id_string", Make(R"({"type": "BPE", "vocab": {"a": "0"}, "merges": []})"),
       "expected an integer"},
      {"vocab_id_negative", Make(R"({"type": "BPE", "vocab": {"a": -1}, "merges": []})"),
       "out of range"},
      {"vocab_id_huge", Make(R"({"type": "BPE", "vocab": {"a": 4000000000}, "merges": []})"),
       "out of range"},
      {"vocab_id_float", Make(R"({"type": "BPE", "vocab": {"a": 1.5}, "merges": []})"),
       "expected an integer"},
      {"vocab_dup_id", Make(R"({"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []})"),
       "given to both"},
      {"merge_unknown", Make(R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["a z"]})"),
       "'z' is not in the vocabulary"},
      {"merge_result_unknown",
       Make(R"({"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]})"),
       "'ab' is not in the vocabulary"},
      {"merge_no_space", Make(R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]})"),
       "two tokens separated by a space"},
      {"merge_bad_pair", Make(R"({"type": "BPE", "vocab": {"a": 0}, "merges": [["a"]]})"),
       "expected \"a b\""},
      {"merges_not_array", Make(R"({"type": "BPE", "vocab": {"a": 0}, "merges": 3})"),
       "merges: expected an array"},
      {"bpe_dropout", Make(R"({"type": "BPE", "dropout": 0.1, "vocab": {"a": 0}, "merges": []})"),
       "dropout is not supported"},
      {"unigram_bad_entry", Make(R"({"type": "Unigram", "vocab": [["a"]]})"),
       "expected [\"piece\", score]"},
      {"unigram_unk_range", Make(R"({"type": "Unigram", "unk_id": 7, "vocab": [["a", -1.0]]})"),
       "out of range"},
      {"unigram_empty", Make(R"({"type": "Unigram", "vocab": []})"), "non-empty array"},
      {"wordpiece_max_chars",
       Make(R"({"type": "WordPiece", "vocab": {"a": 0}, "max_input_chars_per_word": -3})"),
       "out of range"},
      {"normalizer_unknown", Make("", R"({"type": "Teleport"})"), "unsupported normalizer"},
      {"normalizer_no_type", Make("", R"({"lowercase": true})"), "type: missing"},
      {"replace_bad_regex",
       Make("", R"({"type": "Replace", "pattern": {"Regex": "(unclosed"}, "content": ""})"),
       "bad regex"},
      {"replace_bad_pattern",
       Make("", R"({"type": "Replace", "pattern": {"Glob": "*"}, "content": ""})"),
       "expected {\"String\""},
      {"replace_no_content", Make("", R"({"type": "Replace", "pattern": {"String": "a"}})"),
       "content: missing"},
      {"sequence_not_array", Make("", R"({"type": "Sequence", "normalizers": {}})"),
       "expected an array"},
      {"bert_bool", Make("", R"({"type": "BertNormalizer", "lowercase": "yes"})"),
       "expected true or false"},
      {"pre_unknown", Make("", "null", R"({"type": "Sentencize"})"), "unsupported pre-tokenizer"},
      {"split_behavior",
       Make("", "null", R"({"type": "Split", "pattern": {"String": " "}, "behavior": "Eaten"})"),
       "unknown split behavior"},
      {"split_regex",
       Make("", "null",
            R"({"type": "Split", "pattern": {"Regex": "[a-"}, "behavior": "Isolated"})"),
       "bad regex"},
      {"split_lookbehind",
       Make("", "null",
            R"({"type": "Split", "pattern": {"Regex": "(?<=a+)b"}, "behavior": "Isolated"})"),
       "bad regex"},
      {"metaspace_replacement", Make("", "null", R"({"type": "Metaspace", "replacement": "ab"})"),
       "expected one character"},
      {"metaspace_scheme",
       Make("", "null",
            R"({"type": "Metaspace", "replacement": "_", "prepend_scheme": "sometimes"})"),
       "prepend_scheme"},
      {"post_unknown", Make("", "null", "null", R"({"type": "Wrap"})"),
       "unsupported post-processor"},
      {"template_missing_special",
       Make(
           "", "null", "null",
           R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<x>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "special_tokens": {}})"),
       "not in special_tokens"},
      {"template_bad_id",
       Make(
           "", "null", "null",
           R"({"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}}], "special_tokens": {"<s>": {"id": "<s>", "ids": [99], "tokens": ["<s>"]}}})"),
       "out of range"},
      {"template_no_sequence",
       Make("", "null", "null",
            R"({"type": "TemplateProcessing", "single": [], "special_tokens": {}})"),
       "has no Sequence"},
      {"bert_processing_bad",
       Make("", "null", "null", R"({"type": "BertProcessing", "sep": "x", "cls": ["<s>", 3]})"),
       "expected [\"token\", id]"},
      {"decoder_unknown", Make("", "null", "null", "null", R"({"type": "Reverse"})"),
       "unsupported decoder"},
      {"strip_content",
       Make("", "null", "null", "null",
            R"({"type": "Strip", "content": "", "start": 1, "stop": 0})"),
       "expected one character"},
      {"strip_negative",
       Make("", "null", "null", "null",
            R"({"type": "Strip", "content": " ", "start": -1, "stop": 0})"),
       "out of range"},
      {"added_not_array", Make("", "null", "null", "null", "null", "{}"), "expected an array"},
      {"added_no_id", Make("", "null", "null", "null", "null", R"([{"content": "<x>"}])"),
       "id: missing"},
      {"added_bad_flag",
       Make("", "null", "null", "null", "null", R"([{"id": 4, "content": "<x>", "special": 1}])"),
       "expected true or false"},
      {"added_huge_id",
       Make("", "null", "null", "null", "null", R"([{"id": 99999999, "content": "<x>"}])"),
       "out of range"},
      {"nested_too_deep",
       Make(
           "", std::string(40, ' ') +
                   [] {
                     std::string s;
                     for (int i = 0; i < 20; ++i) s += R"({"type": "Sequence", "normalizers": [)";
                     s += R"({"type": "NFC"})";
                     for (int i = 0; i < 20; ++i) s += "]}";
                     return s;
                   }()),
       "nested too deeply"},
      // Copying a JSON value recurses once per level: these overflowed the stack (the
      // normalizer and the added_tokens list were copied) before nesting was bounded.
      {"json_nested_normalizer", Make("", Deep(1'000'000)), "nested deeper than 128 levels"},
      {"json_nested_added_tokens", Make("", "null", "null", "null", "null", Deep(1'000'000)),
       "nested deeper than 128 levels"},
      {"json_nested_129", Make("", "null", "null", "null", "null", Deep(128)),
       "nested deeper than 128 levels"},
  };
}

TEST(HfMalformedTest, EveryCaseIsAClearError) {
  const auto cases = Cases();
  EXPECT_GE(cases.size(), 40u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    try {
      Tokenizer::FromHfJson(c.json, "", "t.json");
      ADD_FAILURE() << c.name << ": loaded without an error";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(c.expect), std::string::npos) << c.name << ": " << msg;
      EXPECT_EQ(msg.rfind("t.json", 0), 0u) << c.name << " does not name the file: " << msg;
    }
  }
}

TEST(HfMalformedTest, ConfigErrors) {
  const std::string ok = Make();
  auto expect_error = [&](const std::string& config, const char* what) {
    try {
      Tokenizer::FromHfJson(ok, config, "t.json");
      ADD_FAILURE() << config << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_error("{", "not valid JSON");
  expect_error(R"({"bos_token": 3})", "expected a string");
  expect_error(R"({"bos_token": {"text": "x"}})", "content: missing");
  expect_error(R"({"add_bos_token": "true"})", "expected true or false");
  expect_error(R"({"chat_template": [{"name": "default"}]})", "template: missing");
  expect_error(R"({"chat_template": )" + Deep(1'000'000) + "}", "nested deeper than 128 levels");
}

TEST(HfMalformedTest, NestingUpToTheLimitLoads) {
  // 127 levels under the top-level object: 128 in all.
  std::string json = Make();
  json.insert(json.size() - 1, R"(, "extra": )" + Deep(127));
  EXPECT_NO_THROW(Tokenizer::FromHfJson(json, "", "t.json"));
}

TEST(HfMalformedTest, MissingUnknownTokenIsAnEncodeError) {
  // A character with no token, and an unk_token the vocabulary lacks.
  auto tok = Tokenizer::FromHfJson(
      Make(R"({"type": "BPE", "unk_token": "<unk>", "vocab": {"a": 0}, "merges": []})"), "",
      "t.json");
  EXPECT_THROW(tok->Encode("az", false), Error);
  EXPECT_EQ(tok->Encode("aa", false), (std::vector<int32_t>{0, 0}));
}

}  // namespace
}  // namespace kiln
