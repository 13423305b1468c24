"""`kiln generate`'s sampling and stopping flags reach the engine, alone and per --batch line
(stories260K, so each run takes milliseconds)."""

from __future__ import annotations

import json
import subprocess

from conftest import parse_json_stdout

PROMPT = "Once upon a time"


def details(run_kiln, path, *args):
    return parse_json_stdout(run_kiln("generate", "--model-id", path, "--prompt", PROMPT,
                                      "--details", *args).stdout)


def test_stop_sequence_ends_the_text_before_it(run_kiln, stories_gguf):
    free = details(run_kiln, stories_gguf, "--max-new-tokens", 20)
    assert " girl" in free["generated_text"], free["generated_text"]
    got = details(run_kiln, stories_gguf, "--max-new-tokens", 20, "--stop", " girl",
                  "--stop", "never")
    assert got["finish_reason"] == "stop_sequence"
    assert got["generated_text"] == free["generated_text"].split(" girl")[0]


def test_seed_reproduces_and_differs(run_kiln, stories_gguf):
    args = ("--max-new-tokens", 16, "--temperature", 1.5, "--top-k", 50)
    a = details(run_kiln, stories_gguf, *args, "--seed", 7)
    b = details(run_kiln, stories_gguf, *args, "--seed", 7)
    others = [details(run_kiln, stories_gguf, *args, "--seed", s)["token_ids"] for s in (8, 9)]
    assert a["token_ids"] == b["token_ids"] and a["seed"] == 7
    assert any(o != a["token_ids"] for o in others)


def test_penalties_and_warpers_change_greedy_output(run_kiln, stories_gguf):
    base = details(run_kiln, stories_gguf, "--max-new-tokens", 40)["token_ids"]
    rep = details(run_kiln, stories_gguf, "--max-new-tokens", 40, "--repetition-penalty", 2.0)
    assert rep["token_ids"] != base
    freq = details(run_kiln, stories_gguf, "--max-new-tokens", 40, "--frequency-penalty", 2.0)
    assert freq["token_ids"] != base


def test_top_n_tokens_and_min_new_tokens(run_kiln, stories_gguf):
    got = details(run_kiln, stories_gguf, "--max-new-tokens", 6, "--top-n-tokens", 3)
    assert all(len(t["top_tokens"]) == 3 for t in got["tokens"])
    # Greedy: the chosen token is the first alternative, with the same logprob.
    assert all(t["top_tokens"][0]["id"] == t["id"] for t in got["tokens"])
    long = details(run_kiln, stories_gguf, "--max-new-tokens", 100, "--min-new-tokens", 90)
    assert long["generated_tokens"] >= 90


def test_batch_lines_override_flags_and_report_errors(run_kiln, stories_gguf, kiln_bin,
                                                      tmp_path):
    f = tmp_path / "b.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in [
        {"prompt": PROMPT, "max_new_tokens": 3},
        {"prompt_ids": [1, 403, 407], "stop": " there", "details": True},
        {"prompt": PROMPT, "max_new_tokens": 500},  # beyond the context of 128: refused
    ]) + "\n")
    out = run_kiln("generate", "--model-id", stories_gguf, "--batch", f, "--max-new-tokens", 8)
    rows = [json.loads(l) for l in out.stdout.splitlines()]
    assert [r["index"] for r in rows] == [0, 1, 2]
    assert rows[0]["generated_tokens"] == 3 and "tokens" not in rows[0]
    assert rows[1]["prompt_token_ids"] == [1, 403, 407] and "tokens" in rows[1]
    assert rows[2]["finish_reason"] == "error" and rows[2]["error"]
    f.write_text('{"prompt": "x", "temprature": 0.5}\n')
    proc = subprocess.run([str(kiln_bin), "generate", "--model-id", str(stories_gguf), "--batch",
                           str(f)], capture_output=True, text=True)
    assert proc.returncode != 0 and "b.jsonl:1: unknown field `temprature`" in proc.stderr
