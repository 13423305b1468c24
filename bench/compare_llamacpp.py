#!/usr/bin/env python3
"""Single-stream prefill and decode speed: Kiln vs llama.cpp (llama-cpp-python) on the same
GGUF files and thread count, in one run. Prints a Markdown table (paste into docs/benchmarks.md).

Both sides do the same work: one forward over a P-token prompt (prefill), then N single-token
forwards (decode), greedy, median over R repetitions after one warm-up.

Batched decode (--batch 4,16): B sequences are each prefilled with the same prompt, then every
step decodes one token of all B in one forward (llama.cpp: one llama_batch with B sequence ids,
n_seq_max = B); the figure is B * N / time. Use a short prompt there (--batch-prompt).

On a host whose memory bandwidth moves (a shared VM: the probe reads 33 GB/s one minute and
55 the next), --rounds R alternates the two engines R times per file and reports medians, and
--roofline runs the bandwidth probe (bench/bandwidth_bench) right before and right after each
Kiln run: "of roofline" = file bytes x decode tok/s / the better of the two probes (median over
the rounds), i.e. the decode's share of what the memory delivered in those minutes. With
rounds, each ratio is the median of the rounds' own ratios (each round's Kiln and llama.cpp
runs are adjacent in time, their order alternating), and the decode ratio of every round is
printed too: the spread is the noise.

usage: compare_llamacpp.py MODEL.gguf [MODEL.gguf ...] [--threads 2] [--prompt 512]
       [--decode 128] [--reps 3] [--rounds 1] [--roofline] [--batch 4,16] [--batch-prompt 64]
       [--batch-decode 32] [--kv-cache-dtype auto|f32|f16|bf16]
       [--kiln-bench build/bench/model_bench]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import time

import numpy as np


def kiln_run(bench, model, args, batch=1, prompt=None, decode=None):
    cores = f"0-{args.threads - 1}"
    out = subprocess.run(
        [bench, model, "--prompt", str(prompt or args.prompt),
         "--decode", str(decode or args.decode), "--reps", str(args.reps), "--cores", cores,
         "--batch", str(batch), "--kv-cache-dtype", args.kv_cache_dtype],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def probe_gb_s(args):
    """Best read bandwidth of args.threads threads over 1 GiB (bench/bandwidth_bench), GB/s."""
    out = subprocess.run(
        [args.probe, "--mib", "1024", "--reps", "3", "--threads", str(args.threads),
         "--streams", "1"], check=True, capture_output=True, text=True).stdout
    return max(json.loads(line)["read_gb_s"] for line in out.splitlines() if line.strip())


def medians(runs):
    """The first run's fields, with prefill and decode tok/s the medians over all runs."""
    return dict(runs[0], **{key: statistics.median(r[key] for r in runs)
                            for key in ("prefill_tok_s", "decode_tok_s")})


def single_stream_rounds(model, args):
    """Kiln and llama.cpp alternated args.rounds times (Kiln first in even rounds, llama.cpp
    first in odd ones, so a steady drift of the host favours neither): medians of each figure,
    the ratios of each round's adjacent pair (prefill_ratios, decode_ratios; their medians are
    the table's ratios), and the decode's share of the better of the bandwidth probes taken
    just before and after each Kiln run."""
    kilns, llamas, shares = [], [], []
    size = os.path.getsize(model)

    def kiln_with_probes():
        before = probe_gb_s(args) if args.roofline else None
        k = kiln_run(args.kiln_bench, model, args)
        if before:
            # The memory delivered at least the better of the two probes in this window.
            gb_s = max(before, probe_gb_s(args))
            shares.append(size * k["decode_tok_s"] / 1e9 / gb_s)
        return k

    for i in range(args.rounds):
        if i % 2 == 0:
            kilns.append(kiln_with_probes())
            llamas.append(llamacpp_run(model, args))
        else:
            llamas.append(llamacpp_run(model, args))
            kilns.append(kiln_with_probes())
    k, l = medians(kilns), medians(llamas)
    k["of_roofline"] = statistics.median(shares) if shares else None
    for key in ("prefill", "decode"):
        k[f"{key}_ratios"] = [a[f"{key}_tok_s"] / b[f"{key}_tok_s"] for a, b in zip(kilns, llamas)]
    return k, l


def llamacpp_batched(model, args, n_seq):
    """Aggregate decode tok/s of n_seq sequences decoded together (llama.cpp low-level API)."""
    import llama_cpp
    prompt_len, n_decode = args.batch_prompt, args.batch_decode
    llm = llama_cpp.Llama(model_path=model, n_ctx=64, n_threads=args.threads, verbose=False)
    n_vocab = llm.n_vocab()
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx = n_seq * (prompt_len + n_decode + 8)
    cp.n_batch = cp.n_ubatch = max(prompt_len, n_seq)
    cp.n_seq_max = n_seq
    cp.n_threads = cp.n_threads_batch = args.threads
    ctx = llama_cpp.llama_init_from_model(llm.model, cp)
    batch = llama_cpp.llama_batch_init(max(prompt_len, n_seq), 0, 1)

    def decode(items):  # items: (token, pos, seq, want_logits)
        batch.n_tokens = len(items)
        for i, (tok, pos, seq, want) in enumerate(items):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = tok, pos, 1
            batch.seq_id[i][0], batch.logits[i] = seq, int(want)
        if llama_cpp.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")

    def argmax(i):
        logits = llama_cpp.llama_get_logits_ith(ctx, i)
        return int(np.ctypeslib.as_array(logits, shape=(n_vocab,)).argmax())

    rng = random.Random(0)
    prompt = [rng.randrange(n_vocab) for _ in range(prompt_len)]
    rates = []
    try:
        for rep in range(args.reps + 1):
            llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
            nxt = []
            for s in range(n_seq):
                decode([(t, p, s, p == prompt_len - 1) for p, t in enumerate(prompt)])
                nxt.append(argmax(-1))
            t0 = time.perf_counter()
            for i in range(n_decode):
                decode([(nxt[s], prompt_len + i, s, True) for s in range(n_seq)])
                nxt = [argmax(s) for s in range(n_seq)]
            if rep:
                rates.append(n_seq * n_decode / (time.perf_counter() - t0))
    finally:
        llama_cpp.llama_batch_free(batch)
        llama_cpp.llama_free(ctx)
    return statistics.median(rates)


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
    p.add_argument("--rounds", type=int, default=1,
                   help="alternate the engines this many times per file, report medians "
                        "(ratios: median of each round's paired ratio)")
    p.add_argument("--roofline", action="store_true",
                   help="run the bandwidth probe around each Kiln run, print of roofline")
    p.add_argument("--batch", default="", help="comma-separated sequence counts, e.g. 4,16")
    p.add_argument("--batch-prompt", type=int, default=64)
    p.add_argument("--batch-decode", type=int, default=32)
    p.add_argument("--no-single", action="store_true", help="only the batched table")
    p.add_argument("--kv-cache-dtype", default="auto", choices=["auto", "f32", "f16", "bf16"],
                   help="Kiln's KV cache (default: Kiln's default, f16 for quantized files; "
                        "llama.cpp keeps its default, f16)")
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--kiln-bench", default=os.path.join(here, "..", "build", "bench",
                                                        "model_bench"))
    p.add_argument("--probe", default=os.path.join(here, "..", "build", "bench",
                                                   "bandwidth_bench"))
    args = p.parse_args()
    import llama_cpp
    print(f"threads={args.threads} prompt={args.prompt} decode={args.decode} reps={args.reps} "
          f"kiln kv cache {args.kv_cache_dtype} llama-cpp-python {llama_cpp.__version__} load average {os.getloadavg()[0]:.2f}\n")
    if not args.no_single:
        rows = []
        for model in args.models:
            k, l = single_stream_rounds(model, args)
            rows.append((os.path.basename(model), k, l))
        print(f"kiln target {rows[0][1]['target']}, rounds {args.rounds}\n")
        if args.rounds > 1:
            print("ratio: median of the rounds' paired ratios; per round: decode ratios in "
                  "round order\n")
        roof = " of roofline |" if args.roofline else ""
        per_round = " decode ratio per round |" if args.rounds > 1 else ""
        print("| model | prefill tok/s kiln | llama.cpp | ratio "
              f"| decode tok/s kiln | llama.cpp | ratio |{roof}{per_round}")
        print("|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if args.roofline else "") +
              ("---|" if args.rounds > 1 else ""))
        for name, k, l in rows:
            share = f" {100 * k['of_roofline']:.0f}% |" if args.roofline else ""
            rounds = (" " + " / ".join(f"{r:.2f}" for r in k["decode_ratios"]) + " |"
                      if args.rounds > 1 else "")
            print(f"| {name} | {k['prefill_tok_s']:.1f} | {l['prefill_tok_s']:.1f} | "
                  f"{statistics.median(k['prefill_ratios']):.2f} | {k['decode_tok_s']:.1f} | "
                  f"{l['decode_tok_s']:.1f} | {statistics.median(k['decode_ratios']):.2f} |"
                  f"{share}{rounds}")
    sizes = [int(b) for b in args.batch.split(",") if b]
    if sizes:
        print(f"\nbatched decode: prompt {args.batch_prompt} per sequence, "
              f"{args.batch_decode} steps\n")
        print("| model | sequences | decode tok/s kiln | llama.cpp | ratio |")
        print("|---|---:|---:|---:|---:|")
        for model in args.models:
            for n_seq in sizes:
                k = kiln_run(args.kiln_bench, model, args, batch=n_seq,
                             prompt=args.batch_prompt, decode=args.batch_decode)
                l = llamacpp_batched(model, args, n_seq)
                print(f"| {os.path.basename(model)} | {n_seq} | {k['decode_tok_s']:.1f} | "
                      f"{l:.1f} | {k['decode_tok_s'] / l:.2f} |", flush=True)


if __name__ == "__main__":
    main()
