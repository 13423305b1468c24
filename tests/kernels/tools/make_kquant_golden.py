"""Writes tests/data/kernels/kquant_blocks.bin for kquant_test.cc: real q4_K / q5_K / q6_K
(and q5_0 / q5_1) blocks and their dequantization by the gguf Python package (the reference).

  python make_kquant_golden.py OUT.bin MODEL.gguf [MODEL.gguf ...]

MODEL files: llama.cpp K-quant GGUFs (e.g. SmolLM2-135M quantized to Q4_K_M and Q5_K_M with
llama_cpp.llama_model_quantize). For each K type found, the first and the middle row of the
first tensor of that type are written (whole rows: every super-block of the row).

Format: b"KQGD", then records {u32 ggml type, u32 n elements, n/256 blocks as stored,
f32[n] = gguf.quants.dequantize(blocks)}, little-endian.
"""

import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader
from gguf.quants import dequantize

# DType order in Kiln: q4_K, q5_K, q6_K, q5_0, q5_1 (the last two are the K-quant mixes'
# fallbacks for rows that are not whole super-blocks).
K_TYPES = (Q.Q4_K, Q.Q5_K, Q.Q6_K, Q.Q5_0, Q.Q5_1)


def main(out_path: str, models: list[str]) -> None:
    records = {}
    for path in models:
        for t in GGUFReader(path).tensors:
            if t.tensor_type in K_TYPES and t.tensor_type not in records:
                data = np.asarray(t.data)  # [rows, row_bytes] uint8
                rows = [0, data.shape[0] // 2]
                records[t.tensor_type] = [data[r].copy() for r in rows]
                print(f"{t.tensor_type.name}: {t.name} rows {rows}", file=sys.stderr)
    missing = [q.name for q in K_TYPES if q not in records]
    if missing:
        sys.exit(f"no tensor of type {missing} in {models}")
    with open(out_path, "wb") as f:
        f.write(b"KQGD")
        for q in K_TYPES:
            for row in records[q]:
                values = dequantize(row, q).astype("<f4").reshape(-1)
                f.write(struct.pack("<II", int(q), values.size))
                f.write(row.tobytes())
                f.write(values.tobytes())


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
