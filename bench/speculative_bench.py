#!/usr/bin/env python3
"""Speculative decoding (n-gram / prompt lookup, issue #29): single-stream decode tok/s of
`kiln serve --speculate K` against the same server without it, and llama.cpp's prompt-lookup
example (`llama-lookup --draft-max K`, built from the vendor/llama.cpp of llama-cpp-python's
sdist; same GGUF, same cores) against the same program with --draft-max 0, in one run, on
these prompt sets:

  edit    outputs that copy their input (fix the spelling, reformat, extract, repeat code
          with a change): where prompt lookup pays;
  random  prompts of random words (greedy: this small model soon loops, which drafts predict);
  random-sampled  the same at temperature 1.0, seeded: the adversarial case, where drafts are
          seldom right and speculation must cost (almost) nothing.

Kiln's token ids with and without speculation are compared: identical, greedy and seeded.
Decode tok/s = (generated - 1) / (last token time - first token time), summed over the set.
--rounds R alternates Kiln without / with R times (order alternating) and reports the median
of the rounds' ratios: this host's speed drifts by 5-10% between minutes. --batch 16 adds
`kiln bench` throughput at 16 concurrent streams with and without, alternated the same way.

usage: bench/speculative_bench.py [--model FILE.gguf] [--cores 0] [--k 4] [--max-new 160]
       [--sets edit,random,random-sampled] [--rounds 3] [--llama-lookup PATH] [--batch 16]
       [--flags "--speculate-max-step-tokens 4"]
       [--draft-model DRAFT.gguf --llama-speculative PATH/llama-speculative-simple]
"""
from __future__ import annotations

import argparse
import http.client
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from server_overhead import Serve  # noqa: E402

PARAGRAPHS = [
    "The quick brwon fox jumps over the lazy dog. It was a sunny day in the vilage, and the "
    "childen were playing in the park near the river. Their parents watched from the benches, "
    "talking about the wether and the upcoming harvest festval.",
    "Our compnay was founded in 1998 by three engineers who beleived that software should be "
    "simple, reliable and fast. Today we employ more than two hundred peple in four offices, "
    "and our products are used by thousands of custommers around the world.",
    "To install the package, downlod the archive, unpack it into a new directory and run the "
    "setup script. The script checks your sistem for the required libraries, builds the "
    "extensions and copies the files into place. Restart your terminal when it is finshed.",
    "The museum opens at nine o'clock every morning exept on Mondays. Tickets can be bought at "
    "the entrance or online, and children under twelve enter for free. Guided tours in english "
    "and french start every hour from the main hall.",
]

CODE = '''def load_config(path):
    with open(path) as f:
        data = json.load(f)
    if "name" not in data:
        raise ValueError("config needs a name")
    data.setdefault("port", 8080)
    data.setdefault("host", "127.0.0.1")
    data.setdefault("workers", 4)
    return data
'''


def chat(user: str) -> str:
    return f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"


def edit_prompts() -> list[str]:
    out = []
    for p in PARAGRAPHS:
        out.append(chat(f"Fix the spelling mistakes in this text and change nothing else:\n\n{p}"))
        out.append(chat(f"Repeat this text exactly, then say how many sentences it has:\n\n{p}"))
    out.append(chat(f"Rename the function load_config to read_config in this code and print "
                    f"the whole code:\n\n{CODE}"))
    out.append(chat(f"Add a docstring to this function and print the whole code:\n\n{CODE}"))
    return out


def random_prompts(n: int = 8) -> list[str]:
    rng = random.Random(29)
    words = [w for p in PARAGRAPHS for w in p.lower().replace(".", "").split()]
    out = []
    for _ in range(n):
        text = " ".join(rng.choice(words) for _ in range(60))
        out.append(chat(f"Write a new story that uses none of these words: {text}"))
    return out


def kiln_stream(url: str, prompt: str, max_new: int,
                sampled: bool = False) -> tuple[list[int], list[float]]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=600)
    params = {"max_new_tokens": max_new}
    if sampled:
        params.update(do_sample=True, temperature=1.0, seed=29)
    body = json.dumps({"inputs": prompt, "parameters": params})
    conn.request("POST", "/generate_stream", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    ids, times = [], []
    for raw in resp:
        line = raw.decode().strip()
        if not line.startswith("data:"):
            continue
        event = json.loads(line[5:])
        if event.get("token"):
            ids.append(event["token"]["id"])
            times.append(time.perf_counter())
    conn.close()
    return ids, times


def decode_rate(runs: list[tuple[list[int], list[float]]]) -> float:
    tokens = sum(len(ids) - 1 for ids, _ in runs if len(ids) > 1)
    seconds = sum(t[-1] - t[0] for ids, t in runs if len(ids) > 1)
    return tokens / seconds if seconds > 0 else 0.0


def run_kiln(a, k: int, prompts: list[str],
             sampled: bool) -> list[tuple[list[int], list[float]]]:
    log = Path(tempfile.gettempdir()) / f"kiln-speculative-{k}.log"
    extra = a.flags.split() if k else []
    if k and a.draft_model:
        extra += ["--draft-model", a.draft_model]
    s = Serve(Path(a.kiln), Path(a.model), ["--cores", a.cores, "--speculate", str(k), *extra],
              log)
    try:
        kiln_stream(s.url, prompts[0], 8)  # warm-up
        return [kiln_stream(s.url, p, a.max_new, sampled) for p in prompts]
    finally:
        s.stop()


def run_peer(a, k: int, prompts: list[str], sampled: bool) -> tuple[int, float]:
    """llama.cpp's prompt-lookup example (llama-lookup, n-gram cache drafting, same GGUF and
    threads); --draft-max 0 is the same program without speculation. (generated tokens,
    decode seconds) summed over the prompts, from its "decoded N tokens in S seconds" line."""
    threads = str(len(parse_cores(a.cores)))
    sampling = ["--temp", "1.0", "--top-k", "0", "--top-p", "1.0", "--min-p", "0",
                "--seed", "29"] if sampled else ["--temp", "0"]
    tokens, seconds = 0, 0.0
    # With --draft-model: llama-speculative-simple with the same draft file (-md); its baseline
    # stays llama-lookup --draft-max 0 (the same decoding loop without drafts).
    if a.draft_model and k:
        program = [a.llama_speculative, "-md", a.draft_model, "-tbd", threads, "-td", threads]
    else:
        program = [a.llama_lookup]
    for p in prompts:
        proc = subprocess.run(["taskset", "-c", a.cores, *program, "-m", a.model, "-p", p,
                               "-n", str(a.max_new), "--draft-max", str(k), "-t", threads,
                               "-tb", threads, "-c", "2048", *sampling],
                              capture_output=True, text=True, timeout=600)
        m = re.search(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds", proc.stderr + proc.stdout)
        if m is None:
            raise SystemExit(f"llama-lookup: no timing line:\n{proc.stderr[-2000:]}")
        tokens, seconds = tokens + int(m.group(1)), seconds + float(m.group(2))
    return tokens, seconds


def parse_cores(spec: str) -> list[int]:
    out = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def batch_throughput(a, k: int) -> float:
    log = Path(tempfile.gettempdir()) / f"kiln-speculative-batch-{k}.log"
    extra = a.flags.split() if k else []
    s = Serve(Path(a.kiln), Path(a.model), ["--cores", a.cores, "--speculate", str(k), *extra],
              log)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report.json"
            subprocess.run([a.kiln, "bench", "--target", s.url, "--profile", "concurrent",
                            "--rate", str(a.batch), "--max-requests", str(10 * a.batch),
                            "--data", "prompt_tokens=64,output_tokens=64", "--no-progress",
                            "--output", str(out)], check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            m = json.loads(out.read_text())["benchmarks"][0]["metrics"]
        return m["output_tokens_per_second"]
    finally:
        s.stop()


def alternate(rounds: int, measure) -> tuple[list[float], list[float], list]:
    """measure(k_on: bool) -> (rate, payload); rounds alternate which runs first."""
    off, on, payloads = [], [], []
    for r in range(rounds):
        order = (False, True) if r % 2 == 0 else (True, False)
        got = {flag: measure(flag) for flag in order}
        off.append(got[False][0])
        on.append(got[True][0])
        payloads.append((got[False][1], got[True][1]))
    return off, on, payloads


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kiln", default=str(REPO / "build" / "kiln"))
    p.add_argument("--model", default=None)
    p.add_argument("--cores", default="0")
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--max-new", type=int, default=160)
    p.add_argument("--sets", default="edit,random,random-sampled")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--llama-lookup", default=None)
    p.add_argument("--draft-model", default=None,
                   help="draft with this model (kiln --draft-model, llama-speculative-simple -md)")
    p.add_argument("--llama-speculative", default=None,
                   help="llama-speculative-simple, for the peer with --draft-model")
    p.add_argument("--flags", default="", help="more kiln serve flags for the speculative runs")
    p.add_argument("--batch", type=int, default=0)
    a = p.parse_args()
    if a.model is None:
        from tracing_overhead import default_model
        a.model = default_model()
    sets = {"edit": edit_prompts(), "random": random_prompts(),
            "random-sampled": random_prompts()}
    print(f"| set (prompts) | Kiln tok/s | Kiln --speculate {a.k} {a.flags} | speed-up (rounds) "
          f"| llama-lookup --draft-max 0 | {'llama-speculative-simple' if a.draft_model else 'llama-lookup'} --draft-max {a.k} | speed-up | Kiln tokens identical |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in a.sets.split(","):
        prompts, sampled = sets[name], name.endswith("sampled")

        def kiln(on: bool):
            runs = run_kiln(a, a.k if on else 0, prompts, sampled)
            return decode_rate(runs), [ids for ids, _ in runs]

        off, on, payloads = alternate(a.rounds, kiln)
        same = min(sum(x == y for x, y in zip(b, s)) for b, s in payloads)
        ratios = [y / x for x, y in zip(off, on)]
        row = (f"| {name} ({len(prompts)}) | {statistics.median(off):.1f} | "
               f"{statistics.median(on):.1f} | {statistics.median(ratios):.2f}x "
               f"({', '.join(f'{r:.2f}' for r in ratios)}) |")
        if a.llama_lookup:
            def peer(on: bool):
                tokens, seconds = run_peer(a, a.k if on else 0, prompts, sampled)
                return tokens / seconds, None

            poff, pon, _ = alternate(a.rounds, peer)
            pr = [y / x for x, y in zip(poff, pon)]
            row += (f" {statistics.median(poff):.1f} | {statistics.median(pon):.1f} | "
                    f"{statistics.median(pr):.2f}x |")
        else:
            row += " – | – | – |"
        print(row + f" {same}/{len(prompts)} |", flush=True)
    if a.batch:
        off, on, _ = alternate(a.rounds, lambda flag: (batch_throughput(a, a.k if flag else 0),
                                                        None))
        ratios = [y / x for x, y in zip(off, on)]
        print(f"\n{a.batch} concurrent streams (kiln bench, 64+64 tokens, {10 * a.batch} "
              f"requests): {statistics.median(off):.1f} tok/s without, "
              f"{statistics.median(on):.1f} with --speculate {a.k} {a.flags} (ratios "
              f"{', '.join(f'{r:.3f}' for r in ratios)})")


if __name__ == "__main__":
    main()
