#include "tokenizer/hf/post_processors.h"

#include <map>

#include "util/error.h"

namespace kiln::hf {
namespace {

constexpr int kMaxDepth = 16;
constexpr size_t kMaxTemplateIds = 1024;

class NoOpPostProcessor final : public PostProcessor {
 public:
  void Process(std::vector<int32_t>*) const override {}
};

class SequencePostProcessor final : public PostProcessor {
 public:
  explicit SequencePostProcessor(std::vector<std::unique_ptr<PostProcessor>> steps)
      : steps_(std::move(steps)) {}
  void Process(std::vector<int32_t>* ids) const override {
    for (const auto& p : steps_) p->Process(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

// ["[CLS]", 101] -> 101.
int32_t TokenPairId(const Json& j, const std::string& where, int64_t vocab_size) {
  KILN_CHECK(j.is_array() && j.size() == 2, where, ": expected [\"token\", id]");
  AsString(j[0], where);
  return static_cast<int32_t>(AsInt(j[1], where, 0, vocab_size - 1));
}

// The "single" template: SpecialToken items before and after the one Sequence item.
std::unique_ptr<PostProcessor> MakeTemplate(const Json& j, const std::string& where,
                                            int64_t vocab_size) {
  const Json& specials = Field(j, "special_tokens", where);
  CheckObject(specials, FieldPath(where, "special_tokens"));
  std::map<std::string, std::vector<int32_t>> special_ids;
  for (auto it = specials.begin(); it != specials.end(); ++it) {
    const std::string at = StrCat(where, ".special_tokens[\"", it.key(), "\"]");
    const Json& ids = Field(it.value(), "ids", at);
    KILN_CHECK(ids.is_array() && ids.size() <= kMaxTemplateIds, at, ".ids: expected an array");
    std::vector<int32_t>& out = special_ids[it.key()];
    for (size_t i = 0; i < ids.size(); ++i) {
      out.push_back(
          static_cast<int32_t>(AsInt(ids[i], StrCat(at, ".ids[", i, "]"), 0, vocab_size - 1)));
    }
  }
  const std::string sw = FieldPath(where, "single");
  const Json& single = Field(j, "single", where);
  KILN_CHECK(single.is_array() && single.size() <= kMaxTemplateIds, sw, ": expected an array");
  std::vector<int32_t> before, after;
  bool seen_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const std::string at = StrCat(sw, "[", i, "]");
    CheckObject(single[i], at);
    if (const Json* seq = OptField(single[i], "Sequence")) {
      KILN_CHECK(!seen_sequence, at, ": the single template has two sequences");
      GetString(*seq, "id", at + ".Sequence");
      seen_sequence = true;
      continue;
    }
    const Json& st = Field(single[i], "SpecialToken", at);
    const std::string id = GetString(st, "id", at + ".SpecialToken");
    auto found = special_ids.find(id);
    KILN_CHECK(found != special_ids.end(), at, ": special token '", id,
               "' is not in special_tokens");
    auto& dst = seen_sequence ? after : before;
    dst.insert(dst.end(), found->second.begin(), found->second.end());
  }
  KILN_CHECK(seen_sequence, sw, ": the single template has no Sequence");
  return std::make_unique<TemplatePostProcessor>(std::move(before), std::move(after));
}

}  // namespace

void TemplatePostProcessor::Process(std::vector<int32_t>* ids) const {
  ids->insert(ids->begin(), before_.begin(), before_.end());
  ids->insert(ids->end(), after_.begin(), after_.end());
}

std::unique_ptr<PostProcessor> MakePostProcessor(const Json& j, const std::string& where,
                                                 int64_t vocab_size, int depth) {
  if (j.is_null()) return nullptr;
  KILN_CHECK(depth < kMaxDepth, where, ": Sequence nested too deeply");
  const std::string type = TypeOf(j, where);
  if (type == "TemplateProcessing") return MakeTemplate(j, where, vocab_size);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    const int32_t cls = TokenPairId(Field(j, "cls", where), FieldPath(where, "cls"), vocab_size);
    const int32_t sep = TokenPairId(Field(j, "sep", where), FieldPath(where, "sep"), vocab_size);
    return std::make_unique<TemplatePostProcessor>(std::vector<int32_t>{cls},
                                                   std::vector<int32_t>{sep});
  }
  if (type == "ByteLevel") return std::make_unique<NoOpPostProcessor>();
  if (type == "Sequence") {
    const Json& list = Field(j, "processors", where);
    KILN_CHECK(list.is_array(), where, ".processors: expected an array");
    std::vector<std::unique_ptr<PostProcessor>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto p =
          MakePostProcessor(list[i], StrCat(where, ".processors[", i, "]"), vocab_size, depth + 1);
      if (p) steps.push_back(std::move(p));
    }
    return std::make_unique<SequencePostProcessor>(std::move(steps));
  }
  throw Error(StrCat(where, ": unsupported post-processor type '", type, "'"));
}

}  // namespace kiln::hf
