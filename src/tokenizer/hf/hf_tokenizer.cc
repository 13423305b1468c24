// Tokenizer over a Hugging Face tokenizer.json: added tokens -> normalizer -> pre-tokenizer ->
// model -> post-processor, and ids -> decoder, as the HF tokenizers library runs them.
#include <algorithm>
#include <set>

#include "tokenizer/hf/added_tokens.h"
#include "tokenizer/hf/decoders.h"
#include "tokenizer/hf/model.h"
#include "tokenizer/hf/normalizers.h"
#include "tokenizer/hf/post_processors.h"
#include "tokenizer/hf/pre_tokenizers.h"
#include "tokenizer/hf/tokenizer_config.h"
#include "tokenizer/hf/word_spans.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/utf8.h"

namespace kiln {
namespace {

using hf::Json;

constexpr std::string_view kEogTexts[] = {"<|eot_id|>",      "<|im_end|>",         "<|end|>",
                                          "<|endoftext|>",   "<end_of_turn>",      "<|eom_id|>",
                                          "<|end_of_text|>", "<end_of_utterance>", "<EOT>"};

class HfTokenizer final : public Tokenizer {
 public:
  HfTokenizer(const Json& j, const hf::TokenizerConfig& config, const std::string& source);

  std::vector<int32_t> Encode(std::string_view text, bool add_special,
                              bool parse_special) const override;
  std::string Decode(std::span<const int32_t> ids, bool skip_special) const override;
  std::string TokenPiece(int32_t id) const override {
    CheckId(id);
    return IsControl(id) ? std::string() : pieces_[id];
  }
  std::string_view TokenText(int32_t id) const override {
    CheckId(id);
    return text_[id];
  }
  int32_t vocab_size() const override { return static_cast<int32_t>(text_.size()); }
  int32_t bos_id() const override { return bos_; }
  int32_t eos_id() const override { return eos_; }
  // Only "special": true tokens: the HF library's skip_special_tokens keeps the other added
  // tokens, and the engine skips IsSpecial tokens in streamed text.
  bool IsSpecial(int32_t id) const override { return InRange(id) && special_[id]; }
  bool IsControl(int32_t id) const override { return InRange(id) && special_[id]; }
  bool AddsBos() const override { return adds_bos_; }
  bool AddsEos() const override { return adds_eos_; }
  std::vector<int32_t> StopIds() const override { return stop_ids_; }
  std::string ChatTemplateSource() const override { return chat_template_; }
  SpecialLayout Layout() const override {
    return post_processor_ ? post_processor_->layout() : hf::PlainLayout();
  }
  std::vector<WordSpan> EncodeWords(std::string_view text) const override;

 private:
  bool InRange(int32_t id) const { return id >= 0 && id < vocab_size(); }
  void CheckId(int32_t id) const {
    KILN_CHECK(InRange(id), source_, ": token id ", id, " outside the vocabulary (size ",
               vocab_size(), ")");
  }
  void LoadAddedTokens(const Json& j);
  void ResolveSpecialIds(const hf::TokenizerConfig& config);
  void ApplyAddBosEos(const hf::TokenizerConfig& config);
  int32_t FindToken(std::string_view text) const;
  // The pipeline without post-processing; `words` (EncodeWords) also records the words.
  void EncodeRaw(std::string_view text, bool parse_special, std::vector<int32_t>* out,
                 hf::WordRecorder* words) const;
  void EncodeText(std::string_view text, size_t offset, bool parse_special,
                  std::vector<int32_t>* out, hf::WordRecorder* words) const;

  std::string source_;
  std::unique_ptr<hf::Normalizer> normalizer_;
  std::unique_ptr<hf::PreTokenizerStep> pre_tokenizer_;
  std::unique_ptr<hf::Model> model_;
  std::unique_ptr<hf::PostProcessor> post_processor_;
  std::unique_ptr<hf::Decoder> decoder_;
  hf::AddedTokenMatcher raw_matcher_, normalized_matcher_;
  std::vector<std::string> text_;    // by id: added tokens over the model's vocabulary
  std::vector<std::string> pieces_;  // TokenPiece of every id
  std::vector<bool> added_, special_;
  int32_t bos_ = -1, eos_ = -1;
  bool adds_bos_ = false, adds_eos_ = false, clean_up_ = false;
  std::vector<int32_t> stop_ids_;
  std::string chat_template_;
};

HfTokenizer::HfTokenizer(const Json& j, const hf::TokenizerConfig& config,
                         const std::string& source)
    : source_(source) {
  hf::CheckObject(j, source);
  model_ = hf::MakeModel(hf::Field(j, "model", source), source + ": model");
  normalizer_ = hf::MakeNormalizer(j.value("normalizer", Json()), source + ": normalizer");
  pre_tokenizer_ =
      hf::MakePreTokenizer(j.value("pre_tokenizer", Json()), source + ": pre_tokenizer");
  decoder_ = hf::MakeDecoder(j.value("decoder", Json()), source + ": decoder");
  LoadAddedTokens(j);
  post_processor_ = hf::MakePostProcessor(j.value("post_processor", Json()),
                                          source + ": post_processor", vocab_size());
  clean_up_ = config.clean_up_tokenization_spaces;
  chat_template_ = config.chat_template;
  ResolveSpecialIds(config);
  pieces_.resize(text_.size());
  for (size_t id = 0; id < text_.size(); ++id) {
    if (text_[id].empty()) continue;
    std::vector<std::string> one{text_[id]};
    if (decoder_) decoder_->Decode(&one, hf::DecodeMode{.piece = true});
    for (const std::string& s : one) pieces_[id] += s;
  }
}

void HfTokenizer::LoadAddedTokens(const Json& j) {
  const tok::Vocab& vocab = model_->vocab();
  const int64_t max_id = static_cast<int64_t>(vocab.text.size()) + (int64_t{1} << 20);
  const Json* list = hf::OptField(j, "added_tokens");
  std::vector<hf::AddedToken> tokens =
      hf::ReadAddedTokens(list ? *list : Json(), source_ + ": added_tokens", max_id);
  text_ = vocab.text;
  for (const auto& t : tokens) {
    if (static_cast<size_t>(t.id) >= text_.size()) text_.resize(t.id + 1);
  }
  added_.assign(text_.size(), false);
  special_.assign(text_.size(), false);
  std::vector<hf::AddedToken> raw, normalized;
  std::vector<std::string> raw_text, normalized_text;
  for (const auto& t : tokens) {
    text_[t.id] = t.content;
    added_[t.id] = true;
    special_[t.id] = t.special;
    if (t.normalized && normalizer_) {
      std::string n = t.content;
      normalizer_->Normalize(&n);
      normalized.push_back(t);
      normalized_text.push_back(n);
    } else {
      raw.push_back(t);
      raw_text.push_back(t.content);
    }
  }
  // Decode skips special tokens by text: a vocabulary entry spelled like one is skipped too.
  std::set<std::string_view> special_texts;
  for (const auto& t : tokens) {
    if (t.special) special_texts.insert(t.content);
  }
  for (size_t id = 0; id < text_.size(); ++id) {
    if (special_texts.count(text_[id])) special_[id] = true;
  }
  raw_matcher_ = hf::AddedTokenMatcher(raw, raw_text);
  normalized_matcher_ = hf::AddedTokenMatcher(normalized, normalized_text);
}

int32_t HfTokenizer::FindToken(std::string_view text) const {
  for (int32_t id = 0; id < vocab_size(); ++id) {
    if (added_[id] && text_[id] == text) return id;
  }
  return model_->vocab().Find(text);
}

// transformers' Llama-style tokenizer classes replace the post-processor by a template built
// from add_bos_token / add_eos_token (with class defaults); the other classes ignore both keys.
// Without a tokenizer_class, the keys are applied when present.
void HfTokenizer::ApplyAddBosEos(const hf::TokenizerConfig& config) {
  struct ClassDefaults {
    std::string_view name;
    bool add_bos;
  };
  static constexpr ClassDefaults kClasses[] = {{"LlamaTokenizer", true},
                                               {"CodeLlamaTokenizer", true},
                                               {"GemmaTokenizer", true},
                                               {"CohereTokenizer", true},
                                               {"GPTNeoXTokenizer", false}};
  std::string_view cls = config.tokenizer_class;
  if (cls.ends_with("Fast")) cls.remove_suffix(4);
  std::optional<bool> add_bos = config.add_bos_token, add_eos = config.add_eos_token;
  if (cls.empty()) {
    if (!add_bos && !add_eos) return;
  } else {
    const auto* it = std::find_if(std::begin(kClasses), std::end(kClasses),
                                  [&](const ClassDefaults& c) { return c.name == cls; });
    if (it == std::end(kClasses)) return;
    add_bos = add_bos.value_or(it->add_bos);
  }
  post_processor_ = hf::MakeBosEosPostProcessor(add_bos.value_or(false) ? bos_ : -1,
                                                add_eos.value_or(false) ? eos_ : -1);
}

void HfTokenizer::ResolveSpecialIds(const hf::TokenizerConfig& config) {
  auto pick = [&](const std::optional<std::string>& name,
                  std::initializer_list<std::string_view> guesses) {
    if (name) return FindToken(*name);
    for (std::string_view g : guesses) {
      if (int32_t id = FindToken(g); id >= 0) return id;
    }
    return -1;
  };
  bos_ = pick(config.bos_token, {"<s>", "<|begin_of_text|>", "<bos>", "<|startoftext|>"});
  eos_ = pick(config.eos_token, {"</s>", "<|end_of_text|>", "<|endoftext|>", "<eos>"});
  ApplyAddBosEos(config);
  std::vector<int32_t> probe;
  if (post_processor_) post_processor_->Process(&probe);
  adds_bos_ = bos_ >= 0 && !probe.empty() && probe.front() == bos_;
  adds_eos_ = eos_ >= 0 && !probe.empty() && probe.back() == eos_;
  std::set<int32_t> stops;
  if (eos_ >= 0) stops.insert(eos_);
  for (int32_t id = 0; id < vocab_size(); ++id) {
    if (!added_[id]) continue;
    for (std::string_view t : kEogTexts) {
      if (text_[id] == t) stops.insert(id);
    }
  }
  stop_ids_.assign(stops.begin(), stops.end());
}

// One stretch between raw-matched added tokens, at `offset` of the text: normalize, match
// normalized added tokens, pre-tokenize, run the model.
void HfTokenizer::EncodeText(std::string_view text, size_t offset, bool parse_special,
                             std::vector<int32_t>* out, hf::WordRecorder* words) const {
  std::string normalized(text);
  hf::Alignment align;
  if (words) align = hf::IdentityAlignment(text, static_cast<uint32_t>(offset));
  if (normalizer_ && words) {
    normalizer_->NormalizeAligned(&normalized, &align);
  } else if (normalizer_) {
    normalizer_->Normalize(&normalized);
  }
  const bool aligned = words && align.size() == normalized.size();
  // Where an alignment got lost (it should not), words span the whole stretch.
  const hf::Align stretch{static_cast<uint32_t>(offset),
                          static_cast<uint32_t>(offset + text.size())};
  std::vector<hf::Segment> segments;
  if (normalized_matcher_.empty()) {
    if (!normalized.empty()) segments.push_back({0, normalized.size(), -1});
  } else {
    normalized_matcher_.Split(normalized, !parse_special, &segments);
  }
  std::vector<hf::Piece> pieces;
  for (const hf::Segment& seg : segments) {
    if (seg.id >= 0) {
      out->push_back(seg.id);
      if (words) {
        const hf::Align r = aligned ? hf::RangeOf(align, seg.start, seg.end) : stretch;
        words->AddAddedToken(seg.id, r,
                             std::string_view(normalized).substr(seg.start, seg.end - seg.start));
      }
      continue;
    }
    pieces.assign(
        1, {normalized.substr(seg.start, seg.end - seg.start), offset == 0 && seg.start == 0, {}});
    if (aligned) pieces[0].align.assign(align.begin() + seg.start, align.begin() + seg.end);
    if (pre_tokenizer_) pre_tokenizer_->Apply(&pieces);
    for (const hf::Piece& p : pieces) {
      if (p.text.empty()) continue;
      const size_t first = out->size();
      model_->Tokenize(p.text, out);
      if (words) words->AddPiece(p, *out, first, stretch);
    }
  }
}

void HfTokenizer::EncodeRaw(std::string_view text, bool parse_special, std::vector<int32_t>* out,
                            hf::WordRecorder* words) const {
  std::vector<hf::Segment> segments;
  raw_matcher_.Split(text, !parse_special, &segments);
  for (const hf::Segment& seg : segments) {
    const std::string_view part = text.substr(seg.start, seg.end - seg.start);
    if (seg.id >= 0) {
      out->push_back(seg.id);
      if (words) {
        words->AddAddedToken(
            seg.id, {static_cast<uint32_t>(seg.start), static_cast<uint32_t>(seg.end)}, part);
      }
    } else {
      EncodeText(part, seg.start, parse_special, out, words);
    }
  }
}

std::vector<int32_t> HfTokenizer::Encode(std::string_view input, bool add_special,
                                         bool parse_special) const {
  KILN_CHECK(input.size() < (size_t{1} << 31), source_, ": text to tokenize too long");
  std::string repaired;
  std::string_view text = input;
  repaired = ValidUtf8OrReplace(input);  // the pipeline works on valid UTF-8
  if (repaired != input) text = repaired;
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  EncodeRaw(text, parse_special, &out, nullptr);
  if (add_special && post_processor_) post_processor_->Process(&out);
  return out;
}

// Agrees with HF's word_ids() / word_to_chars() (tests/golden/test_tokenizer_words.py) but:
// - a BPE without unk_token drops the characters its vocabulary lacks, and HF then counts its
//   token offsets as if those characters were not there (its span points at other
//   characters); here the word keeps its whole piece;
// - normalizers without an exact alignment of their own (all but the Unicode forms, Prepend,
//   Strip, Replace and Sequence) are aligned character by character (AlignByCharacters):
//   exact for those that map characters independently (Lowercase, StripAccents, BERT's),
//   grouped or proportional where one does not (BERT's NFD reordering marks of a character).
std::vector<WordSpan> HfTokenizer::EncodeWords(std::string_view input) const {
  KILN_CHECK(input.size() < (size_t{1} << 31), source_, ": text to tokenize too long");
  const std::string repaired = ValidUtf8OrReplace(input);
  static const std::vector<bool> kNoTrim;
  hf::WordRecorder words(repaired, text_,
                         post_processor_ ? post_processor_->trim_passes() : kNoTrim);
  std::vector<int32_t> ids;
  ids.reserve(repaired.size() / 3 + 4);
  EncodeRaw(repaired, false, &ids, &words);
  return words.Finish(input);
}

std::string HfTokenizer::Decode(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    CheckId(id);
    if (text_[id].empty() || (skip_special && special_[id])) continue;
    tokens.push_back(text_[id]);
  }
  std::string out;
  if (decoder_) {
    decoder_->Decode(&tokens, hf::DecodeMode{});
    for (const std::string& t : tokens) out += t;
  } else {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) out += ' ';
      out += tokens[i];
    }
  }
  if (clean_up_) hf::CleanUpSpaces(&out);
  return out;
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::FromHfJson(std::string_view tokenizer_json,
                                                 std::string_view config_json,
                                                 const std::string& source) {
  const Json j = hf::ParseJson(tokenizer_json, source);
  hf::TokenizerConfig config;
  if (!config_json.empty()) config = hf::ParseTokenizerConfig(config_json, source + " (config)");
  return std::make_unique<HfTokenizer>(j, config, source);
}

}  // namespace kiln
