#!/usr/bin/env python3
"""Tokenizer encode/decode throughput: Kiln (kiln_tokenize_tool --bench) vs HF `tokenizers` on
the same tokenizer.json and the same text, single thread each.

Tokenizers (built offline, as in tests/golden/test_tokenizer_hf.py): SmolLM2-135M's real
tokenizer.json rebuilt from its GGUF (49k byte-level BPE), and trained Llama-2-style (byte
fallback BPE), Llama-3-style (regex + byte-level BPE), BERT (WordPiece) and T5-style (Unigram)
ones. Text: the GPL-3 text plus the golden test strings (accents, CJK, emoji, code), repeated to
about 1 MB, encoded as documents of at most 4 KB (prompt-sized) cut at newlines.

  KILN_BUILD_DIR=build .venv/bin/python bench/tokenizer_bench.py [--repeat 5] [--mb 1] [--chunk 4096]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "golden"))

import tokenizers as tk  # noqa: E402

import test_tokenizer_hf as hf  # noqa: E402
from conftest import _find_smollm2  # noqa: E402


def bench_text(mb: float) -> str:
    base = Path("/usr/share/common-licenses/GPL-3").read_text()
    base += "\n".join(t for _, t in hf.TEXTS)
    reps = int(mb * 1e6 / len(base.encode())) + 1
    return base * reps


def chunks(data: bytes, chunk: int) -> list[bytes]:
    """Documents of at most `chunk` bytes cut after a newline (kiln_tokenize_tool's Chunks)."""
    out = []
    while data:
        n = len(data)
        if chunk and n > chunk:
            nl = data.rfind(b"\n", 0, chunk)
            n = chunk if nl < 0 else nl + 1
        out.append(data[:n])
        data = data[n:]
    return out


def time_ref(path: Path, text: str, repeat: int, chunk: int) -> tuple[float, float, int]:
    ref = tk.Tokenizer.from_file(str(path))
    ref.encode_special_tokens = True  # the tool's Encode(parse_special=false)
    docs = [d.decode() for d in chunks(text.encode(), chunk)]
    ref.encode(docs[0])  # warm-up
    t0 = time.perf_counter()
    for _ in range(repeat):
        ids = [ref.encode(d, add_special_tokens=False).ids for d in docs]
    enc = (time.perf_counter() - t0) / repeat
    t0 = time.perf_counter()
    for _ in range(repeat):
        out = sum(len(ref.decode(i, skip_special_tokens=False).encode()) for i in ids)
    dec = (time.perf_counter() - t0) / repeat
    return len(text.encode()) / enc / 1e6, out / dec / 1e6, sum(map(len, ids))


def time_kiln(exe: Path, path: Path, text_file: Path, repeat: int,
              chunk: int) -> tuple[float, float, int]:
    out = subprocess.run([str(exe), str(path), "--bench", str(text_file), str(repeat), str(chunk)],
                         capture_output=True, text=True, check=True).stdout
    enc = re.search(r"-> (\d+) tokens in [\d.]+ s: ([\d.]+) MB/s", out)
    dec = re.search(r"decode .* ([\d.]+) MB/s", out)
    return float(enc.group(2)), float(dec.group(1)), int(enc.group(1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--chunk", type=int, default=4096,
                    help="documents of at most this many bytes, cut at newlines (0: one)")
    args = ap.parse_args()
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    build = Path(os.environ.get("KILN_BUILD_DIR") or REPO / "build")
    build = build if build.is_absolute() else REPO / build
    exe = build / "tests" / "kiln_tokenize_tool"
    tmp = Path(tempfile.mkdtemp(prefix="kiln_tok_bench_"))
    text = bench_text(args.mb)
    text_file = tmp / "text.txt"
    text_file.write_text(text, encoding="utf-8")
    builders = {"smollm2": None, "llama2": hf.build_llama2, "llama3": hf.build_llama3,
                "bert": hf.build_bert, "unigram": hf.build_unigram}
    print(f"text: {len(text.encode()) / 1e6:.2f} MB in documents of <= {args.chunk} bytes, "
          f"repeat {args.repeat}, single thread\n")
    print("| tokenizer | tokens | Kiln encode MB/s | tokenizers encode MB/s | "
          "Kiln decode MB/s | tokenizers decode MB/s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, build_fn in builders.items():
        path = tmp / f"{name}.json"
        if build_fn is None:
            hf.build_smollm2(tk, path, _find_smollm2())
        else:
            build_fn(tk, path)
        k_enc, k_dec, k_n = time_kiln(exe, path, text_file, args.repeat, args.chunk)
        r_enc, r_dec, r_n = time_ref(path, text, args.repeat, args.chunk)
        same = "" if k_n == r_n else f" (ref {r_n})"
        print(f"| {name} | {k_n}{same} | {k_enc:.2f} | {r_enc:.2f} | {k_dec:.2f} | {r_dec:.2f} |")


if __name__ == "__main__":
    main()
