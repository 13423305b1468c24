"""Kiln's prompt logits against Hugging Face transformers, on small random-weight models.

Each architecture is built in the test from a transformers config (fixed seed), saved with
save_pretrained(safe_serialization=True) as float32, as bfloat16 and (one of them) sharded
with a model.safetensors.index.json, and Kiln is asked for the logits of a 64-token prompt:

  kiln generate --model-id DIR --prompt-ids 1,2,3,... --dump-logits OUT.bin \
                --max-new-tokens 0 [--token-by-token]

OUT.bin holds little-endian float32 logits of shape [n_prompt_tokens, vocab_size]; row t is
the logits after token t. --token-by-token feeds the prompt one token per forward step, which
must give the same logits as the one-pass prefill.

The reference is the transformers model with the eager attention, in float32. For the bf16
files the reference is the model loaded from those bf16 files and upcast to float32 (weights
rounded to bf16, math in f32) with the input of every Linear rounded to bf16 too: which is what
Kiln does (its bf16 MatMul multiplies bf16-rounded activations, as llama.cpp and bf16 hardware
do; kernels/ops.h).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from conftest import exported, require_module

N_PROMPT = 64
VOCAB = 1000

# Tolerances, as max |kiln - reference| over all logits divided by max |reference logit|.
# The task text says "<= 2e-2 for bf16"; we read it as relative to the largest logit, like the
# float32 bound.
TOL = {"f32": 1e-4, "sharded": 1e-4, "bf16": 2e-2}


@dataclass
class Spec:
    arch: str  # transformers class name
    seed: int
    config: dict = field(default_factory=dict)


COMMON = dict(
    vocab_size=VOCAB,
    hidden_act="silu",
    initializer_range=0.08,  # larger than the default 0.02 so the logits are not tiny
    bos_token_id=1,
    eos_token_id=2,
    use_cache=True,
)

SPECS = {
    # Llama 3.2-like: llama3 RoPE scaling, tied embeddings, large rope_theta.
    "llama32": Spec("LlamaForCausalLM", 1, dict(
        hidden_size=128, intermediate_size=352, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2,  # head_dim 32
        max_position_embeddings=131072, rope_theta=500000.0, rms_norm_eps=1e-5,
        rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
        tie_word_embeddings=True)),
    # Llama 2 / TinyLlama-like: untied lm_head, rope_theta 10000, 4 query heads per KV head.
    "llama2": Spec("LlamaForCausalLM", 2, dict(
        hidden_size=256, intermediate_size=688, num_hidden_layers=3,
        num_attention_heads=8, num_key_value_heads=2,  # head_dim 32
        max_position_embeddings=2048, rope_theta=10000.0, rms_norm_eps=1e-5,
        tie_word_embeddings=False)),
    # Mistral v0.3-like (no sliding window).
    "mistral": Spec("MistralForCausalLM", 3, dict(
        hidden_size=128, intermediate_size=352, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-5,
        sliding_window=None, tie_word_embeddings=False)),
    # Qwen2.5-like: q/k/v projections with bias (randomized below), tied embeddings.
    "qwen2": Spec("Qwen2ForCausalLM", 4, dict(
        hidden_size=128, intermediate_size=352, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2,  # head_dim 32
        max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6,
        use_sliding_window=False, tie_word_embeddings=True)),
    # Qwen3-like: per-head RMSNorm on q and k, explicit head_dim != hidden/heads, tied.
    "qwen3": Spec("Qwen3ForCausalLM", 5, dict(
        hidden_size=128, intermediate_size=352, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64,
        max_position_embeddings=40960, rope_theta=1000000.0, rms_norm_eps=1e-6,
        attention_bias=False, use_sliding_window=False, tie_word_embeddings=True)),
}

SHARDED_ARCH = "llama2"  # the one also saved in several shards


def _randomize(torch, model):
    """Random init leaves RMSNorm weights at 1 and biases at 0: move them so those paths count."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):  # input/post_attention/final norms, q_norm, k_norm
                p.uniform_(0.5, 1.5)
            elif name.endswith(".bias"):
                p.normal_(0.0, 0.2)


class ModelCache:
    """Builds, saves and computes the reference for each architecture once per module."""

    def __init__(self, root: Path):
        self.root = root
        self.torch = require_module("torch")
        self.transformers = require_module("transformers")
        self.torch.set_num_threads(2)
        self._built: dict[str, dict] = {}

    def get(self, arch_key: str) -> dict:
        if arch_key not in self._built:
            self._built[arch_key] = self._build(arch_key)
        return self._built[arch_key]

    def _reference(self, path: Path, ids: list[int],
                   bf16_linear_inputs: bool = False) -> np.ndarray:
        torch, tf = self.torch, self.transformers
        model = tf.AutoModelForCausalLM.from_pretrained(
            path, dtype=torch.float32, attn_implementation="eager")
        model.eval()
        if bf16_linear_inputs:
            def round_input(_module, args):
                return (args[0].to(torch.bfloat16).to(torch.float32),) + tuple(args[1:])
            for module in model.modules():
                if isinstance(module, torch.nn.Linear):
                    module.register_forward_pre_hook(round_input)
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids], dtype=torch.long)).logits[0]
        assert logits.shape == (len(ids), VOCAB)
        return logits.to(torch.float32).numpy()

    def _build(self, key: str) -> dict:
        torch, tf = self.torch, self.transformers
        spec = SPECS[key]
        model_cls = getattr(tf, spec.arch)
        torch.manual_seed(spec.seed)
        config = model_cls.config_class(**COMMON, **spec.config)
        model = model_cls(config).to(torch.float32).eval()
        _randomize(torch, model)

        gen = torch.Generator().manual_seed(1000 + spec.seed)
        ids = torch.randint(0, VOCAB, (N_PROMPT,), generator=gen).tolist()

        out = {"ids": ids, "dirs": {}, "ref": {}}
        d = self.root / key
        f32 = d / "f32"
        model.save_pretrained(f32, safe_serialization=True)
        out["dirs"]["f32"] = f32
        out["ref"]["f32"] = self._reference(f32, ids)

        bf16 = d / "bf16"
        copy.deepcopy(model).to(torch.bfloat16).save_pretrained(bf16, safe_serialization=True)
        out["dirs"]["bf16"] = bf16
        out["ref"]["bf16"] = self._reference(bf16, ids, bf16_linear_inputs=True)

        if key == SHARDED_ARCH:
            sharded = d / "sharded"
            model.save_pretrained(sharded, safe_serialization=True, max_shard_size="300KB")
            index = sharded / "model.safetensors.index.json"
            assert index.is_file(), "save_pretrained did not shard"
            n_shards = len(set(json.loads(index.read_text())["weight_map"].values()))
            assert n_shards > 1, n_shards
            out["dirs"]["sharded"] = sharded
            out["ref"]["sharded"] = out["ref"]["f32"]
        return out


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> ModelCache:
    return ModelCache(tmp_path_factory.mktemp("hf_models"))


CASES = []
for _key in SPECS:
    CASES += [(_key, "f32", False), (_key, "f32", True), (_key, "bf16", False)]
CASES.append((SHARDED_ARCH, "sharded", False))
# The same prefill checks on the folder exported by `kiln export` (the artifact's logits must
# also be bit-identical to the folder's).
CASES += [(_key, v, False, "artifact") for _key in SPECS for v in ("f32", "bf16")]
CASES = [c if len(c) == 4 else (*c, "source") for c in CASES]


@pytest.mark.parametrize(
    "arch_key,variant,token_by_token,form", CASES,
    ids=[f"{k}-{v}-{'token_by_token' if t else 'prefill'}{'-artifact' if f == 'artifact' else ''}"
         for k, v, t, f in CASES])
def test_prompt_logits_match_transformers(models, run_kiln, tmp_path, arch_key, variant,
                                          token_by_token, form):
    m = models.get(arch_key)
    ids, model_dir, ref = m["ids"], m["dirs"][variant], m["ref"][variant]

    def dump(model: Path, out: Path):
        args = ["generate", "--model-id", model, "--prompt-ids", ",".join(map(str, ids)),
                "--dump-logits", out, "--max-new-tokens", 0,
                "--kv-cache-dtype", "f32"]  # the reference's cache is f32 for the bf16 files too
        if token_by_token:
            args.append("--token-by-token")
        run_kiln(*args)

    out = tmp_path / "logits.bin"
    if form == "artifact":
        dump(model_dir, tmp_path / "source.bin")
        dump(exported(run_kiln, model_dir, tmp_path), out)
        assert out.read_bytes() == (tmp_path / "source.bin").read_bytes(), (
            "the artifact's logits differ from its source's")
    else:
        dump(model_dir, out)

    assert out.is_file(), f"kiln wrote no {out}"
    got = np.fromfile(out, dtype="<f4")
    assert got.size == N_PROMPT * VOCAB, (
        f"{got.size} floats in {out.name}, expected {N_PROMPT} x {VOCAB}")
    got = got.reshape(N_PROMPT, VOCAB)
    assert np.isfinite(got).all(), "non-finite logits"

    scale = float(np.abs(ref).max())
    diff = np.abs(got - ref)
    err = float(diff.max())
    row, col = np.unravel_index(int(diff.argmax()), diff.shape)
    argmax_agree = float((got.argmax(-1) == ref.argmax(-1)).mean())
    tol = TOL[variant]
    assert err <= tol * scale, (
        f"{arch_key}/{variant}{' token-by-token' if token_by_token else ''}: "
        f"max |diff| {err:.3g} = {err / scale:.3g} x max|logit| ({scale:.3g}) > {tol:g}; "
        f"worst at token {row}, vocab {col} (kiln {got[row, col]:.6g}, ref {ref[row, col]:.6g}); "
        f"argmax agrees on {argmax_agree:.0%} of rows")
