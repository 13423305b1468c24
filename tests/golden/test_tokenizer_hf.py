"""Kiln's tokenizer.json support against the HF `tokenizers` library.

Tokenizers are built without network in a temporary folder: trained with the library's own
trainers under the exact normalizer / pre-tokenizer / decoder / post-processor configurations of
GPT-2, a Llama-2-style SentencePiece BPE (byte_fallback, Prepend+Replace normalizer), a
Mistral-style one (Metaspace prepend_scheme "first"), Qwen2.5 (NFC + its Split regex), Llama-3.x
(its regex + TemplateProcessing), BERT-base-uncased (WordPiece, BertNormalizer), a T5-style
Unigram and a "misc" one (subword prefix / end-of-word suffix, NFKD + StripAccents + Lowercase,
Whitespace + Punctuation + Digits, RobertaProcessing, fused unknown tokens, added tokens with
lstrip / rstrip / single_word), a Unigram with byte_fallback and a "splits" one (every Split
behavior, invert, NFD, BertProcessing); plus SmolLM2's real tokenizer.json rebuilt from its
GGUF (vocabulary and merges).

For every case string: ids of Encode(text, add_special, parse_special) equal
tokenizer.encode(text, add_special_tokens=add_special) with encode_special_tokens = not
parse_special (all four mixes), and Decode(ids, skip_special) equals tokenizer.decode(ids,
skip_special_tokens=skip_special) both ways, also on random id runs. Byte-level tokenizers'
stream pieces (TokenPiece) concatenate to the decoded text. tokenizer_config.json handling is
checked against transformers' LlamaTokenizerFast. Kiln runs as kiln_tokenize_tool (JSON lines).
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

from conftest import require_module
from test_tokenizer_gguf import (CASES, _gguf_read_kvs, _gguf_string_array, _gguf_token_types,
                                 tokenize_tool)  # noqa: F401 (a fixture)

TEXTS = [(name, text) for name, text in CASES if isinstance(text, str)] + [
    ("llama3_special", "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"),
    ("bert_special", "[CLS] hello [SEP] world [MASK] [UNK] [PAD]"),
    ("t5_special", "translate: hello</s><pad> x"),
    ("misc_added", "a <mask> b<mask>c  <mask>  d [WORD] x[WORD] [WORD]y  {NL}  z"),
    ("lowercase_special", "İstanbul ǅ ΣΑΣ Straße"),
    ("contraction_caps", "I'M YOU'RE WE'VE SHE'LL IT'S"),
    ("digits_long", "0123456789 9876543210 3.14159265358979"),
]

FLAG_MIXES = [(False, False), (True, False), (False, True), (True, True)]


def _corpus() -> list[str]:
    base = [t for _, t in TEXTS]
    prose = ("The quick brown fox jumps over the lazy dog. It's a truth universally acknowledged "
             "that a single man in possession of a good fortune must be in want of a wife! "
             "Numbers like 12345 and 3.14 appear; code like def f(x): return x**2 too. "
             "Café naïve résumé über straße. 日本語のテキスト。中文文本。Привет мир. مرحبا بالعالم")
    return base * 3 + [prose] * 20


def _bpe_trainer(tk, vocab_size: int, specials: list[str], byte_level: bool):
    kwargs = {"vocab_size": vocab_size, "special_tokens": specials, "show_progress": False}
    if byte_level:
        kwargs["initial_alphabet"] = tk.pre_tokenizers.ByteLevel.alphabet()
    return tk.trainers.BpeTrainer(**kwargs)


def _add_byte_tokens(path: Path) -> None:
    """Appends <0x00>..<0xFF> to a BPE vocabulary (SentencePiece-style byte fallback)."""
    j = json.loads(path.read_text())
    vocab = j["model"]["vocab"]
    nxt = max(list(vocab.values()) + [t["id"] for t in j["added_tokens"]]) + 1
    for b in range(256):
        name = f"<0x{b:02X}>"
        if name not in vocab:
            vocab[name] = nxt
            nxt += 1
    path.write_text(json.dumps(j, ensure_ascii=False))


def build_gpt2(tk, path: Path) -> None:
    t = tk.Tokenizer(tk.models.BPE())
    t.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True,
                                                  use_regex=True)
    t.decoder = tk.decoders.ByteLevel()
    t.post_processor = tk.processors.ByteLevel(trim_offsets=True)
    t.train_from_iterator(_corpus(), _bpe_trainer(tk, 800, ["<|endoftext|>"], True))
    t.save(str(path))


def build_llama2(tk, path: Path) -> None:
    n, d = tk.normalizers, tk.decoders
    t = tk.Tokenizer(tk.models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    t.normalizer = n.Sequence([n.Prepend("▁"), n.Replace(" ", "▁")])
    t.decoder = d.Sequence([d.Replace("▁", " "), d.ByteFallback(), d.Fuse(), d.Strip(" ", 1, 0)])
    t.train_from_iterator(_corpus(), _bpe_trainer(tk, 700, ["<unk>", "<s>", "</s>"], False))
    t.post_processor = tk.processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", t.token_to_id("<s>"))])
    t.save(str(path))
    _add_byte_tokens(path)


def build_mistral(tk, path: Path) -> None:
    p, d = tk.pre_tokenizers, tk.decoders
    t = tk.Tokenizer(tk.models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    t.pre_tokenizer = p.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    t.decoder = d.Sequence([d.ByteFallback(), d.Metaspace(replacement="▁", prepend_scheme="first"),
                            d.Fuse()])
    t.train_from_iterator(_corpus(), _bpe_trainer(tk, 700, ["<unk>", "<s>", "</s>"], False))
    t.post_processor = tk.processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", 1), ("</s>", 2)])
    t.add_special_tokens(["[INST]", "[/INST]"])
    t.save(str(path))
    _add_byte_tokens(path)


QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
               r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}"
                r"\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def _split_byte_level(tk, regex: str):
    p = tk.pre_tokenizers
    return p.Sequence([p.Split(tk.Regex(regex), behavior="isolated", invert=False),
                       p.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])


def build_qwen2(tk, path: Path) -> None:
    t = tk.Tokenizer(tk.models.BPE())
    t.normalizer = tk.normalizers.NFC()
    t.pre_tokenizer = _split_byte_level(tk, QWEN2_REGEX)
    t.decoder = tk.decoders.ByteLevel()
    t.post_processor = tk.processors.ByteLevel(trim_offsets=False)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    t.train_from_iterator(_corpus(), _bpe_trainer(tk, 900, specials, True))
    t.save(str(path))


def build_llama3(tk, path: Path) -> None:
    t = tk.Tokenizer(tk.models.BPE(ignore_merges=True))
    t.pre_tokenizer = _split_byte_level(tk, LLAMA3_REGEX)
    t.decoder = tk.decoders.ByteLevel()
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                "<|end_header_id|>", "<|eot_id|>"]
    t.train_from_iterator(_corpus(), _bpe_trainer(tk, 900, specials, True))
    t.post_processor = tk.processors.Sequence([
        tk.processors.ByteLevel(trim_offsets=False),
        tk.processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                         special_tokens=[("<|begin_of_text|>", 0)])])
    t.save(str(path))


def build_bert(tk, path: Path) -> None:
    t = tk.Tokenizer(tk.models.WordPiece(unk_token="[UNK]"))
    t.normalizer = tk.normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                 strip_accents=None, lowercase=True)
    t.pre_tokenizer = tk.pre_tokenizers.BertPreTokenizer()
    t.decoder = tk.decoders.WordPiece(prefix="##", cleanup=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    t.train_from_iterator(_corpus(), tk.trainers.WordPieceTrainer(
        vocab_size=700, special_tokens=specials, show_progress=False))
    t.post_processor = tk.processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    t.save(str(path))


def build_unigram(tk, path: Path, corpus: list[str] | None = None) -> None:
    n, p = tk.normalizers, tk.pre_tokenizers
    t = tk.Tokenizer(tk.models.Unigram())
    t.normalizer = n.Sequence([n.NFKC(), n.Replace(tk.Regex(" {2,}"), " ")])
    t.pre_tokenizer = p.Sequence([p.WhitespaceSplit(),
                                  p.Metaspace(replacement="▁", prepend_scheme="always")])
    t.decoder = tk.decoders.Metaspace(replacement="▁", prepend_scheme="always")
    t.train_from_iterator(corpus or _corpus(), tk.trainers.UnigramTrainer(
        vocab_size=600, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>",
        show_progress=False))
    t.post_processor = tk.processors.TemplateProcessing(single="$A </s>",
                                                        special_tokens=[("</s>", 1)])
    t.save(str(path))


def build_unigram_byte_fallback(tk, path: Path) -> None:
    """The Unigram one with byte_fallback and <0xXX> pieces, trained on ASCII only so that the
    other characters fall back to bytes."""
    build_unigram(tk, path, ["".join(c for c in t if ord(c) < 128) for t in _corpus()])
    j = json.loads(path.read_text())
    model = j["model"]
    low = min(score for _, score in model["vocab"])
    model["vocab"] += [[f"<0x{b:02X}>", low - 1.0] for b in range(256)]
    model["byte_fallback"] = True
    j["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "ByteFallback"}, {"type": "Metaspace", "replacement": "▁",
                                   "prepend_scheme": "always", "split": True}]}
    path.write_text(json.dumps(j, ensure_ascii=False))


def build_misc(tk, path: Path) -> None:
    n, p = tk.normalizers, tk.pre_tokenizers
    t = tk.Tokenizer(tk.models.BPE(unk_token="<unk>", continuing_subword_prefix="##",
                                   end_of_word_suffix="</w>", fuse_unk=True))
    t.normalizer = n.Sequence([n.NFKD(), n.StripAccents(), n.Lowercase(), n.Strip()])
    t.pre_tokenizer = p.Sequence([p.Whitespace(), p.Punctuation(behavior="isolated"),
                                  p.Digits(individual_digits=False)])
    t.decoder = tk.decoders.BPEDecoder(suffix="</w>")
    # A limited alphabet leaves rare characters to the (fused) unknown token.
    trainer = tk.trainers.BpeTrainer(vocab_size=700, special_tokens=["<unk>", "<s>", "</s>"],
                                     continuing_subword_prefix="##", end_of_word_suffix="</w>",
                                     limit_alphabet=70, show_progress=False)
    t.train_from_iterator(_corpus(), trainer)
    t.post_processor = tk.processors.RobertaProcessing(sep=("</s>", 2), cls=("<s>", 1))
    t.add_special_tokens([tk.AddedToken("<mask>", lstrip=True, rstrip=True, special=True)])
    t.add_tokens([tk.AddedToken("[WORD]", single_word=True, normalized=False),
                  tk.AddedToken("{nl}", normalized=True)])
    t.save(str(path))


def build_smollm2(tk, path: Path, gguf: Path) -> None:
    """SmolLM2-135M-Instruct's tokenizer.json, rebuilt from the vocabulary in its GGUF."""
    kvs = {k: raw for k, _, raw in _gguf_read_kvs(gguf)[1]}
    tokens = [b.decode("utf-8") for b in _gguf_string_array(kvs["tokenizer.ggml.tokens"])]
    merges = [b.decode("utf-8") for b in _gguf_string_array(kvs["tokenizer.ggml.merges"])]
    types = _gguf_token_types(kvs["tokenizer.ggml.token_type"])
    added = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for i, (s, ty) in enumerate(zip(tokens, types)) if ty == 3]
    j = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": True}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {s: i for i, s in enumerate(tokens)}, "merges": merges},
    }
    path.write_text(json.dumps(j, ensure_ascii=False))


def build_splits(tk, path: Path) -> None:
    """Every Split behavior, invert, String patterns, Digits(individual), NFD, Replace(String),
    BertProcessing."""
    n, p = tk.normalizers, tk.pre_tokenizers
    t = tk.Tokenizer(tk.models.BPE())
    t.normalizer = n.Sequence([n.NFD(), n.Replace("\t", "    ")])
    t.pre_tokenizer = p.Sequence([
        p.Split(" ", behavior="merged_with_next"),
        p.Split(tk.Regex(r"[.,;:!?]"), behavior="merged_with_previous"),
        p.Split(tk.Regex(r"\n+"), behavior="contiguous"),
        p.Split(tk.Regex(r"[a-z]+"), behavior="removed", invert=True),
        p.Digits(individual_digits=True),
        p.ByteLevel(add_prefix_space=True, use_regex=False)])
    t.decoder = tk.decoders.ByteLevel()
    t.train_from_iterator(_corpus(), _bpe_trainer(tk, 600, ["<|endoftext|>"], True))
    t.post_processor = tk.processors.BertProcessing(sep=("<|endoftext|>", 0),
                                                    cls=("<|endoftext|>", 0))
    t.save(str(path))


BUILDERS = {"gpt2": build_gpt2, "llama2": build_llama2, "mistral": build_mistral,
            "qwen2": build_qwen2, "llama3": build_llama3, "bert": build_bert,
            "unigram": build_unigram, "unigram_bf": build_unigram_byte_fallback,
            "misc": build_misc, "splits": build_splits,
            "smollm2": None}


@pytest.fixture(scope="module", params=list(BUILDERS))
def tokenizer_json(request, tmp_path_factory) -> Path:
    tk = require_module("tokenizers")
    name = request.param
    path = tmp_path_factory.mktemp("hf") / f"{name}.json"
    if name == "smollm2":
        gguf = request.getfixturevalue("smollm2_gguf")
        build_smollm2(tk, path, gguf)
    else:
        BUILDERS[name](tk, path)
    return path


def run_tool(exe: Path, path: Path, requests: list[dict]) -> list[dict]:
    inp = "".join(json.dumps(r) + "\n" for r in requests)
    proc = subprocess.run([str(exe), str(path)], input=inp, capture_output=True, text=True,
                          encoding="utf-8", timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = [json.loads(line) for line in proc.stdout.split("\n") if line]
    assert len(out) == len(requests), proc.stderr[-2000:]
    return out


def test_case_count():
    assert len(TEXTS) >= 50


def test_encode_decode_match_tokenizers(tokenizer_json, tokenize_tool):
    tk = require_module("tokenizers")
    ref = tk.Tokenizer.from_file(str(tokenizer_json))
    requests, expected = [], []
    for name, text in TEXTS:
        for add_special, parse_special in FLAG_MIXES:
            ref.encode_special_tokens = not parse_special
            ids = ref.encode(text, add_special_tokens=add_special).ids
            requests.append({"text": text, "add_special": add_special,
                             "parse_special": parse_special})
            expected.append(("encode", name, add_special, parse_special, ids))
        ref.encode_special_tokens = False
        ids = ref.encode(text, add_special_tokens=True).ids
        for skip in (True, False):
            requests.append({"ids": ids, "skip_special": skip})
            expected.append(("decode", name, skip, None, ref.decode(ids, skip_special_tokens=skip)))
    rng = random.Random(1234)
    size = ref.get_vocab_size(with_added_tokens=True)
    for i in range(30):  # arbitrary id runs: partial characters, byte tokens, specials mid-text
        ids = [rng.randrange(size) for _ in range(rng.randrange(1, 12))]
        for skip in (True, False):
            requests.append({"ids": ids, "skip_special": skip})
            expected.append(("decode", f"random{i}", skip, ids,
                             ref.decode(ids, skip_special_tokens=skip)))
    got = run_tool(tokenize_tool, tokenizer_json, requests)
    failures = []
    for exp, resp in zip(expected, got):
        kind, name, a, b, want = exp
        have = resp.get("ids") if kind == "encode" else resp.get("text")
        if "error" in resp or have != want:
            failures.append(f"{kind} {name} ({a}, {b}): kiln {resp.get('error') or have!r}\n"
                            f"{' ' * (len(kind) + len(name) + 8)}  ref  {want!r}")
    assert not failures, f"{len(failures)} mismatches:\n" + "\n".join(failures[:15])


def test_info_matches_tokenizers(tokenizer_json, tokenize_tool):
    tk = require_module("tokenizers")
    ref = tk.Tokenizer.from_file(str(tokenizer_json))
    info = run_tool(tokenize_tool, tokenizer_json, [{"info": True}])[0]
    assert info["vocab_size"] == max(ref.get_vocab(with_added_tokens=True).values()) + 1


def test_byte_level_pieces_concatenate_to_text(tokenizer_json, tokenize_tool):
    tk = require_module("tokenizers")
    ref = tk.Tokenizer.from_file(str(tokenizer_json))
    if json.loads(tokenizer_json.read_text())["decoder"]["type"] != "ByteLevel":
        pytest.skip("stream pieces equal Decode only for byte-level decoders")
    requests, expected = [], []
    for _, text in TEXTS:
        ids = ref.encode(text, add_special_tokens=False).ids
        requests.append({"pieces": ids})
        expected.append(ref.decode(ids, skip_special_tokens=True).encode())
    for req, want, resp in zip(requests, expected, run_tool(tokenize_tool, tokenizer_json, requests)):
        have = b"".join(bytes.fromhex(h) for h in resp["pieces_hex"])
        assert have == want, f"pieces of {req['pieces']}: {have!r} != {want!r}"


CONFIG_TEXTS = ["Hello , world . It 's here !", " leading space", "a<s>b</s>c", "",
                "don 't do not stop ?"]


@pytest.mark.parametrize("cls,add_bos,add_eos", [
    ("LlamaTokenizerFast", True, False), ("LlamaTokenizerFast", False, True),
    ("LlamaTokenizerFast", True, True), ("LlamaTokenizerFast", None, None),
    ("PreTrainedTokenizerFast", True, True), ("GPT2Tokenizer", True, None)])
def test_tokenizer_config_matches_transformers(tmp_path, tokenize_tool, cls, add_bos, add_eos):
    """tokenizer_config.json (add_bos/eos_token with each class's rules and defaults,
    clean_up_tokenization_spaces, special token names) as transformers applies it."""
    tk = require_module("tokenizers")
    transformers = require_module("transformers")
    build_llama2(tk, tmp_path / "tokenizer.json")
    config = {"tokenizer_class": cls, "bos_token": "<s>", "eos_token": "</s>",
              "unk_token": "<unk>", "add_bos_token": add_bos, "add_eos_token": add_eos,
              "clean_up_tokenization_spaces": True, "legacy": True,
              "chat_template": "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}"}
    config = {k: v for k, v in config.items() if v is not None}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    ref = transformers.AutoTokenizer.from_pretrained(str(tmp_path), local_files_only=True)
    requests, expected = [{"info": True}], [None]
    for text in CONFIG_TEXTS:
        ids = ref(text, add_special_tokens=True)["input_ids"]
        requests.append({"text": text, "add_special": True, "parse_special": True})
        expected.append(ids)
        requests.append({"ids": ids, "skip_special": True})
        expected.append(ref.decode(ids, skip_special_tokens=True))
    got = run_tool(tokenize_tool, tmp_path, requests)
    info = got[0]
    assert (info["bos"], info["eos"]) == (ref.bos_token_id, ref.eos_token_id)
    probe = ref("", add_special_tokens=True)["input_ids"]
    assert info["adds_bos"] == (probe[:1] == [ref.bos_token_id])
    assert info["adds_eos"] == (probe[-1:] == [ref.eos_token_id])
    for req, want, resp in zip(requests[1:], expected[1:], got[1:]):
        have = resp.get("ids") if "text" in req else resp.get("text")
        assert have == want, f"{req}: kiln {resp}, transformers {want!r}"
