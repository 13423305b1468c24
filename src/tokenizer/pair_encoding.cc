#include "tokenizer/pair_encoding.h"

namespace kiln {
namespace {

void AppendRun(const std::vector<LayoutToken>& run, EncodedInput* out) {
  for (const LayoutToken& t : run) {
    out->ids.push_back(t.id);
    out->type_ids.push_back(t.type_id);
  }
}

void AppendSequence(std::span<const int32_t> ids, int32_t type_id, EncodedInput* out) {
  out->ids.insert(out->ids.end(), ids.begin(), ids.end());
  out->type_ids.insert(out->type_ids.end(), ids.size(), type_id);
}

}  // namespace

EncodedInput AssembleSingle(const SpecialLayout& layout, std::span<const int32_t> a) {
  EncodedInput out;
  out.ids.reserve(a.size() + NumSpecialTokens(layout, false));
  out.type_ids.reserve(out.ids.capacity());
  AppendRun(layout.single_before, &out);
  AppendSequence(a, layout.single_type, &out);
  AppendRun(layout.single_after, &out);
  return out;
}

EncodedInput AssemblePair(const SpecialLayout& layout, std::span<const int32_t> a,
                          std::span<const int32_t> b) {
  EncodedInput out;
  out.ids.reserve(a.size() + b.size() + NumSpecialTokens(layout, true));
  out.type_ids.reserve(out.ids.capacity());
  AppendRun(layout.pair_before, &out);
  AppendSequence(a, layout.type_a, &out);
  AppendRun(layout.pair_middle, &out);
  AppendSequence(b, layout.type_b, &out);
  AppendRun(layout.pair_after, &out);
  return out;
}

size_t NumSpecialTokens(const SpecialLayout& layout, bool pair) {
  if (!pair) return layout.single_before.size() + layout.single_after.size();
  return layout.pair_before.size() + layout.pair_middle.size() + layout.pair_after.size();
}

// GGUF vocabularies define no pair template, only whether BOS/EOS are added: the pair is the
// two texts back to back inside the single sequence's specials.
SpecialLayout Tokenizer::Layout() const {
  SpecialLayout l;
  if (AddsBos()) l.single_before.push_back({bos_id(), 0});
  if (AddsEos()) l.single_after.push_back({eos_id(), 0});
  l.pair_before = l.single_before;
  l.pair_after = l.single_after;
  return l;
}

}  // namespace kiln
