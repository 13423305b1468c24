"""Speculative decoding leaves outputs unchanged (issue #29): `kiln generate --batch` with
`--speculate 4` (n-gram drafts, verified in one forward) against the same requests without it,
token for token and logprob for logprob, greedy and seeded sampling mixed, at batch 1 and 16, on
stories260K (F32 weights, f32 KV) and SmolLM2 Q4_1 (f16 KV).

The prompts mix what drafts predict (text to repeat or fix, code to copy with a change, a
looping story) with what they do not (random words), 200 at batch 16, 48 alone; drafts from a
draft model (SmolLM2 drafting for itself) on 64 at batch 16. A sampled token
is drawn with the same Philox counter whether it came from a verified draft position or not,
so seeded outputs must be identical too; the chi-square test below checks the distribution of
a late token over many seeds as the statistical form of the same claim.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter

import pytest

from test_batch_invariance import _STARTS

MAX_NEW = 24

_COPY = [
    "Repeat after me: {s}. Again: {s}. Once more: {s}.",
    "Fix the spelling and print the text again: {s} is a sentance with mistaks. {s}",
    "def f(x):\n    # {s}\n    return x + 1\n\n# The same function, renamed to g:\ndef g(x):\n    #",
    "List: {s}; {s}; {s};",
]


def mixed_prompts(model: str, n: int) -> list[str]:
    rng = random.Random(29)
    starts = _STARTS[model]
    words = " ".join(starts).lower().replace(".", "").split()
    out = []
    for i in range(n):
        s = starts[i % len(starts)]
        kind = i % 3
        if kind == 0:
            text = _COPY[(i // 3) % len(_COPY)].format(s=s)
        elif kind == 1:
            text = " ".join(rng.choice(words) for _ in range(8 + i % 17))
        else:
            text = f"{s} {i}"
        out.append(text)
    return out


def write_requests(path, prompts: list[str]):
    lines = []
    for i, p in enumerate(prompts):
        r = {"prompt": p, "max_new_tokens": MAX_NEW}
        if i % 4 == 1:
            r["ignore_eos"] = True
        if i % 2 == 1:
            r.update(temperature=0.8, top_p=0.9, seed=2000 + i)
        lines.append(json.dumps(r))
    path.write_text("\n".join(lines) + "\n")


def run(run_kiln, model_path, requests, *extra):
    proc = run_kiln("generate", "--model-id", model_path, "--batch", requests, "--details",
                    *extra)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    for r in rows:
        assert "error" not in r, r
    return rows, proc.stderr


SPECULATE = ("--speculate", 4, "--speculate-all-drafts")


def assert_same(spec, plain, what):
    assert len(spec) == len(plain)
    for s, p in zip(spec, plain):
        if s["token_ids"] != p["token_ids"]:
            at = next((i for i, (x, y) in enumerate(zip(s["token_ids"], p["token_ids"]))
                       if x != y), min(len(s["token_ids"]), len(p["token_ids"])))
            pytest.fail(f"{what}: request {s['index']} differs from token {at}:\n"
                        f"  speculative {s['token_ids']}\n  plain       {p['token_ids']}",
                        pytrace=False)
        assert s["finish_reason"] == p["finish_reason"]
        assert s["generated_text"] == p["generated_text"]
        assert [t["logprob"] for t in s["tokens"]] == [t["logprob"] for t in p["tokens"]], what


@pytest.fixture(scope="module")
def model_paths(stories_gguf, smollm2_gguf):
    return {"stories": stories_gguf, "smollm2": smollm2_gguf}


CASES = [(m, b, "ngram") for m in ("stories", "smollm2") for b in (16, 1)] + \
    [("smollm2", 16, "draft")]


@pytest.mark.parametrize("model,batch,drafts", CASES,
                         ids=[f"{m}-batch{b}-{d}" for m, b, d in CASES])
def test_speculation_changes_no_token(run_kiln, model_paths, tmp_path, model, batch, drafts):
    """drafts: n-gram lookup, or a draft model (the same file: a draft that agrees with the
    model at every greedy step, so the draft model's own KV bookkeeping is what is tested)."""
    prompts = mixed_prompts(model, 48 if batch == 1 else 64 if drafts == "draft" else 200)
    requests = tmp_path / "requests.jsonl"
    write_requests(requests, prompts)
    flags = ("--max-batch-size", batch, "--cores", "0-1")
    # Every proposal verified: in batches of 16 too, where the cost model would drop them.
    extra = ("--draft-model", model_paths[model]) if drafts == "draft" else ()
    spec, log = run(run_kiln, model_paths[model], requests, *flags, *SPECULATE, *extra)
    plain, _ = run(run_kiln, model_paths[model], requests, *flags)
    assert_same(spec, plain, f"{model} batch {batch}")
    drafted, accepted = map(int, re.search(r"(\d+) drafted tokens, (\d+) accepted", log).groups())
    assert drafted > 0 and accepted > 0, log
    if drafts == "draft":
        assert accepted > 0.5 * drafted, log
    assert len({tuple(r["token_ids"]) for r in plain}) > len(prompts) // 2, "degenerate outputs"


def chi_square_critical(dof: int, alpha: float = 0.01) -> float:
    """Upper alpha quantile of chi-square(dof) by Wilson-Hilferty (error < 1% for dof >= 3)."""
    z = {0.01: 2.3263, 0.05: 1.6449}[alpha]
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3


def test_sampled_token_distribution_is_unchanged(run_kiln, stories_gguf, tmp_path):
    """The 12th token of one prompt over 400 seeds (temperature 1.0), with and without
    speculation: chi-square test of homogeneity at significance 0.01, categories with fewer
    than 5 expected draws merged."""
    requests = tmp_path / "seeds.jsonl"
    lines = [json.dumps({"prompt": "Once upon a time, there was a little", "max_new_tokens": 12,
                         "ignore_eos": True, "do_sample": True, "temperature": 1.0,
                         "seed": s})
             for s in range(400)]
    requests.write_text("\n".join(lines) + "\n")
    counts = []
    for extra in (SPECULATE, ()):
        rows, _ = run(run_kiln, stories_gguf, requests, "--max-batch-size", 16, *extra)
        counts.append(Counter(r["token_ids"][-1] for r in rows))
    a, b = counts
    n_a, n_b = sum(a.values()), sum(b.values())
    merged_a = merged_b = 0
    stat, dof = 0.0, -1
    for token in sorted(set(a) | set(b)):
        total = a[token] + b[token]
        if total * min(n_a, n_b) / (n_a + n_b) < 5:
            merged_a, merged_b = merged_a + a[token], merged_b + b[token]
            continue
        for observed, n in ((a[token], n_a), (b[token], n_b)):
            expected = total * n / (n_a + n_b)
            stat += (observed - expected) ** 2 / expected
        dof += 1
    if merged_a + merged_b > 0:
        for observed, n in ((merged_a, n_a), (merged_b, n_b)):
            expected = (merged_a + merged_b) * n / (n_a + n_b)
            stat += (observed - expected) ** 2 / expected
        dof += 1
    assert dof >= 3, f"too few categories: {a}"
    assert stat < chi_square_critical(dof), f"chi-square {stat:.2f} at {dof} dof: {a} vs {b}"
