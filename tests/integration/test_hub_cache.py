"""`--model-id org/name[@revision][:file]` resolved from a Hugging Face cache that the
huggingface_hub library itself filled.

A loopback stand-in for the Hub (hub_stub.py) answers the requests snapshot_download and
hf_hub_download make (/api/models/{repo}/revision/{rev}, HEAD and GET
/{repo}/resolve/{rev}/{file}) from local files: the default model's GGUF and a tiny random-weight
Llama folder written here. The library downloads them into a fresh cache in a child process
(HF_ENDPOINT=http://127.0.0.1:PORT), the stub is shut down, and `kiln` runs with HF_HUB_CACHE
pointed at that cache and HF_HUB_OFFLINE=1, from a folder where no id exists as a path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import KilnServer, require_module
from hub_stub import HubStub, write_tiny_llama

GGUF_REPO = "kiln-test/SmolLM2-135M-Instruct-GGUF"
QUANTS_REPO = "kiln-test/SmolLM2-quants"
HF_REPO = "tiny-random-llama"  # no org: models--tiny-random-llama
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

# The stub's commits (any 40-hex strings do: the library takes the server's word for them).
MAIN, V1, PR1, DETACHED = (c * 40 for c in "1234")
QUANTS_MAIN, HF_MAIN = "5" * 40, "6" * 40

FETCH = """
import json, sys
from huggingface_hub import snapshot_download
for repo, revision in json.loads(sys.argv[1]):
    print(snapshot_download(repo, revision=revision))
"""


def _stub_repos(gguf: Path, tiny: Path) -> dict:
    readme = tiny.parent / "README.md"
    readme.write_text("a test repo\n")
    tiny_files = {p.name: p for p in tiny.iterdir()}
    return {
        GGUF_REPO: {
            "refs": {"main": MAIN, "v1": V1, "refs/pr/1": PR1},
            "commits": {MAIN: {"README.md": readme, GGUF_NAME: gguf},
                        V1: {"v1/smollm2-v1.gguf": gguf},
                        PR1: {"smollm2-pr1.gguf": gguf},
                        DETACHED: {"smollm2-detached.gguf": gguf}},
        },
        QUANTS_REPO: {
            "refs": {"main": QUANTS_MAIN},
            "commits": {QUANTS_MAIN: {"smollm2-q4_1.gguf": gguf, "smollm2-alt.gguf": gguf}},
        },
        HF_REPO: {"refs": {"main": HF_MAIN}, "commits": {HF_MAIN: tiny_files}},
    }


@dataclass
class FilledCache:
    path: Path
    requests: list[tuple[str, str]]  # (method, URL path) the stub answered


@pytest.fixture(scope="module")
def hub_cache(kiln_paths, tmp_path_factory) -> FilledCache:
    """A cache filled by huggingface_hub's snapshot_download from the stub."""
    require_module("huggingface_hub")
    require_module("numpy")
    _, gguf = kiln_paths
    base = tmp_path_factory.mktemp("hub")
    cache = base / "cache"
    fetches = [(GGUF_REPO, "main"), (GGUF_REPO, "v1"), (GGUF_REPO, "refs/pr/1"),
               (GGUF_REPO, DETACHED), (QUANTS_REPO, None), (HF_REPO, None)]
    with HubStub(_stub_repos(gguf, write_tiny_llama(base / "tiny"))) as stub:
        env = {**os.environ, "HF_ENDPOINT": stub.url, "HF_HUB_CACHE": str(cache),
               "HF_HOME": str(base / "hf_home"), "HF_HUB_OFFLINE": "0",
               "HF_HUB_DISABLE_TELEMETRY": "1", "NO_PROXY": "127.0.0.1,localhost"}
        proc = subprocess.run([sys.executable, "-c", FETCH, json.dumps(fetches)], env=env,
                              capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.fail(f"snapshot_download failed:\n{proc.stderr[-4000:]}", pytrace=False)
    return FilledCache(cache, stub.requests)


@pytest.fixture
def offline(hub_cache, monkeypatch, tmp_path):
    """Kiln's environment: the filled cache, offline, run from an empty folder."""
    monkeypatch.setenv("HF_HUB_CACHE", str(hub_cache.path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: no network use
    monkeypatch.chdir(tmp_path)
    return hub_cache.path


def _generate(exe: Path, model: str, *args: str, check: bool = True):
    cores = os.environ.get("KILN_TEST_CORES", "0")
    cmd = [str(exe), "generate", "--model-id", model, "--cores", cores, "--details", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        pytest.fail(f"exit {proc.returncode}: {' '.join(cmd)}\n{proc.stderr[-4000:]}",
                    pytrace=False)
    return proc


def _details(proc) -> dict:
    return json.loads(proc.stdout)


def _snapshot(cache: Path, repo: str, commit: str) -> Path:
    return cache / ("models--" + repo.replace("/", "--")) / "snapshots" / commit


def test_library_wrote_the_layout_kiln_reads(offline, hub_cache):
    assert ("GET", f"/api/models/{GGUF_REPO}/revision/refs%2Fpr%2F1") in hub_cache.requests
    assert ("GET", f"/{GGUF_REPO}/resolve/{MAIN}/{GGUF_NAME}") in hub_cache.requests
    repo = offline / ("models--" + GGUF_REPO.replace("/", "--"))
    # Four snapshots link the one GGUF blob (named by its sha256 ETag), next to the README's.
    assert len(list((repo / "blobs").iterdir())) == 2
    assert (repo / "refs" / "main").read_text() == MAIN
    assert (repo / "refs" / "v1").read_text() == V1
    assert (repo / "refs" / "refs" / "pr" / "1").read_text() == PR1
    link = repo / "snapshots" / MAIN / GGUF_NAME
    assert link.is_symlink() and link.resolve().parent == repo / "blobs"
    assert (offline / "models--tiny-random-llama" / "snapshots" / HF_MAIN / "config.json").is_file()


def test_serve_gguf_by_hub_id(offline, kiln_paths):
    exe, _ = kiln_paths
    requests = require_module("requests")
    server = KilnServer(exe, GGUF_REPO, ["--max-total-tokens", "512"])
    try:
        info = requests.get(server.url + "/info", timeout=10).json()
        assert info["model_id"] == GGUF_REPO
        r = requests.post(server.url + "/generate", timeout=60, json={
            "inputs": "The capital of France is", "parameters": {"max_new_tokens": 8}})
        assert r.status_code == 200, r.text
        assert r.json()["generated_text"].strip()
        assert str(_snapshot(offline, GGUF_REPO, MAIN) / GGUF_NAME) in server.stderr()
    finally:
        assert server.stop() == 0, server.stderr()


def test_revisions_through_refs_and_commits_give_the_same_tokens(offline, kiln_paths):
    exe, gguf = kiln_paths
    args = ("--prompt", "Once upon a time", "--max-new-tokens", "6")
    direct = _details(_generate(exe, str(gguf), *args))
    cases = {"": (MAIN, GGUF_NAME), "@v1": (V1, "v1/smollm2-v1.gguf"),
             "@refs/pr/1": (PR1, "smollm2-pr1.gguf"),
             "@" + DETACHED: (DETACHED, "smollm2-detached.gguf")}
    for suffix, (commit, file) in cases.items():
        out = _details(_generate(exe, GGUF_REPO + suffix, *args))
        assert out["model"] == str(_snapshot(offline, GGUF_REPO, commit) / file), suffix
        assert out["generated_text"] == direct["generated_text"], suffix


def test_hf_folder_without_org(offline, kiln_paths):
    exe, _ = kiln_paths
    out = _details(_generate(exe, HF_REPO, "--prompt-ids", "1,5,9", "--max-new-tokens", "3",
                             "--ignore-eos"))
    assert out["model"] == str(_snapshot(offline, HF_REPO, HF_MAIN))
    assert out["generated_tokens"] == 3


def test_several_ggufs_need_a_choice(offline, kiln_paths):
    exe, _ = kiln_paths
    proc = _generate(exe, QUANTS_REPO, "--prompt-ids", "1", "--max-new-tokens", "1", check=False)
    assert proc.returncode != 0
    assert "holds 2 GGUF files" in proc.stderr and ":FILE" in proc.stderr
    assert "smollm2-alt.gguf, smollm2-q4_1.gguf" in proc.stderr
    out = _details(_generate(exe, QUANTS_REPO + ":alt", "--prompt-ids", "1",
                             "--max-new-tokens", "1"))
    assert out["model"] == str(_snapshot(offline, QUANTS_REPO, QUANTS_MAIN) / "smollm2-alt.gguf")


def test_absent_id_says_what_was_looked_for(offline, kiln_paths):
    exe, _ = kiln_paths
    proc = _generate(exe, "kiln-test/absent", "--prompt-ids", "1", check=False)
    assert proc.returncode != 0
    for text in (f"cache root {offline}, from HF_HUB_CACHE",
                 f"no repo folder {offline / 'models--kiln-test--absent'}",
                 "hf download kiln-test/absent", "HF_HUB_OFFLINE is set"):
        assert text in proc.stderr, proc.stderr
    proc = _generate(exe, GGUF_REPO + "@v9", "--prompt-ids", "1", check=False)
    assert proc.returncode != 0
    repo = offline / ("models--" + GGUF_REPO.replace("/", "--"))
    for text in (f"no ref {repo / 'refs' / 'v9'}", "refs present: main, refs/pr/1, v1",
                 f"hf download {GGUF_REPO} --revision v9"):
        assert text in proc.stderr, proc.stderr


def test_malformed_id_is_refused(offline, kiln_paths):
    exe, _ = kiln_paths
    proc = _generate(exe, "org/../x", "--prompt-ids", "1", check=False)
    assert proc.returncode != 0
    assert "not a Hugging Face Hub id" in proc.stderr, proc.stderr
