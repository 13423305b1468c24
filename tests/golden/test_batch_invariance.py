"""Batch invariance through the engine: `kiln generate --batch` runs 32 prompts together with
continuous batching (mixed prompt lengths, shared prefixes, staggered arrival so requests join
mid-flight, chunked prefill mixed with decodes), and every request's tokens must equal the same
request run alone, token for token. Greedy and seeded sampling (temperature 0.8, top-p 0.9, one
seed per request), f32 and bf16 KV cache, on stories260K (F32 weights) and SmolLM2 Q4_1.

"Alone" is the same file run with --max-batch-size 1 (every step holds one sequence, so each
matmul has only that sequence's rows); a few prompts are also run through the one-prompt path
(`--prompt`) to tie that path to it. Any difference means some kernel's per-row result depends
on the other rows of the batch (M, row placement) or on the chunking of the prompt.

  kiln generate --model-id FILE --batch requests.jsonl [--max-batch-size 1] --details
  requests.jsonl: {"prompt": str, "max_new_tokens": 24, "arrival_step": N, "seed": S, ...}
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import parse_json_stdout

MAX_NEW = 24
N_PROMPTS = 32

_STARTS = {
    "stories": ["Once upon a time", "One day, a little girl named Lily", "Tom had a big red ball.",
                "The sun was shining and the birds", "There was a small dog who liked to",
                "Sue and her mom went to the park.", "A cat sat on", "Ben"],
    "smollm2": ["The capital of France is", "def fibonacci(n):\n    ",
                "Water boils at a temperature of", "In a small village by the sea, there lived",
                "List three primary colors:", "The quick brown fox", "Q: What is 7 times 8?\nA:",
                "Photosynthesis is the process by which"],
}
_TAILS = ["", " and then", ", but one day something strange happened and everyone",
          " because", " with a friend who"]


def prompts(model: str) -> list[str]:
    """32 distinct prompts of mixed lengths; prompts sharing a start share KV prefix blocks."""
    starts = _STARTS[model]
    out = []
    for i in range(N_PROMPTS):
        text = starts[i % len(starts)] + _TAILS[(i // len(starts)) % len(_TAILS)]
        if i >= len(starts) * len(_TAILS):
            text += " again"
        out.append(text)
    assert len(set(out)) == N_PROMPTS
    return out


def write_requests(path, model: str, mode: str, staggered: bool):
    """mode: "greedy", "sampled", or "mixed" (even requests greedy, odd ones sampled)."""
    lines = []
    for i, p in enumerate(prompts(model)):
        r = {"prompt": p, "max_new_tokens": MAX_NEW}
        if i % 3 == 1:
            r["ignore_eos"] = True  # some run their full length whatever the model says
        if mode == "sampled" or (mode == "mixed" and i % 2 == 1):
            r.update(temperature=0.8, top_p=0.9, seed=1000 + i)
        if staggered:
            r["arrival_step"] = 0 if i % 4 == 0 else (i * 5) % 37
        lines.append(json.dumps(r))
    path.write_text("\n".join(lines) + "\n")


def run_batch(run_kiln, model_path, requests, *extra):
    proc = run_kiln("generate", "--model-id", model_path, "--batch", requests, "--details",
                    *extra)
    rows = [json.loads(l) for l in proc.stdout.splitlines() if l.strip()]
    assert [r["index"] for r in rows] == list(range(N_PROMPTS))
    for r in rows:
        assert "error" not in r, r
        assert r["finish_reason"] in ("length", "eos_token"), r
    return rows, proc.stderr


def assert_same(batched, alone, what):
    for b, a in zip(batched, alone):
        assert b["prompt_token_ids"] == a["prompt_token_ids"]
        if b["token_ids"] != a["token_ids"]:
            diverge = next((i for i, (x, y) in enumerate(zip(b["token_ids"], a["token_ids"]))
                            if x != y), min(len(b["token_ids"]), len(a["token_ids"])))
            pytest.fail(f"{what}: request {b['index']} differs from step {diverge}:\n"
                        f"  batched {b['token_ids']}\n  alone   {a['token_ids']}", pytrace=False)
        assert b["finish_reason"] == a["finish_reason"]
        assert b["generated_text"] == a["generated_text"]
        # Identical logits give identical logprobs (the raw model distribution).
        assert [t["logprob"] for t in b["tokens"]] == [t["logprob"] for t in a["tokens"]]


@pytest.fixture(scope="module")
def model_paths(stories_gguf, smollm2_gguf):
    return {"stories": stories_gguf, "smollm2": smollm2_gguf}


# bf16 runs greedy and seeded requests in one batch, to keep the suite short.
CASES = [(m, mode, d) for m in ("stories", "smollm2")
         for mode, d in (("greedy", "f32"), ("sampled", "f32"), ("mixed", "bf16"))]


@pytest.mark.parametrize("model,mode,kv_dtype", CASES, ids=[f"{m}-{s}-{d}" for m, s, d in CASES])
def test_batched_equals_alone(run_kiln, model_paths, tmp_path, model, mode, kv_dtype):
    path = model_paths[model]
    staggered, plain = tmp_path / "staggered.jsonl", tmp_path / "plain.jsonl"
    write_requests(staggered, model, mode, staggered=True)
    write_requests(plain, model, mode, staggered=False)
    dtype = ("--kv-cache-dtype", kv_dtype)
    # Small prefill budget: prompts are chunked and share steps with other sequences' decodes.
    batched, _ = run_batch(run_kiln, path, staggered, *dtype, "--max-batch-prefill-tokens", 48)
    alone, _ = run_batch(run_kiln, path, plain, *dtype, "--max-batch-size", 1)
    assert_same(batched, alone, f"{model} {kv_dtype} {mode}")
    for r in batched:
        if mode == "sampled" or (mode == "mixed" and r["index"] % 2 == 1):
            assert r["seed"] == 1000 + r["index"]
    assert len({tuple(r["token_ids"]) for r in batched}) > N_PROMPTS // 2, "degenerate outputs"


@pytest.mark.parametrize("model", ["stories", "smollm2"])
def test_one_prompt_path_equals_batch(run_kiln, model_paths, tmp_path, model):
    """`--prompt` (the one-request path) == the same request inside --batch."""
    path = model_paths[model]
    requests = tmp_path / "r.jsonl"
    write_requests(requests, model, "sampled", staggered=True)
    batched, _ = run_batch(run_kiln, path, requests)
    for i in (1, 30):
        args = ["generate", "--model-id", path, "--prompt", prompts(model)[i], "--details",
                "--max-new-tokens", MAX_NEW, "--temperature", 0.8, "--top-p", 0.9,
                "--seed", 1000 + i]
        if i % 3 == 1:
            args.append("--ignore-eos")
        one = parse_json_stdout(run_kiln(*args).stdout)
        assert one["prompt_token_ids"] == batched[i]["prompt_token_ids"]
        assert [t["id"] for t in one["tokens"]] == batched[i]["token_ids"], f"prompt {i}"
        assert one["generated_text"] == batched[i]["generated_text"]


def test_preemption_keeps_outputs(run_kiln, model_paths, tmp_path):
    """A KV pool too small for the batch forces preemption (recompute from the prefix cache);
    seeded outputs stay those of the requests run alone."""
    path = model_paths["stories"]
    requests = tmp_path / "r.jsonl"
    write_requests(requests, "stories", "sampled", staggered=True)
    batched, stderr = run_batch(run_kiln, path, requests, "--max-batch-total-tokens", 320)
    alone, _ = run_batch(run_kiln, path, requests, "--max-batch-size", 1)
    m = re.search(r"(\d+) preemptions", stderr)
    assert m and int(m.group(1)) > 0, f"no preemption happened: {stderr[-500:]}"
    assert_same(batched, alone, "stories preempted")
