#!/usr/bin/env python3
"""Single-stream prefill and decode speed: Kiln vs llama.cpp (llama-cpp-python) on the same
GGUF files and thread count, in one run. Prints a Markdown table (paste into docs/benchmarks.md).

Both sides do the same work: one forward over a P-token prompt (prefill), then N single-token
forwards (decode), greedy, median over R repetitions after one warm-up.

usage: compare_llamacpp.py MODEL.gguf [MODEL.gguf ...] [--threads 2] [--prompt 512]
       [--decode 128] [--reps 3] [--kiln-bench build/bench/model_bench]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import time

import numpy as np


def kiln_run(bench, model, args):
    cores = f"0-{args.threads - 1}"
    out = subprocess.run(
        [bench, model, "--prompt", str(args.prompt), "--decode", str(args.decode),
         "--reps", str(args.reps), "--cores", cores],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def llamacpp_run(model, args):
    import llama_cpp
    llm = llama_cpp.Llama(model_path=model, n_ctx=args.prompt + args.decode + 8,
                          n_batch=args.prompt, n_ubatch=args.prompt, n_threads=args.threads,
                          n_threads_batch=args.threads, verbose=False)
    n_vocab = llm.n_vocab()
    rng = random.Random(0)
    prompt = [rng.randrange(llm.n_vocab()) for _ in range(args.prompt)]
    prefill, decode = [], []
    for rep in range(args.reps + 1):
        llm.reset()
        llm._ctx.kv_cache_clear() if hasattr(llm._ctx, "kv_cache_clear") else None
        t0 = time.perf_counter()
        llm.eval(prompt)
        t1 = time.perf_counter()
        tok = prompt[-1]
        for _ in range(args.decode):
            llm.eval([tok])
            logits = llama_cpp.llama_get_logits_ith(llm.ctx, -1)  # last row, [n_vocab]
            tok = int(np.ctypeslib.as_array(logits, shape=(n_vocab,)).argmax())
        t2 = time.perf_counter()
        if rep:
            prefill.append(args.prompt / (t1 - t0))
            decode.append(args.decode / (t2 - t1))
    return {"prefill_tok_s": statistics.median(prefill),
            "decode_tok_s": statistics.median(decode),
            "version": llama_cpp.__version__}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="+")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--prompt", type=int, default=512)
    p.add_argument("--decode", type=int, default=128)
    p.add_argument("--reps", type=int, default=3)
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--kiln-bench", default=os.path.join(here, "..", "build", "bench",
                                                        "model_bench"))
    args = p.parse_args()
    rows = []
    for model in args.models:
        k = kiln_run(args.kiln_bench, model, args)
        l = llamacpp_run(model, args)
        rows.append((os.path.basename(model), k, l))
    print(f"threads={args.threads} prompt={args.prompt} decode={args.decode} reps={args.reps} "
          f"llama-cpp-python {rows[0][2]['version']} kiln target {rows[0][1]['target']}\n")
    print("| model | prefill tok/s kiln | llama.cpp | ratio | decode tok/s kiln | llama.cpp | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, k, l in rows:
        print(f"| {name} | {k['prefill_tok_s']:.1f} | {l['prefill_tok_s']:.1f} | "
              f"{k['prefill_tok_s'] / l['prefill_tok_s']:.2f} | {k['decode_tok_s']:.1f} | "
              f"{l['decode_tok_s']:.1f} | {k['decode_tok_s'] / l['decode_tok_s']:.2f} |")


if __name__ == "__main__":
    main()
