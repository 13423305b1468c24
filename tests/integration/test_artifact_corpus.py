"""The malformed-artifact corpus (tests/fuzz/corpus/kiln_artifact/, written by
tests/formats/kiln_artifact_test.cc) through the real binary: `kiln serve`, `kiln generate`
and `kiln export` each refuse every damaged file with a clear message naming it and exit code
3, never a crash. scripts/test.sh runs this file against the ASan+UBSan build too.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import REPO

CORPUS = REPO / "tests" / "fuzz" / "corpus" / "kiln_artifact"
EXPECTED = {
    "truncated.kiln": "truncated",
    "wrong_magic.kiln": "not a Kiln artifact",
    "newer_header_version.kiln": "newer than this kiln reads",
    "newer_manifest_version.kiln": "format version 2",
    "overlapping_tensors.kiln": "overlap",
    "offset_out_of_range.kiln": "out of range",
    "checksum_mismatch.kiln": "checksum mismatch",
    "unknown_dtype.kiln": "unknown dtype",
}


def test_corpus_is_complete():
    assert sorted(p.name for p in CORPUS.glob("*.kiln")) == sorted([*EXPECTED, "valid.kiln"])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_damaged_artifact_is_refused(kiln_paths, name, tmp_path):
    exe, _ = kiln_paths
    path = CORPUS / name
    # wrong_magic is not recognised as an artifact at all: it is then read as a GGUF file.
    runs = {
        "serve": ["serve", "--model-id", str(path), "--port", "0"],
        "generate": ["generate", "--model-id", str(path), "--prompt-ids", "1,2"],
    }
    for what, args in runs.items():
        r = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=60)
        if name == "wrong_magic.kiln":
            assert r.returncode == 1 and str(path) in r.stderr, (what, r.stderr)
            continue
        assert r.returncode == 3, (what, r.returncode, r.stderr)
        assert "kiln: error:" in r.stderr and str(path) in r.stderr, r.stderr
        assert EXPECTED[name] in r.stderr, r.stderr
        assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr
