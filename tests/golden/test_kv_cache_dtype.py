"""bf16 and f16 KV caches against the f32 one, through the real binary: the prompt's logits of
SmolLM2 Q4_1 and stories260K with --kv-cache-dtype bf16 or f16 (the default, "auto", for these
quantized / f16 files) stay close to those with an f32 cache, and the greedy choice at each
position barely moves.

  kiln generate --model-id FILE --prompt-ids IDS --dump-logits OUT --max-new-tokens 0
                [--kv-cache-dtype bf16|f16]

Measured (2026-12): SmolLM2 24 positions, max |diff| 1.34 logits (mean 0.21) of a 66-logit
range; stories260K 30 positions, max 0.13 (mean 0.014) of 38. bf16 keeps 8 mantissa bits
against f16's 11: llama.cpp's f16 cache already moves SmolLM2's logits by ~0.2 (see
test_greedy_llamacpp.py), and the Q8 activation quantization of Q4_1 matmuls amplifies the
rounding. The bounds leave a margin of about 2x; argmax must agree at nearly every position.
f16 (llama.cpp's default cache) keeps 3 more bits, and is held to the same bounds.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import parse_json_stdout

# (max, mean) |logit diff|, absolute
BOUNDS = {"smollm2": (3.0, 0.45), "stories": (0.3, 0.03)}
PROMPT = {"smollm2": "The history of the Roman Empire spans many centuries, from the founding of "
                     "the city to the fall of Constantinople. Its legacy",
          "stories": "Once upon a time, there was a little girl named Lily. She loved to play "
                     "outside with her dog"}


def prompt_logits(run_kiln, path, ids, out, *extra):
    run_kiln("generate", "--model-id", path, "--prompt-ids", ",".join(map(str, ids)),
             "--dump-logits", out, "--max-new-tokens", 0, *extra)
    return np.fromfile(out, dtype="<f4").reshape(len(ids), -1)


@pytest.mark.parametrize("kv_dtype", ["bf16", "f16"])
@pytest.mark.parametrize("model", ["smollm2", "stories"])
def test_half_kv_logits_close_to_f32(run_kiln, smollm2_gguf, stories_gguf, tmp_path, model,
                                     kv_dtype):
    path = smollm2_gguf if model == "smollm2" else stories_gguf
    # Token ids from Kiln's own tokenizer (a one-token generation prints them).
    info = parse_json_stdout(run_kiln("generate", "--model-id", path, "--prompt", PROMPT[model],
                                      "--max-new-tokens", 1, "--details").stdout)
    ids = info["prompt_token_ids"]
    f32 = prompt_logits(run_kiln, path, ids, tmp_path / "f32.bin", "--kv-cache-dtype", "f32")
    half = prompt_logits(run_kiln, path, ids, tmp_path / "half.bin", "--kv-cache-dtype", kv_dtype)
    assert np.isfinite(half).all()
    diff = np.abs(half - f32)
    same_argmax = (half.argmax(1) == f32.argmax(1)).mean()
    print(f"{model} {kv_dtype}: {len(ids)} positions, max |diff| {diff.max():.4g}, "
          f"mean {diff.mean():.3g}, logit range {f32.max() - f32.min():.3g}, "
          f"argmax agrees at {same_argmax:.0%}")
    max_bound, mean_bound = BOUNDS[model]
    assert diff.max() <= max_bound and diff.mean() <= mean_bound, (
        f"max |diff| {diff.max():.4g} (allowed {max_bound}), mean {diff.mean():.3g} "
        f"(allowed {mean_bound})")
    assert same_argmax >= 0.9, f"argmax agrees at only {same_argmax:.0%} of positions"


def test_bad_kv_cache_dtype_is_refused(kiln_bin, stories_gguf):
    import subprocess
    proc = subprocess.run([str(kiln_bin), "generate", "--model-id", str(stories_gguf), "--prompt",
                           "Hi", "--kv-cache-dtype", "f8"], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "--kv-cache-dtype must be auto, f32, f16 or bf16" in proc.stderr
