#!/usr/bin/env python3
"""Server overhead per streamed token of `kiln serve` (issue #5), on a tiny model so that the
HTTP path is not hidden behind the model's compute.

The same work is measured three ways (P-token prompt, N generated tokens, greedy, ignore_eos;
K requests one after another, or K*C requests as C streams at once), all on the same --cores:

  engine   `kiln generate --batch FILE --max-batch-size C`: the same Engine (scheduler, forward,
           sampling, detokenizer, engine thread, sinks) without any HTTP. Time per decode step
           = (T(N tokens) - T(1 token)) / (K * (N-1)) from the wall time of two processes,
           so that loading and prefill cancel; CPU per token the same way (getrusage of
           children). `build/bench/model_bench` (forward only, no engine) is the floor.
  server   `kiln serve` on a loopback port driven by `kiln bench` (C++ client, /v1/completions,
           stream=true): client-observed inter-token latency = sum(last token - first token) /
           sum(tokens - 1) over all requests; server-side ITL (engine event to event, from
           /metrics kiln_inter_token_latency_seconds); TTFT seen by the client minus TTFT the
           server records (request parse + delivery of one event); CPU of the server process
           from /proc/PID/task/*/schedstat (ns), split into engine threads and HTTP I/O
           threads: per streamed token as (run of N-token requests - run of 1-token requests)
           / (K*C*(N-1)), like the engine baseline, and per request from the 1-token run.

Overhead per streamed token, wall clock = client ITL - engine step; CPU = server CPU per token -
`kiln generate` CPU per token. Runs are interleaved; wall figures are given as best of the runs
(the machine may be shared) with the median, CPU figures as the median. Prints Markdown tables;
--json FILE keeps every raw figure.

usage: bench/server_overhead.py [--model stories260K.gguf] [--cores 0] [--requests 24]
       [--tokens 120] [--prompt 5] [--concurrency 1,8] [--reps 5] [--json out.json]
       (docs/benchmarks.md used --reps 7)
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TINY = Path("/work/shared/models/stories260K.gguf")
# "<s> Once upon a time" in stories260K's tok512 vocabulary; any ids do for timing.
PROMPT_IDS = [1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426]


# ---- process helpers (shared with bench/idle_connections.py) ----

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str, timeout: float = 10.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def http_post(url: str, payload: dict, timeout: float = 60.0) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=json.dumps(payload).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class Serve:
    """A `kiln serve` child on a free loopback port."""

    def __init__(self, kiln: Path, model: Path, args: list[str], log: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        cmd = [str(kiln), "serve", "--model-id", str(model), "--hostname", "127.0.0.1",
               "--port", str(self.port), *args]
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(log, "w"))
        self.pid = self.proc.pid
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"kiln serve exited with {self.proc.returncode}: "
                                 f"{log.read_text()[-2000:]}")
            try:
                if http_get(self.url + "/health", 1)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise SystemExit("kiln serve not ready after 120 s")

    def metrics(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for line in http_get(self.url + "/metrics")[1].decode().splitlines():
            if line and not line.startswith("#") and "{" not in line:
                name, value = line.split()[:2]
                out[name] = float(value)
        return out

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM (kB), Threads and open fds of a process."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "Threads"):
            out[key] = int(value.split()[0])
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return out


def thread_wait_ns(pid: int) -> dict[int, int]:
    """Time each thread spent runnable but waiting for a CPU, in ns (schedstat), or {}."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out[int(tid)] = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return out


def thread_cpu_ns(pid: int) -> dict[int, int]:
    """CPU time of each thread in ns (schedstat; /proc/PID/task/TID/stat ticks as fallback)."""
    out = {}
    tick = 1e9 / os.sysconf("SC_CLK_TCK")
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            ns = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
            if ns == 0:
                fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
                ns = int((int(fields[11]) + int(fields[12])) * tick)
        except (OSError, IndexError, ValueError):
            continue
        out[int(tid)] = ns
    return out


def load_average() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


# ---- engine baseline: kiln generate --batch ----

def run_generate(kiln: Path, model: Path, cores: str, requests: int, prompt_ids: list[int],
                 new_tokens: int, batch: int) -> tuple[float, float, int]:
    """(wall s, CPU s, engine steps) of one `kiln generate --batch` process."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for _ in range(requests):
            f.write(json.dumps({"prompt_ids": prompt_ids, "max_new_tokens": new_tokens,
                                "ignore_eos": True}) + "\n")
        path = f.name
    try:
        cmd = [str(kiln), "generate", "--model-id", str(model), "--batch", path,
               "--max-batch-size", str(batch), "--cores", cores]
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = p.communicate()
        wall = time.perf_counter() - t0
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = ru.ru_utime + ru.ru_stime - ru0.ru_utime - ru0.ru_stime
        if p.returncode != 0:
            raise SystemExit(f"kiln generate failed ({p.returncode}): {' '.join(cmd)}")
        lines = [json.loads(x) for x in out.decode().splitlines() if x.strip()]
        got = sum(len(x["token_ids"]) for x in lines)
        if got != requests * new_tokens:
            raise SystemExit(f"kiln generate made {got} tokens, expected {requests * new_tokens}")
        steps = re.search(rb"(\d+) steps", err)
        return wall, cpu, int(steps.group(1)) if steps else 0
    finally:
        os.unlink(path)


def engine_baseline(a, concurrency: int, requests: int) -> dict:
    long_ = run_generate(a.kiln, a.model, a.cores, requests, a.prompt_ids, a.tokens, concurrency)
    short = run_generate(a.kiln, a.model, a.cores, requests, a.prompt_ids, 1, concurrency)
    steps = requests / concurrency * (a.tokens - 1)
    tokens = requests * (a.tokens - 1)
    return {"step_us": (long_[0] - short[0]) / steps * 1e6,
            "cpu_us_per_token": (long_[1] - short[1]) / tokens * 1e6,
            "tokens_per_step": requests * a.tokens / long_[2] if long_[2] else float("nan")}


def model_bench(a, batch: int) -> float | None:
    exe = a.kiln.parent / "bench" / "model_bench"
    if not exe.exists():
        return None
    out = subprocess.run([str(exe), str(a.model), "--prompt", str(len(a.prompt_ids)),
                          "--decode", str(a.tokens - 1), "--reps", "5", "--cores", a.cores,
                          "--batch", str(batch)], check=True, capture_output=True, text=True)
    tok_s = json.loads(out.stdout.strip().splitlines()[-1])["decode_tok_s"]
    return batch / tok_s * 1e6  # us per (batched) step


# ---- server: kiln bench and a Python SSE client ----

def bench_run(a, server: Serve, concurrency: int, requests: int, tokens: int) -> dict:
    """One `kiln bench` run: its requests, and what the server spent meanwhile."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        profile = (["--profile", "synchronous"] if concurrency == 1 else
                   ["--profile", "concurrent", "--rate", str(concurrency)])
        cmd = [str(a.kiln), "bench", "--target", server.url, *profile,
               "--max-requests", str(requests),
               "--data", f"prompt_tokens={len(a.prompt_ids)},output_tokens={tokens}",
               "--tokenizer", str(a.model), "--output", str(report), "--no-progress"]
        cpu0, wait0, m0 = thread_cpu_ns(server.pid), thread_wait_ns(server.pid), server.metrics()
        subprocess.run(cmd, check=True, capture_output=True)
        cpu1, wait1, m1 = thread_cpu_ns(server.pid), thread_wait_ns(server.pid), server.metrics()
        reqs = json.loads(report.read_text())["benchmarks"][0]["requests"]
    ok = [r for r in reqs if r["status"] == "successful"]
    if len(ok) != requests or any(r["output_tokens"] != tokens for r in ok):
        raise SystemExit(f"kiln bench: {len(ok)}/{requests} successful requests of "
                         f"{tokens} tokens")
    # Threads in creation order: main, [compute pool], engine, then the --io-threads last.
    tids = sorted(cpu1)
    io = set(tids[-a.io_threads:])
    delta = {t: cpu1[t] - cpu0.get(t, 0) for t in tids}
    engine_tids = [t for t in tids if t not in io and t != server.pid]
    return {
        "requests": ok,
        "m": {k: m1[k] - m0.get(k, 0) for k in m1},
        "cpu_ns": sum(delta.values()),
        "cpu_io_ns": sum(delta[t] for t in io),
        "cpu_engine_ns": sum(delta[t] for t in engine_tids),
        "wait_engine_ns": sum(wait1.get(t, 0) - wait0.get(t, 0) for t in engine_tids),
    }


def kiln_bench(a, server: Serve, concurrency: int, requests: int) -> dict:
    """Server figures from a run of N-token requests and one of 1-token requests: per streamed
    token as the difference (so that per-request work cancels, as for the engine baseline),
    per request from the 1-token run."""
    long_ = bench_run(a, server, concurrency, requests, a.tokens)
    short = bench_run(a, server, concurrency, requests, 1)
    ok, m = long_["requests"], long_["m"]
    gaps = sum(r["output_tokens"] - 1 for r in ok)
    span = sum(r["last_token_time"] - r["first_token_time"] for r in ok)
    tokens = m["kiln_generated_tokens_total"] - short["m"]["kiln_generated_tokens_total"]
    steps = m["kiln_engine_steps_total"]

    def per_token(key):
        return (long_[key] - short[key]) / tokens / 1e3

    def ratio(name):
        n = m[name + "_count"]
        return m[name + "_sum"] / n * 1e6 if n else float("nan")

    return {
        "client_itl_us": span / gaps * 1e6,
        "client_itl_median_request_us": statistics.median(r["itl_ms"] for r in ok) * 1e3,
        "server_itl_us": ratio("kiln_inter_token_latency_seconds"),
        "client_ttft_us": statistics.fmean(r["ttft_ms"] for r in ok) * 1e3,
        "server_ttft_us": ratio("kiln_time_to_first_token_seconds"),
        "cpu_us_per_token": per_token("cpu_ns"),
        "cpu_engine_us_per_token": per_token("cpu_engine_ns"),
        "cpu_io_us_per_token": per_token("cpu_io_ns"),
        "cpu_other_us_per_token": per_token("cpu_ns") - per_token("cpu_engine_ns")
        - per_token("cpu_io_ns"),
        "request_cpu_us": short["cpu_ns"] / requests / 1e3,
        "request_cpu_io_us": short["cpu_io_ns"] / requests / 1e3,
        "tokens_per_step": m["kiln_generated_tokens_total"] / steps if steps else float("nan"),
        # Engine threads of the N-token run: CPU and runqueue wait per engine step.
        "engine_run_us_per_step": long_["cpu_engine_ns"] / steps / 1e3,
        "engine_wait_us_per_step": long_["wait_engine_ns"] / steps / 1e3,
    }


# ---- report ----

def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kiln", type=Path, default=REPO / "build" / "kiln")
    ap.add_argument("--model", type=Path, default=DEFAULT_TINY)
    ap.add_argument("--cores", default="0", help="--cores of kiln serve / generate / model_bench")
    ap.add_argument("--io-threads", type=int, default=2)
    ap.add_argument("--requests", type=int, default=24, help="requests per stream and run")
    ap.add_argument("--tokens", type=int, default=120, help="generated tokens per request")
    ap.add_argument("--prompt", type=int, default=5, help="prompt tokens (with BOS)")
    ap.add_argument("--concurrency", default="1,8")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    a.prompt_ids = PROMPT_IDS[:a.prompt]
    conc = [int(c) for c in a.concurrency.split(",")]
    load_start = load_average()
    print(f"load average at start: {load_start}", file=sys.stderr)

    log = REPO / "build-integration-logs"
    log.mkdir(exist_ok=True)
    server = Serve(a.kiln, a.model, ["--cores", a.cores, "--io-threads", str(a.io_threads),
                                     "--max-batch-total-tokens", "16384"],
                   log / "server_overhead.log")
    raw: dict = {"load_start": load_start, "server_cmd": server.cmd, "runs": {}}
    try:
        # Warm-up: page in the model, touch the KV blocks and the kiln bench path.
        kiln_bench(a, server, max(conc), max(conc) * 2)
        for c in conc:
            requests = a.requests * c
            runs = []
            for rep in range(a.reps):
                r = {"engine": engine_baseline(a, c, requests),
                     "server": kiln_bench(a, server, c, requests)}
                r["model_bench_step_us"] = model_bench(a, c)
                print(f"c={c} rep {rep}: {json.dumps(r)}", file=sys.stderr)
                runs.append(r)
            raw["runs"][c] = runs
        raw["server_status_after"] = proc_status(server.pid)
    finally:
        code = server.stop()
    raw["load_end"] = load_average()
    print(f"load average at end: {raw['load_end']}; kiln serve exit {code}", file=sys.stderr)
    if a.json:
        a.json.write_text(json.dumps(raw, indent=1))

    print(f"\nModel {a.model.name}, prompt {a.prompt} tokens, {a.tokens} generated tokens per "
          f"request, {a.requests} requests per stream, --cores {a.cores}, {a.io_threads} I/O "
          f"threads, {a.reps} interleaved runs; load average {load_start} at start, "
          f"{raw['load_end']} at end.\n")
    print("Wall clock per token (best of the runs; median in brackets):\n")
    print("| streams | forward only (model_bench) µs | engine step (kiln generate) µs "
          "| server-side ITL (/metrics) µs | client ITL (kiln bench) µs "
          "| **client ITL − engine step** µs | tokens per step generate / serve "
          "| TTFT client − server (/metrics) µs | serve engine step: CPU + runqueue wait µs |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

    def both(values):
        values = list(values)
        return min(values), med(values)

    for c, runs in raw["runs"].items():
        mb = both(r["model_bench_step_us"] for r in runs if r["model_bench_step_us"])
        eng = both(r["engine"]["step_us"] for r in runs)
        srv = both(r["server"]["server_itl_us"] for r in runs)
        cli = both(r["server"]["client_itl_us"] for r in runs)
        tps = (med(r["engine"]["tokens_per_step"] for r in runs),
               med(r["server"]["tokens_per_step"] for r in runs))
        ttft = med(r["server"]["client_ttft_us"] - r["server"]["server_ttft_us"] for r in runs)
        run_us = med(r["server"]["engine_run_us_per_step"] for r in runs)
        wait_us = med(r["server"]["engine_wait_us_per_step"] for r in runs)
        cell = lambda v: f"{v[0]:.0f} ({v[1]:.0f})"
        print(f"| {c} | {cell(mb)} | {cell(eng)} | {cell(srv)} | {cell(cli)} "
              f"| **{cli[0] - eng[0]:.0f}** ({cli[1] - eng[1]:.0f}) "
              f"| {tps[0]:.2f} / {tps[1]:.2f} | {ttft:.0f} | {run_us:.0f} + {wait_us:.0f} |")
    print("\nCPU time per streamed token, marginal: (N-token run - 1-token run) / (N-1) tokens "
          "per request (median of the runs):\n")
    print("| streams | kiln generate µs | kiln serve µs | of which engine threads "
          "| HTTP I/O threads | **serve − generate** µs | serve CPU per 1-token request µs "
          "(of which I/O threads) |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for c, runs in raw["runs"].items():
        g = med(r["engine"]["cpu_us_per_token"] for r in runs)
        s = {k: med(r["server"][k] for r in runs)
             for k in ("cpu_us_per_token", "cpu_engine_us_per_token", "cpu_io_us_per_token",
                       "request_cpu_us", "request_cpu_io_us")}
        print(f"| {c} | {g:.1f} | {s['cpu_us_per_token']:.1f} | "
              f"{s['cpu_engine_us_per_token']:.1f} | {s['cpu_io_us_per_token']:.1f} | "
              f"**{s['cpu_us_per_token'] - g:.1f}** | {s['request_cpu_us']:.0f} "
              f"({s['request_cpu_io_us']:.0f}) |")


if __name__ == "__main__":
    main()
