#!/usr/bin/env python3
"""Two models in one `kiln serve`, one core each, against one model on both cores (issue #26):
aggregate generated tokens/s under load. Layout A: `--model a=M:cores=0 --model b=M:cores=1`
with two `kiln bench` runs at once (C streams each, one per model). Layout B: `--model-id M
--cores 0,1` with one `kiln bench` of 2C streams. Same model file, same requests. Prints a
Markdown table.

usage: bench/multi_model_bench.py [--model FILE.gguf] [--concurrency 8] [--requests 64]
       [--data prompt_tokens=64,output_tokens=64]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from server_overhead import Serve  # noqa: E402
from tracing_overhead import default_model  # noqa: E402


def bench(kiln: Path, url: str, model: str, streams: int, requests: int, data: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        subprocess.run([str(kiln), "bench", "--target", url, "--model", model, "--profile",
                        "concurrent", "--rate", str(streams), "--max-requests", str(requests),
                        "--data", data, "--no-progress", "--output", str(out)],
                       check=True, stdout=subprocess.DEVNULL)
        m = json.loads(out.read_text())["benchmarks"][0]["metrics"]
    return m


def p50(m: dict) -> float:
    return m["request_latency"]["successful"]["median"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--kiln", type=Path, default=REPO / "build" / "kiln")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--data", default="prompt_tokens=64,output_tokens=64")
    a = ap.parse_args()
    model = a.model or default_model()
    log = Path(tempfile.mkdtemp())
    rows = []

    two = Serve(a.kiln, Path(model), ["--model", f"a={model}:cores=0", "--model",
                                      f"b={model}:cores=1", "--kv-cache-memory", "0.5"],
                log / "two.log")
    try:
        # The two runs overlap from start to end (same requests each): their rates add up.
        with ThreadPoolExecutor(2) as pool:
            runs = list(pool.map(lambda m: bench(a.kiln, two.url, m, a.concurrency, a.requests,
                                                 a.data), ["a", "b"]))
        rows.append(("two models, one core each", 2 * a.concurrency,
                     sum(r["output_tokens_per_second"] for r in runs),
                     max(p50(r) for r in runs)))
    finally:
        two.stop()

    one = Serve(a.kiln, Path(model), ["--cores", "0,1", "--kv-cache-memory", "1"],
                log / "one.log")
    try:
        r = bench(a.kiln, one.url, Path(model).stem, 2 * a.concurrency, 2 * a.requests, a.data)
        rows.append(("one model on both cores", 2 * a.concurrency, r["output_tokens_per_second"],
                     p50(r)))
    finally:
        one.stop()

    print(f"model {Path(model).name}, data {a.data}\n")
    print("| layout | streams | aggregate output tok/s | request latency p50 s |")
    print("|---|---:|---:|---:|")
    for name, streams, tps, latency in rows:
        print(f"| {name} | {streams} | {tps:.1f} | {latency:.2f} |")


if __name__ == "__main__":
    main()
