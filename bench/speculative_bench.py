#!/usr/bin/env python3
"""Speculative decoding (n-gram / prompt lookup, issue #29): single-stream decode tok/s of
`kiln serve --speculate K` against the same server without it, and llama.cpp's prompt-lookup
decoding (llama-cpp-python's LlamaPromptLookupDecoding, same GGUF, same thread count) against
llama.cpp without it, in one run, on two prompt sets:

  edit    outputs that copy their input (fix the spelling, reformat, extract, repeat code
          with a change): where prompt lookup pays;
  random  prompts of random words (greedy: this small model soon loops, which drafts predict);
  random-sampled  the same at temperature 1.0, seeded: the adversarial case, where drafts are
          seldom right and speculation must cost (almost) nothing.

Kiln's token ids with and without speculation are compared: identical, greedy and seeded.
Decode tok/s = (generated - 1) / (last token time - first token time), summed over the set.
--batch 16 adds `kiln bench` throughput at 16 concurrent streams with and without.

usage: bench/speculative_bench.py [--model FILE.gguf] [--cores 0] [--k 4] [--max-new 160]
       [--sets edit,random] [--no-peer] [--batch 16]
"""
from __future__ import annotations

import argparse
import http.client
import json
import random
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
    s = Serve(Path(a.kiln), Path(a.model), ["--cores", a.cores, "--speculate", str(k)], log)
    try:
        kiln_stream(s.url, prompts[0], 8)  # warm-up
        return [kiln_stream(s.url, p, a.max_new, sampled) for p in prompts]
    finally:
        s.stop()


def run_peer(a, k: int, prompts: list[str],
             sampled: bool) -> list[tuple[list[int], list[float]]]:
    from llama_cpp import Llama
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding
    threads = len(a.cores.replace("-", ",").split(",")) if "-" not in a.cores else \
        int(a.cores.split("-")[1]) - int(a.cores.split("-")[0]) + 1
    draft = LlamaPromptLookupDecoding(max_ngram_size=3, num_pred_tokens=k) if k else None
    llm = Llama(a.model, n_ctx=2048, n_threads=threads, n_threads_batch=threads, verbose=False,
                draft_model=draft)
    eos = llm.token_eos()
    out = []
    for p in prompts:
        tokens = llm.tokenize(p.encode(), add_bos=False, special=True)
        ids, times = [], []
        llm.reset()
        sampling = dict(top_k=0, top_p=1.0, min_p=0.0, temp=1.0) if sampled else \
            dict(top_k=1, temp=0.0)
        llm.set_seed(29)
        for tok in llm.generate(tokens, reset=True, **sampling):
            ids.append(tok)
            times.append(time.perf_counter())
            if tok == eos or len(ids) >= a.max_new:
                break
        out.append((ids, times))
    return out


def batch_throughput(a, k: int) -> float:
    log = Path(tempfile.gettempdir()) / f"kiln-speculative-batch-{k}.log"
    s = Serve(Path(a.kiln), Path(a.model), ["--cores", a.cores, "--speculate", str(k)], log)
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kiln", default=str(REPO / "build" / "kiln"))
    p.add_argument("--model", default=None)
    p.add_argument("--cores", default="0")
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--max-new", type=int, default=160)
    p.add_argument("--sets", default="edit,random,random-sampled")
    p.add_argument("--no-peer", action="store_true")
    p.add_argument("--batch", type=int, default=0)
    a = p.parse_args()
    if a.model is None:
        from tracing_overhead import default_model
        a.model = default_model()
    sets = {"edit": edit_prompts(), "random": random_prompts(),
            "random-sampled": random_prompts()}
    print(f"| set (prompts) | Kiln | Kiln --speculate {a.k} | speed-up | llama.cpp "
          f"| llama.cpp prompt lookup {a.k} | speed-up | Kiln tokens identical |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in a.sets.split(","):
        prompts, sampled = sets[name], name.endswith("sampled")
        base, spec = run_kiln(a, 0, prompts, sampled), run_kiln(a, a.k, prompts, sampled)
        same = sum(x[0] == y[0] for x, y in zip(base, spec))
        kb, ks = decode_rate(base), decode_rate(spec)
        row = f"| {name} ({len(prompts)}) | {kb:.1f} | {ks:.1f} | {ks / kb:.2f}x |"
        if a.no_peer:
            row += " – | – | – |"
        else:
            pb = decode_rate(run_peer(a, 0, prompts, sampled))
            ps = decode_rate(run_peer(a, a.k, prompts, sampled))
            row += f" {pb:.1f} | {ps:.1f} | {ps / pb:.2f}x |"
        print(row + f" {same}/{len(prompts)} |", flush=True)
    if a.batch:
        off, on = batch_throughput(a, 0), batch_throughput(a, a.k)
        print(f"\n{a.batch} concurrent streams (kiln bench, 64+64 tokens): {off:.1f} tok/s "
              f"without, {on:.1f} with --speculate {a.k} ({on / off:.3f}x)")


if __name__ == "__main__":
    main()
