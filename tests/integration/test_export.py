"""`kiln export`, `kiln serve ARTIFACT` and the model cache on the real binary.

- an exported artifact serves the same greedy text as its source, and /info reports it;
- the shape envelope (--batch-size, --sequence-length) is enforced and reported;
- three `kiln serve --model-id SOURCE` on an empty cache: one export, three servers answering;
- a damaged cache entry is reported and rebuilt, never loaded;
- `kiln cache list | verify | prune`.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import requests

from conftest import KilnServer, stop_process

PROMPT = "The capital of France is"


def greedy(url: str, prompt: str = PROMPT, tokens: int = 12) -> str:
    r = requests.post(url + "/generate", json={"inputs": prompt, "parameters": {
        "max_new_tokens": tokens, "do_sample": False}}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()["generated_text"]


def run_kiln(exe: Path, *args, env=None, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture(scope="module")
def artifact(kiln_paths, tmp_path_factory) -> Path:
    exe, model = kiln_paths
    out = tmp_path_factory.mktemp("export") / "smollm2.kiln"
    r = run_kiln(exe, "export", model, "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.is_file() and "packed for" in r.stdout
    return out


def test_artifact_serves_like_its_source(kiln_paths, artifact):
    exe, model = kiln_paths
    a = KilnServer(exe, artifact, [])
    s = KilnServer(exe, model, ["--no-model-cache"])
    try:
        info = requests.get(a.url + "/info", timeout=10).json()
        art = info["kiln_artifact"]
        assert art["path"] == str(artifact) and art["cache"] == "none"
        assert art["format_version"] == 1 and art["source"] == str(model)
        assert "kiln_artifact" not in requests.get(s.url + "/info", timeout=10).json()
        for prompt in (PROMPT, "def fibonacci(n):"):
            assert greedy(a.url, prompt) == greedy(s.url, prompt)
    finally:
        assert a.stop() == 0 and s.stop() == 0


def test_envelope_is_enforced_and_reported(kiln_paths, tmp_path):
    exe, model = kiln_paths
    out = tmp_path / "env.kiln"
    r = run_kiln(exe, "export", model, "-o", out, "--batch-size", 2, "--sequence-length", 96)
    assert r.returncode == 0, r.stderr
    s = KilnServer(exe, out, [])
    try:
        info = requests.get(s.url + "/info", timeout=10).json()
        assert info["max_total_tokens"] == 96 and info["max_batch_size"] == 2
        assert info["kiln_artifact"]["sequence_length"] == 96
        r = requests.post(s.url + "/generate", json={"inputs": PROMPT, "parameters": {
            "max_new_tokens": 200}}, timeout=30)
        assert r.status_code == 422, r.text
    finally:
        assert s.stop() == 0
    r = run_kiln(exe, "serve", "--model-id", out, "--port", 0, "--max-total-tokens", 512)
    assert r.returncode == 1 and "exceeds the artifact's sequence length of 96" in r.stderr


def start_detached(exe: Path, source: Path, env: dict) -> tuple[subprocess.Popen, int, Path]:
    from conftest import free_port, REPO
    port = free_port()
    log = REPO / "build-integration-logs" / f"kiln-serve-cache-{port}.log"
    log.parent.mkdir(exist_ok=True)
    proc = subprocess.Popen([str(exe), "serve", "--model-id", str(source), "--port", str(port),
                             "--cores", os.environ.get("KILN_TEST_CORES", "0")],
                            stdout=subprocess.DEVNULL, stderr=open(log, "w"), env=env)
    return proc, port, log


def wait_all_ready(procs):
    from conftest import health_ok, wait_until_ready
    for proc, port, log in procs:
        wait_until_ready(proc, lambda: health_ok(f"http://127.0.0.1:{port}"), "kiln serve",
                         lambda: log.read_text()[-4000:], 180, step=0.2)


def test_three_servers_on_an_empty_cache_export_once(kiln_paths, tmp_path):
    exe, model = kiln_paths
    env = dict(os.environ, KILN_CACHE=str(tmp_path / "cache"))
    procs = [start_detached(exe, model, env) for _ in range(3)]
    try:
        wait_all_ready(procs)
        texts = {greedy(f"http://127.0.0.1:{port}") for _, port, _ in procs}
        assert len(texts) == 1
        infos = [requests.get(f"http://127.0.0.1:{port}/info", timeout=10).json()
                 for _, port, _ in procs]
        assert sorted(i["kiln_artifact"]["cache"] for i in infos) == ["exported", "hit", "hit"]
        assert len({i["kiln_artifact"]["path"] for i in infos}) == 1
    finally:
        codes = [stop_process(p) for p, _, _ in procs]
    assert codes == [0, 0, 0]
    logs = [log.read_text() for _, _, log in procs]
    assert sum("exporting " in text for text in logs) == 1, logs
    entries = list((tmp_path / "cache" / "artifacts").glob("*.kiln"))
    assert len(entries) == 1, entries


def test_damaged_cache_entry_is_rebuilt(kiln_paths, tmp_path):
    exe, model = kiln_paths
    env = dict(os.environ, KILN_CACHE=str(tmp_path / "cache"))
    for damage in ("truncate", "flip"):
        proc = start_detached(exe, model, env)
        wait_all_ready([proc])
        assert stop_process(proc[0]) == 0
        [entry] = (tmp_path / "cache" / "artifacts").glob("*.kiln")
        size = entry.stat().st_size
        with open(entry, "r+b") as f:
            if damage == "truncate":
                f.truncate(size - 4096)
            else:
                f.seek(size // 2)
                byte = f.read(1)
                f.seek(size // 2)
                f.write(bytes([byte[0] ^ 0x10]))
        proc = start_detached(exe, model, env)
        wait_all_ready([proc])
        try:
            url = f"http://127.0.0.1:{proc[1]}"
            assert requests.get(url + "/info", timeout=10).json()["kiln_artifact"]["cache"] == \
                "exported"
            assert greedy(url)
        finally:
            assert stop_process(proc[0]) == 0
        log = proc[2].read_text()
        assert "is damaged" in log and ("truncated" in log or "checksum mismatch" in log), log


def test_cache_commands(kiln_paths, tmp_path, artifact):
    exe, model = kiln_paths
    cache = tmp_path / "cache"
    env = dict(os.environ, KILN_CACHE=str(cache))
    proc = start_detached(exe, model, env)
    wait_all_ready([proc])
    assert stop_process(proc[0]) == 0
    r = run_kiln(exe, "cache", "list", "--json", env=env)
    assert r.returncode == 0, r.stderr
    [entry] = json.loads(r.stdout)
    assert entry["source_path"] == str(model) and entry["bytes"] > 0
    assert run_kiln(exe, "cache", "verify", env=env).returncode == 0
    path = Path(entry["path"])
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size - 1)
    r = run_kiln(exe, "cache", "verify", env=env)
    assert r.returncode == 3 and "damaged" in r.stdout + r.stderr
    r = run_kiln(exe, "cache", "prune", "--max-size", "0", env=env)
    assert r.returncode == 0, r.stderr
    assert not list((cache / "artifacts").glob("*.kiln"))
    r = run_kiln(exe, "cache", "list", env=env)
    assert r.returncode == 0


def test_export_refuses_bad_options(kiln_paths, tmp_path, artifact):
    exe, model = kiln_paths
    cases = [
        (["--dtype", "q3_K"], "--dtype must be"),
        (["--target", "sparc"], "unknown target"),
        (["--sequence-length", "100000000"], "exceeds the model's context"),
    ]
    for flags, message in cases:
        r = run_kiln(exe, "export", model, "-o", tmp_path / "x.kiln", *flags)
        assert r.returncode == 1 and message in r.stderr, (flags, r.stderr)
    r = run_kiln(exe, "export", artifact, "-o", tmp_path / "y.kiln")
    assert r.returncode == 1 and "already a Kiln artifact" in r.stderr
    assert not list(tmp_path.glob("*.kiln*"))


def test_unwritable_cache_falls_back_to_the_source(kiln_paths, tmp_path):
    exe, model = kiln_paths
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env = dict(os.environ, KILN_CACHE=str(blocker / "cache"))  # under a file: cannot exist
    proc = start_detached(exe, model, env)
    wait_all_ready([proc])
    try:
        url = f"http://127.0.0.1:{proc[1]}"
        assert "kiln_artifact" not in requests.get(url + "/info", timeout=10).json()
        assert greedy(url)
    finally:
        assert stop_process(proc[0]) == 0
    assert "is not writable" in proc[2].read_text()
    r = run_kiln(exe, "serve", "--model-id", model, "--port", 0, "--dtype", "q8_0", env=env)
    assert r.returncode == 1 and "needs the model cache" in r.stderr
