// Tokenizer over a GGUF-style vocabulary, reproducing llama.cpp's llama_vocab: special-token
// partitioning, BOS/EOS rules, SentencePiece and byte-level BPE encoding, token pieces and
// detokenization (including its leading-space and clean-up rules).
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <set>

#include "tokenizer/models.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/unicode.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln {
namespace {

using tok::kAttrByte;
using tok::kAttrControl;
using tok::kAttrLstrip;
using tok::kAttrNormal;
using tok::kAttrRstrip;
using tok::kAttrUnknown;
using tok::kAttrUserDefined;

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581

bool IsCSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

void ReplaceAll(std::string* s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s->size() + s->size() / 2);
  size_t pos = 0;
  while (true) {
    const size_t hit = s->find(from, pos);
    if (hit == std::string::npos) break;
    out.append(*s, pos, hit - pos);
    out.append(to);
    pos = hit + from.size();
  }
  out.append(*s, pos, std::string::npos);
  s->swap(out);
}

// llama.cpp's detokenizer clean-up (clean_up_tokenization_spaces): drops the space before
// ? ! . , ; collapses " ' " to "'"; drops the space before 's 'm 're 've. Three in-place passes,
// kept byte-for-byte with llama.cpp's (including its quirks).
void CleanSpaces(std::string* text) {
  std::string& t = *text;
  size_t total = t.size();

  size_t n = total;
  total = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {
    const char x = t[i];
    if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
    t[total++] = x;
  }

  n = total;
  total = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {
    const char x = t[i];
    if (x == '\'' && i + 1 < n && t[i - 1] == ' ' && t[i + 1] == ' ') {
      --total;        // the space before
      t[++i] = '\0';  // and the space after (skipped; llama.cpp also zeroes it)
    }
    t[total++] = x;
  }

  n = total;
  total = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {
    const char x = t[i];
    if (t[i - 1] == ' ' && x == '\'' && i + 1 < n) {
      const char x1 = t[i + 1];
      if (x1 == 's' || x1 == 'm') {
        --total;
      } else if (i + 2 < n) {
        const char x2 = t[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
      }
    }
    t[total++] = x;
  }
  t.resize(total);
}

// A piece of the input after special-token partitioning.
struct Fragment {
  int32_t token;  // >= 0: a special token; -1: raw text [offset, offset + length)
  size_t offset;
  size_t length;
};

class VocabTokenizer final : public Tokenizer {
 public:
  explicit VocabTokenizer(const VocabSpec& spec);

  std::vector<int32_t> Encode(std::string_view text, bool add_special,
                              bool parse_special) const override;
  std::string Decode(std::span<const int32_t> ids, bool skip_special) const override;
  std::string TokenPiece(int32_t id) const override;
  std::string_view TokenText(int32_t id) const override;
  int32_t vocab_size() const override { return vocab_.size(); }
  int32_t bos_id() const override { return bos_; }
  int32_t eos_id() const override { return eos_; }
  bool IsSpecial(int32_t id) const override {
    return InRange(id) && (vocab_.attr[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown));
  }
  bool IsControl(int32_t id) const override {
    return InRange(id) && (vocab_.attr[id] & kAttrControl);
  }
  bool AddsBos() const override { return add_bos_ && bos_ >= 0; }
  bool AddsEos() const override { return add_eos_ && eos_ >= 0; }
  std::vector<int32_t> StopIds() const override { return {eog_.begin(), eog_.end()}; }

 private:
  bool InRange(int32_t id) const { return id >= 0 && id < vocab_.size(); }
  void CheckId(int32_t id) const {
    KILN_CHECK(InRange(id), source_, ": token id ", id, " outside the vocabulary (size ",
               vocab_.size(), ")");
  }
  void Partition(std::string_view text, bool parse_special, std::vector<Fragment>* out) const;
  std::string RenderPiece(int32_t id) const;  // llama.cpp's piece with special = true
  void LoadSpecialTokens(const VocabSpec& spec, int32_t default_bos, int32_t default_eos,
                         int32_t default_unk);

  std::string source_;
  bool spm_ = true;
  tok::Vocab vocab_;
  std::unique_ptr<tok::SpmModel> spm_model_;
  std::unique_ptr<tok::BpeModel> bpe_model_;
  std::unique_ptr<tok::PreTokenizer> pretokenizer_;
  bool ignore_merges_ = false;
  bool add_space_prefix_ = false;
  bool add_bos_ = false;
  bool add_eos_ = false;
  bool clean_spaces_ = false;
  int32_t bos_ = -1;
  int32_t eos_ = -1;
  int32_t unk_ = -1;
  std::set<int32_t> eog_;
  std::vector<int32_t> special_tokens_;  // longest text first
  std::vector<std::string> pieces_;      // RenderPiece of every token
};

VocabTokenizer::VocabTokenizer(const VocabSpec& spec) : source_(spec.source) {
  const size_t n = spec.tokens.size();
  KILN_CHECK(n > 0, source_, ": tokenizer vocabulary is empty");
  KILN_CHECK(n < (size_t{1} << 31), source_, ": tokenizer vocabulary too large");
  KILN_CHECK(spec.scores.empty() || spec.scores.size() == n, source_, ": tokenizer has ",
             spec.scores.size(), " scores for ", n, " tokens");
  KILN_CHECK(spec.token_types.empty() || spec.token_types.size() == n, source_, ": tokenizer has ",
             spec.token_types.size(), " token types for ", n, " tokens");

  int32_t default_bos = -1, default_eos = -1, default_unk = -1;
  const tok::PreTypeInfo* pre = nullptr;
  if (spec.model == "llama") {
    spm_ = true;
    default_bos = 1;
    default_eos = 2;
    default_unk = 0;
    add_space_prefix_ = true;
    add_bos_ = true;
  } else if (spec.model == "gpt2") {
    spm_ = false;
    default_bos = 11;  // llama.cpp's defaults for BPE vocabularies
    default_eos = 11;
    std::string pre_name = spec.pre;
    if (pre_name.empty()) {
      log::Warn(StrCat(source_, ": tokenizer.ggml.pre missing, using the 'default' pre-tokenizer"));
      pre_name = "default";
    }
    pre = tok::FindPreType(pre_name);
    if (pre == nullptr) {
      log::Warn(StrCat(source_, ": unknown pre-tokenizer '", pre_name,
                       "', falling back to the GPT-2 regex; tokenization may differ"));
      pre = tok::FindPreType("gpt-2");
    }
    ignore_merges_ = pre->ignore_merges;
    add_bos_ = pre->add_bos;
    clean_spaces_ = pre->clean_spaces;
    if (pre->no_bos) default_bos = -1;
  } else {
    throw Error(StrCat(source_, ": unsupported tokenizer model '", spec.model,
                       "' (supported: llama, gpt2)"));
  }
  if (spec.add_space_prefix) add_space_prefix_ = *spec.add_space_prefix;

  vocab_.text.reserve(n);
  vocab_.score.resize(n, 0.0f);
  vocab_.attr.resize(n, kAttrNormal);
  for (size_t i = 0; i < n; ++i) {
    if (spec.tokens[i].empty()) {
      vocab_.text.push_back(StrCat("[EMPTY_", static_cast<uint64_t>(i), "]"));
    } else {
      vocab_.text.push_back(spec.tokens[i]);
    }
    if (!spec.scores.empty()) vocab_.score[i] = spec.scores[i];
    if (!spec.token_types.empty()) vocab_.attr[i] = tok::AttrFromTokenType(spec.token_types[i]);
  }
  vocab_.Index();

  LoadSpecialTokens(spec, default_bos, default_eos, default_unk);
  if (spm_) {
    spm_model_ = std::make_unique<tok::SpmModel>(vocab_, unk_);
  } else {
    KILN_CHECK(!spec.merges.empty(), source_, ": gpt2 tokenizer has no tokenizer.ggml.merges");
    bpe_model_ = std::make_unique<tok::BpeModel>(vocab_, spec.merges);
    pretokenizer_ = std::make_unique<tok::PreTokenizer>(pre->regexes);
  }
}

void VocabTokenizer::LoadSpecialTokens(const VocabSpec& spec, int32_t default_bos,
                                       int32_t default_eos, int32_t default_unk) {
  const int32_t n = vocab_.size();
  auto pick = [&](const std::optional<int64_t>& given, int32_t def, const char* what) {
    if (given) {
      if (*given >= 0 && *given < n) return static_cast<int32_t>(*given);
      log::Warn(StrCat(source_, ": bad special token id tokenizer.ggml.", what, " = ",
                       static_cast<int64_t>(*given), ", using the default"));
    }
    return def >= 0 && def < n ? def : -1;
  };
  bos_ = pick(spec.bos_id, default_bos, "bos_token_id");
  eos_ = pick(spec.eos_id, default_eos, "eos_token_id");
  unk_ = pick(spec.unk_id, default_unk, "unknown_token_id");
  int32_t eot = pick(spec.eot_id, -1, "eot_token_id");
  int32_t eom = pick(spec.eom_id, -1, "eom_token_id");
  int32_t fim_pre = pick(spec.fim_pre_id, -1, "fim_pre_token_id");
  int32_t fim_suf = pick(spec.fim_suf_id, -1, "fim_suf_token_id");
  int32_t fim_mid = pick(spec.fim_mid_id, -1, "fim_mid_token_id");
  int32_t fim_pad = pick(spec.fim_pad_id, -1, "fim_pad_token_id");
  int32_t fim_rep = pick(spec.fim_rep_id, -1, "fim_rep_token_id");
  int32_t fim_sep = pick(spec.fim_sep_id, -1, "fim_sep_token_id");
  if (spec.add_bos) add_bos_ = *spec.add_bos;
  if (spec.add_eos) add_eos_ = *spec.add_eos;

  // Like llama.cpp, recognise end-of-turn and FIM tokens by their text when the metadata does
  // not name them, and make sure such tokens are control tokens. (llama.cpp takes the first hit
  // in hash order; Kiln takes the lowest id.)
  auto owner = [&](int32_t id) { return vocab_.Find(vocab_.text[id]) == id; };
  auto detect = [&](int32_t* slot, std::initializer_list<std::string_view> texts) {
    if (*slot >= 0) return;
    for (int32_t id = 0; id < n; ++id) {
      if (!owner(id)) continue;
      for (std::string_view t : texts) {
        if (vocab_.text[id] == t) {
          *slot = id;
          if (!(vocab_.attr[id] & kAttrControl)) vocab_.attr[id] = kAttrControl;
          return;
        }
      }
    }
  };
  detect(&eot, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>",
                "_<EOT>", "<｜end▁of▁sentence｜>", "<end_of_utterance>"});
  detect(&eom, {"<|eom_id|>"});
  detect(&fim_pre, {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>",
                    "▁<PRE>", "<|code_prefix|>"});
  detect(&fim_suf, {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>",
                    "▁<SUF>", "<|code_suffix|>"});
  detect(&fim_mid, {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>",
                    "▁<MID>", "<|code_middle|>"});
  detect(&fim_pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>"});
  detect(&fim_rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"});
  detect(&fim_sep, {"<|file_sep|>"});

  // End-of-generation set.
  for (int32_t id : {fim_pad, fim_rep, fim_sep}) {
    if (id >= 0) eog_.insert(id);
  }
  static constexpr std::string_view kEogTexts[] = {
      "<|eot_id|>", "<|im_end|>",    "<|end|>",         "<|return|>",
      "<|call|>",   "<end_of_turn>", "<|endoftext|>",   "<|eom_id|>",
      "<EOT>",      "_<EOT>",        "<|end_of_text|>", "<end_of_utterance>"};
  for (int32_t id = 0; id < n; ++id) {
    if (!owner(id)) continue;
    for (std::string_view t : kEogTexts) {
      if (vocab_.text[id] == t) {
        eog_.insert(id);
        if (!(vocab_.attr[id] & kAttrControl)) vocab_.attr[id] = kAttrControl;
        break;
      }
    }
  }
  // gpt-oss: these render as text.
  for (std::string_view t : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}) {
    const int32_t id = vocab_.Find(t);
    if (id >= 0) vocab_.attr[id] = kAttrUserDefined;
  }
  for (int32_t id : {eos_, eot, eom}) {
    if (id >= 0) eog_.insert(id);
  }
  // o200k_harmony: with <|return|> and <|call|> present, <|end|> does not end generation.
  {
    int32_t end_id = -1;
    bool has_return = false, has_call = false;
    for (int32_t id : eog_) {
      if (vocab_.text[id] == "<|return|>") has_return = true;
      if (vocab_.text[id] == "<|call|>") has_call = true;
      if (vocab_.text[id] == "<|end|>") end_id = id;
    }
    if (has_return && has_call && end_id >= 0) {
      eog_.erase(end_id);
      vocab_.attr[end_id] = kAttrUserDefined;
    }
  }

  // Tokens matched as text by parse_special, longest first.
  for (int32_t id = 0; id < n; ++id) {
    if (vocab_.attr[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) {
      special_tokens_.push_back(id);
    }
  }
  // std::sort as llama.cpp does, so equal-length tokens end up in the same order.
  std::sort(special_tokens_.begin(), special_tokens_.end(),
            [&](int32_t a, int32_t b) { return vocab_.text[a].size() > vocab_.text[b].size(); });

  pieces_.resize(n);
  for (int32_t id = 0; id < n; ++id) pieces_[id] = RenderPiece(id);

  // Per-model strip attributes llama.cpp sets by name.
  std::string name = spec.general_name;
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto contains = [](std::string_view s, std::string_view sub) {
    return s.find(sub) != std::string_view::npos;
  };
  if (contains(spec.pre, "jina-v2-de") || contains(spec.pre, "jina-v2-es") ||
      contains(spec.pre, "jina-v2-code") || contains(spec.architecture, "nomic-bert-moe")) {
    const int32_t id = vocab_.Find("<mask>");
    if (id >= 0) vocab_.attr[id] |= kAttrLstrip;
  } else if (contains(name, "phi-3") || contains(name, "phi3")) {
    for (int32_t id : special_tokens_) vocab_.attr[id] |= kAttrRstrip;
    if (int32_t id = vocab_.Find("</s>"); id >= 0) vocab_.attr[id] |= kAttrRstrip;
    for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) {
      if (int32_t id = vocab_.Find(t); id >= 0) vocab_.attr[id] &= ~kAttrRstrip;
    }
  }
}

std::string VocabTokenizer::RenderPiece(int32_t id) const {
  const uint32_t attr = vocab_.attr[id];
  const std::string& text = vocab_.text[id];
  if (attr & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return text;
  if (spm_) {
    if (attr & kAttrNormal) {
      std::string s = text;
      ReplaceAll(&s, kSpmSpace, " ");
      return s;
    }
    if ((attr & kAttrByte) && text.size() >= 5) {
      const std::string hex = text.substr(3, 2);
      return std::string(1, static_cast<char>(std::strtol(hex.c_str(), nullptr, 16)));
    }
    return {};
  }
  if (attr & kAttrNormal) {
    // GPT-2 stand-in characters back to bytes.
    std::vector<uint32_t> cpts;
    unicode::DecodeUtf8(text, &cpts);
    std::string out;
    out.reserve(cpts.size());
    for (uint32_t cp : cpts) {
      const int b = unicode::CodepointToByte(cp);
      if (b >= 0) {
        out.push_back(static_cast<char>(b));
      } else {
        std::string utf8;
        unicode::AppendUtf8(cp, &utf8);
        out += "[UNK_BYTE_0x";
        static constexpr char kHex[] = "0123456789abcdef";
        for (unsigned char c : utf8) {
          out += kHex[c >> 4];
          out += kHex[c & 15];
        }
        out += text;
        out += ']';
      }
    }
    return out;
  }
  return {};
}

void VocabTokenizer::Partition(std::string_view text, bool parse_special,
                               std::vector<Fragment>* frags) const {
  // llama.cpp's tokenizer_st_partition: for each special token, longest first, split every
  // raw fragment at each of its (non-overlapping, leftmost-first) occurrences.
  frags->clear();
  if (text.empty()) return;
  frags->push_back({-1, 0, text.size()});
  if (special_tokens_.empty()) return;
  // Which bytes and byte pairs occur: most special tokens can be ruled out without a search.
  std::vector<uint64_t> pairs(65536 / 64, 0);
  std::array<bool, 256> bytes{};
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned b = static_cast<uint8_t>(text[i]);
    bytes[b] = true;
    if (i + 1 < text.size()) {
      const unsigned pair = (b << 8) | static_cast<uint8_t>(text[i + 1]);
      pairs[pair >> 6] |= uint64_t{1} << (pair & 63);
    }
  }
  auto may_occur = [&](std::string_view tok) {
    const unsigned b = static_cast<uint8_t>(tok[0]);
    if (tok.size() == 1) return bytes[b];
    const unsigned pair = (b << 8) | static_cast<uint8_t>(tok[1]);
    return ((pairs[pair >> 6] >> (pair & 63)) & 1) != 0;
  };
  std::vector<Fragment> next;
  for (int32_t id : special_tokens_) {
    const uint32_t attr = vocab_.attr[id];
    if (!parse_special && (attr & (kAttrControl | kAttrUnknown))) continue;
    const std::string_view tok = vocab_.text[id];
    if (!may_occur(tok) || text.find(tok) == std::string_view::npos) continue;
    next.clear();
    bool changed = false;
    for (const Fragment& f : *frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t off = f.offset;
      size_t len = f.length;
      while (len > 0) {
        const size_t hit = text.substr(0, off + len).find(tok, off);
        if (hit == std::string_view::npos) break;
        changed = true;
        if (hit > off) {
          size_t left = hit - off;
          if (attr & kAttrLstrip) {
            while (left > 0 && IsCSpace(text[off + left - 1])) --left;
          }
          if (left > 0) next.push_back({-1, off, left});
        }
        next.push_back({id, 0, 0});
        size_t right = hit + tok.size();
        size_t right_len = off + len - right;
        if (attr & kAttrRstrip) {
          while (right_len > 0 && IsCSpace(text[right])) {
            ++right;
            --right_len;
          }
        }
        off = right;
        len = right_len;
      }
      if (len > 0) next.push_back({-1, off, len});
    }
    if (changed) frags->swap(next);
  }
}

std::vector<int32_t> VocabTokenizer::Encode(std::string_view text, bool add_special,
                                            bool parse_special) const {
  KILN_CHECK(text.size() < (size_t{1} << 31), source_, ": text to tokenize too long (",
             static_cast<uint64_t>(text.size()), " bytes)");
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  std::vector<Fragment> frags;
  Partition(text, parse_special, &frags);

  if (add_special && add_bos_ && bos_ >= 0) out.push_back(bos_);
  if (spm_) {
    bool prev_special = true;  // the first fragment gets the space prefix
    std::string buf;
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        out.push_back(f.token);
        prev_special = true;
        continue;
      }
      buf.clear();
      if (add_space_prefix_ && prev_special) buf = ' ';
      buf.append(text.substr(f.offset, f.length));
      ReplaceAll(&buf, " ", kSpmSpace);
      spm_model_->Encode(buf, &out);
      prev_special = false;
    }
  } else {
    tok::PreTokenized words;
    tok::BpeModel::Scratch scratch;
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        out.push_back(f.token);
        continue;
      }
      pretokenizer_->Split(text.substr(f.offset, f.length), &words);
      uint32_t begin = 0;
      for (uint32_t end : words.ends) {
        bpe_model_->Encode(std::string_view(words.text).substr(begin, end - begin), ignore_merges_,
                           &scratch, &out);
        begin = end;
      }
    }
  }
  if (add_special && add_eos_ && eos_ >= 0) out.push_back(eos_);
  return out;
}

std::string VocabTokenizer::TokenPiece(int32_t id) const {
  CheckId(id);
  if (vocab_.attr[id] & (kAttrUnknown | kAttrControl)) return {};
  return pieces_[id];
}

std::string_view VocabTokenizer::TokenText(int32_t id) const {
  CheckId(id);
  return vocab_.text[id];
}

std::string VocabTokenizer::Decode(std::span<const int32_t> ids, bool skip_special) const {
  // llama_detokenize(remove_special = skip_special, unparse_special = !skip_special).
  const bool remove_special = skip_special;
  const bool unparse_special = !skip_special;
  bool remove_space = add_space_prefix_;
  size_t begin = 0;
  size_t end = ids.size();
  if (remove_special && add_bos_ && end > 0 && ids[0] == bos_) {
    remove_space = false;
    ++begin;
  }
  if (remove_special && add_eos_ && end > begin && ids[end - 1] == eos_) --end;

  std::string out;
  for (size_t i = begin; i < end; ++i) {
    const int32_t id = ids[i];
    CheckId(id);
    const bool hidden = !unparse_special && (vocab_.attr[id] & (kAttrUnknown | kAttrControl));
    if (!hidden) {
      std::string_view piece = pieces_[id];
      if (remove_space && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
      out.append(piece);
    }
    remove_space = false;
  }
  if (clean_spaces_) CleanSpaces(&out);
  return out;
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::FromVocab(const VocabSpec& spec) {
  return std::make_unique<VocabTokenizer>(spec);
}

}  // namespace kiln
