#include "tokenizer/hf/post_processors.h"

#include <map>
#include <optional>

#include "util/error.h"

namespace kiln::hf {
namespace {

constexpr int kMaxDepth = 16;
constexpr size_t kMaxTemplateIds = 1024;
constexpr int64_t kMaxTypeId = (int64_t{1} << 31) - 1;

using SpecialIds = std::map<std::string, std::vector<int32_t>>;
using Run = std::vector<LayoutToken>;

// ["[CLS]", 101] -> 101.
int32_t TokenPairId(const Json& j, const std::string& where, int64_t vocab_size) {
  KILN_CHECK(j.is_array() && j.size() == 2, where, ": expected [\"token\", id]");
  AsString(j[0], where);
  return static_cast<int32_t>(AsInt(j[1], where, 0, vocab_size - 1));
}

SpecialIds ReadSpecialIds(const Json& j, const std::string& where, int64_t vocab_size) {
  const Json& specials = Field(j, "special_tokens", where);
  CheckObject(specials, FieldPath(where, "special_tokens"));
  SpecialIds out;
  for (auto it = specials.begin(); it != specials.end(); ++it) {
    const std::string at = StrCat(where, ".special_tokens[\"", it.key(), "\"]");
    const Json& ids = Field(it.value(), "ids", at);
    KILN_CHECK(ids.is_array() && ids.size() <= kMaxTemplateIds, at, ".ids: expected an array");
    std::vector<int32_t>& dst = out[it.key()];
    for (size_t i = 0; i < ids.size(); ++i) {
      dst.push_back(
          static_cast<int32_t>(AsInt(ids[i], StrCat(at, ".ids[", i, "]"), 0, vocab_size - 1)));
    }
  }
  return out;
}

// One template item: a special token's ids, or a sequence ("A" / "B").
struct Item {
  const std::vector<int32_t>* ids = nullptr;  // null for a sequence
  std::string sequence;
  int32_t type_id = 0;
};

// Reads the items of a template; nullopt (instead of throwing) when `strict` is false and the
// template is unusable, so that a bad "pair" does not stop the single template from loading.
std::optional<std::vector<Item>> ReadTemplate(const Json& list, const std::string& where,
                                              const SpecialIds& specials, bool strict) {
  auto fail = [&](const std::string& at, const std::string& what) -> std::nullopt_t {
    if (strict) throw Error(StrCat(at, ": ", what));
    return std::nullopt;
  };
  if (!list.is_array() || list.size() > kMaxTemplateIds) return fail(where, "expected an array");
  std::vector<Item> items;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = StrCat(where, "[", i, "]");
    const Json& item = list[i];
    if (!item.is_object()) return fail(at, "expected an object");
    const Json* seq = OptField(item, "Sequence");
    const Json* st = seq ? seq : OptField(item, "SpecialToken");
    if (st == nullptr || !st->is_object()) return fail(at, "expected a Sequence or SpecialToken");
    const Json* id = OptField(*st, "id");
    if (id == nullptr || !id->is_string()) return fail(at, "expected a string id");
    Item out;
    if (const Json* t = OptField(*st, "type_id")) {
      if (!t->is_number_integer() || t->get<int64_t>() < 0 || t->get<int64_t>() > kMaxTypeId) {
        return fail(at, "type_id: expected a non-negative integer");
      }
      out.type_id = static_cast<int32_t>(t->get<int64_t>());
    }
    if (seq) {
      out.sequence = id->get<std::string>();
    } else {
      auto found = specials.find(id->get<std::string>());
      if (found == specials.end()) {
        return fail(
            at, StrCat("special token '", id->get<std::string>(), "' is not in special_tokens"));
      }
      out.ids = &found->second;
    }
    items.push_back(std::move(out));
  }
  return items;
}

void Append(const Item& item, Run* run) {
  for (int32_t id : *item.ids) run->push_back({id, item.type_id});
}

// TemplateProcessing. The single template needs exactly one sequence (any id, as HF reads
// $A or $B there); the pair template must hold $A then $B once each, which every real file
// does. A pair template in another shape (or none) falls back to the single's specials around
// A and B back to back.
SpecialLayout MakeTemplate(const Json& j, const std::string& where, int64_t vocab_size) {
  const SpecialIds specials = ReadSpecialIds(j, where, vocab_size);
  const std::string sw = FieldPath(where, "single");
  const std::vector<Item> single = *ReadTemplate(Field(j, "single", where), sw, specials, true);
  SpecialLayout l;
  int sequences = 0;
  for (size_t i = 0; i < single.size(); ++i) {
    if (single[i].ids == nullptr) {
      KILN_CHECK(sequences == 0, sw, "[", i, "]: the single template has two sequences");
      l.single_type = single[i].type_id;
      ++sequences;
    } else {
      Append(single[i], sequences == 0 ? &l.single_before : &l.single_after);
    }
  }
  KILN_CHECK(sequences == 1, sw, ": the single template has no Sequence");

  std::optional<std::vector<Item>> pair;
  if (const Json* p = OptField(j, "pair")) {
    pair = ReadTemplate(*p, FieldPath(where, "pair"), specials, false);
  }
  std::vector<const Item*> seqs;
  if (pair) {
    for (const Item& it : *pair) {
      if (it.ids == nullptr) seqs.push_back(&it);
    }
  }
  if (seqs.size() == 2 && seqs[0]->sequence == "A" && seqs[1]->sequence == "B") {
    Run* runs[] = {&l.pair_before, &l.pair_middle, &l.pair_after};
    int part = 0;
    for (const Item& it : *pair) {
      if (it.ids == nullptr) {
        (part == 0 ? l.type_a : l.type_b) = it.type_id;
        ++part;
      } else {
        Append(it, runs[part]);
      }
    }
  } else {
    l.pair_before = l.single_before;
    l.pair_after = l.single_after;
    l.type_a = l.type_b = l.single_type;
  }
  return l;
}

bool IsPlain(const SpecialLayout& l) { return l == PlainLayout(); }

// Sequence: the steps run one after the other on the ids, so their specials nest. Real files
// combine ByteLevel (which keeps the type ids) with at most one step that adds specials; with
// two, the outer one's type ids are kept (HF itself does not accept a template after another).
SpecialLayout Compose(const SpecialLayout& inner, const SpecialLayout& outer) {
  if (IsPlain(outer)) return inner;
  if (IsPlain(inner)) return outer;
  auto wrap = [](const Run& a, const Run& b) {
    Run r = a;
    r.insert(r.end(), b.begin(), b.end());
    return r;
  };
  SpecialLayout l = outer;
  l.single_before = wrap(outer.single_before, inner.single_before);
  l.single_after = wrap(inner.single_after, outer.single_after);
  l.pair_before = wrap(outer.pair_before, inner.pair_before);
  l.pair_middle = wrap(inner.pair_middle, outer.pair_middle);
  l.pair_after = wrap(inner.pair_after, outer.pair_after);
  return l;
}

}  // namespace

void PostProcessor::Process(std::vector<int32_t>* ids) const {
  std::vector<int32_t> before, after;
  for (const LayoutToken& t : layout_.single_before) before.push_back(t.id);
  for (const LayoutToken& t : layout_.single_after) after.push_back(t.id);
  ids->insert(ids->begin(), before.begin(), before.end());
  ids->insert(ids->end(), after.begin(), after.end());
}

SpecialLayout PlainLayout() {
  SpecialLayout l;
  l.type_b = 1;
  return l;
}

std::unique_ptr<PostProcessor> MakePostProcessor(const Json& j, const std::string& where,
                                                 int64_t vocab_size, int depth) {
  if (j.is_null()) return nullptr;
  KILN_CHECK(depth < kMaxDepth, where, ": Sequence nested too deeply");
  const std::string type = TypeOf(j, where);
  if (type == "TemplateProcessing") {
    return std::make_unique<PostProcessor>(MakeTemplate(j, where, vocab_size));
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    const int32_t cls = TokenPairId(Field(j, "cls", where), FieldPath(where, "cls"), vocab_size);
    const int32_t sep = TokenPairId(Field(j, "sep", where), FieldPath(where, "sep"), vocab_size);
    SpecialLayout l;
    l.single_before = l.pair_before = {{cls, 0}};
    l.single_after = {{sep, 0}};
    if (type == "BertProcessing") {
      // [CLS] A [SEP] B [SEP]: B and its SEP keep B's type id 1.
      l.pair_middle = {{sep, 0}};
      l.pair_after = {{sep, 1}};
      l.type_b = 1;
      return std::make_unique<PostProcessor>(std::move(l));
    }
    // <s> A </s></s> B </s>, every type id 0.
    l.pair_middle = {{sep, 0}, {sep, 0}};
    l.pair_after = {{sep, 0}};
    std::vector<bool> trims;
    if (OptBool(j, "trim_offsets", where, true)) {
      trims.push_back(OptBool(j, "add_prefix_space", where, true));
    }
    return std::make_unique<PostProcessor>(std::move(l), std::move(trims));
  }
  if (type == "ByteLevel") {
    std::vector<bool> trims;
    if (OptBool(j, "trim_offsets", where, true)) {
      trims.push_back(OptBool(j, "add_prefix_space", where, true));
    }
    return std::make_unique<PostProcessor>(PlainLayout(), std::move(trims));
  }
  if (type == "Sequence") {
    const Json& list = Field(j, "processors", where);
    KILN_CHECK(list.is_array(), where, ".processors: expected an array");
    SpecialLayout layout = PlainLayout();
    std::vector<bool> trims;
    for (size_t i = 0; i < list.size(); ++i) {
      auto p =
          MakePostProcessor(list[i], StrCat(where, ".processors[", i, "]"), vocab_size, depth + 1);
      if (!p) continue;
      layout = Compose(layout, p->layout());
      trims.insert(trims.end(), p->trim_passes().begin(), p->trim_passes().end());
    }
    return std::make_unique<PostProcessor>(std::move(layout), std::move(trims));
  }
  throw Error(StrCat(where, ": unsupported post-processor type '", type, "'"));
}

std::unique_ptr<PostProcessor> MakeBosEosPostProcessor(int32_t bos, int32_t eos) {
  SpecialLayout l;
  if (bos >= 0) {
    l.single_before = l.pair_before = {{bos, 0}};
    l.pair_middle.push_back({bos, 1});
  }
  if (eos >= 0) {
    l.single_after = {{eos, 0}};
    l.pair_middle.insert(l.pair_middle.begin(), {eos, 0});
    l.pair_after = {{eos, 1}};
  }
  l.type_b = 1;
  return std::make_unique<PostProcessor>(std::move(l));
}

}  // namespace kiln::hf
