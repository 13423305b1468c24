#!/usr/bin/env python3
"""Embedding throughput and latency (issue #26): all-MiniLM-L6-v2 served by `kiln serve`
(/embed over HTTP, one request of B inputs at a time) against sentence-transformers'
`SentenceTransformer.encode` on torch CPU in this process (when sentence-transformers is
installed; else transformers' BertModel with the same recipe: mean pooling + L2 norm), same
threads, same sentences, batch sizes 1, 8 and 32. Kiln's figures include HTTP and JSON; the
peer's do not. Prints a Markdown table: sentences/s and p50 latency per batch.

usage: bench/embedding_bench.py [--model DIR] [--cores 0] [--threads 1] [--seconds 10]
       [--batches 1,8,32] [--dtype source|q8_0|...]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from server_overhead import Serve  # noqa: E402

# Sentences of mixed length (8 to ~60 tokens), as a retrieval corpus has them.
WORDS = ("the of a model server embeds every sentence into a vector so that similar texts land "
         "close together and a search can find them quickly across many documents written by "
         "people in different places about weather markets music sport science history").split()


def sentences(n: int) -> list[str]:
    import random
    rng = random.Random(7)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 48))).capitalize() + "."
            for _ in range(n)]


def default_model() -> Path:
    import all_minilm_l6_v2
    out = Path(tempfile.mkdtemp(prefix="minilm-"))
    all_minilm_l6_v2.extract_model(str(out))
    return out / "all-MiniLM-L6-v2"


def timed(fn, batches: list[list[str]], seconds: float) -> tuple[float, float]:
    """(sentences per second, p50 seconds per call) over calls of fn until `seconds` pass."""
    fn(batches[0])  # warm-up
    lat, done, start, i = [], 0, time.perf_counter(), 0
    while time.perf_counter() - start < seconds or len(lat) < 5:
        b = batches[i % len(batches)]
        t = time.perf_counter()
        fn(b)
        lat.append(time.perf_counter() - t)
        done += len(b)
        i += 1
    return done / (time.perf_counter() - start), statistics.median(lat)


def kiln_embed(url: str):
    def call(batch: list[str]):
        req = urllib.request.Request(url + "/embed", data=json.dumps({"inputs": batch}).encode(),
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            out = json.loads(r.read())
        assert len(out) == len(batch)
    return call


def peer_embed(model: Path, threads: int):
    import torch
    torch.set_num_threads(threads)
    try:
        from sentence_transformers import SentenceTransformer
        st = SentenceTransformer(str(model), device="cpu")
        return "sentence-transformers", lambda b: st.encode(b, batch_size=len(b))
    except ImportError:
        import transformers
        tok = transformers.AutoTokenizer.from_pretrained(model)
        bert = transformers.AutoModel.from_pretrained(model).eval()

        def call(b):
            enc = tok(b, padding=True, truncation=True, max_length=256, return_tensors="pt")
            with torch.no_grad():
                h = bert(**enc).last_hidden_state
            m = enc["attention_mask"].unsqueeze(-1).float()
            return torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1)
        return "transformers BertModel (mean + norm)", call


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path)
    ap.add_argument("--kiln", type=Path, default=REPO / "build" / "kiln")
    ap.add_argument("--cores", default="0")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--dtype", default="source",
                    help="kiln serve --dtype: the encoder's layers converted at load (q8_0, ...)")
    a = ap.parse_args()
    model = a.model or default_model()
    corpus = sentences(512)
    sizes = [int(x) for x in a.batches.split(",")]
    os.sched_setaffinity(0, {int(c) for c in a.cores.replace("-", ",").split(",")})
    peer_name, peer = peer_embed(model, a.threads)
    log = Path(tempfile.mkdtemp()) / "serve.log"
    server = Serve(a.kiln, model, ["--cores", a.cores, "--dtype", a.dtype], log)
    rows = []
    try:
        for b in sizes:
            batches = [corpus[i:i + b] for i in range(0, len(corpus) - b + 1, b)]
            k = timed(kiln_embed(server.url), batches, a.seconds)
            p = timed(peer, batches, a.seconds)
            rows.append((b, k, p))
    finally:
        server.stop()
    print(f"cores {a.cores}, threads {a.threads}, Kiln --dtype {a.dtype}; peer: {peer_name}\n")
    print("| batch | Kiln sentences/s | peer sentences/s | Kiln / peer | Kiln p50 ms | peer p50 ms |")
    print("|---:|---:|---:|---:|---:|---:|")
    for b, (ks, kl), (ps, pl) in rows:
        print(f"| {b} | {ks:.1f} | {ps:.1f} | {ks / ps:.2f}x | {kl * 1e3:.2f} | {pl * 1e3:.2f} |")


if __name__ == "__main__":
    main()
