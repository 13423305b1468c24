"""`kiln launch` for the integration tests: the router and its replicas as one child process,
and helpers to read its /info and /metrics and to find processes it left behind."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from conftest import REPO, SERVER_FLAGS, free_port, stop_process, wait_until_ready

# Every replica's flags in these tests: a small KV cache starts faster (see SERVER_FLAGS).
REPLICA_FLAGS = SERVER_FLAGS


class KilnLaunch:
    """`kiln launch --replicas N ...` on a free port; stop() sends SIGTERM and returns the exit
    code. `marker` is passed to every replica (--served-model-name) so that leftovers can be
    found in the process table."""

    def __init__(self, exe: Path, model: Path, args: list[str], replicas: int = 2,
                 wait: bool = True, replica_flags: list[str] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.marker = f"kiln-launch-test-{self.port}-{os.getpid()}"
        logs = REPO / "build-integration-logs"
        logs.mkdir(exist_ok=True)
        self.log_path = logs / f"kiln-launch-{self.port}.log"
        flags = REPLICA_FLAGS if replica_flags is None else replica_flags
        self.cmd = [str(exe), "launch", "--model-id", str(model), "--replicas", str(replicas),
                    "--hostname", "127.0.0.1", "--port", str(self.port),
                    "--served-model-name", self.marker, *flags, *args]
        self.started = time.time()
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL,
                                     stderr=open(self.log_path, "w"))
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout: float = 120.0):
        wait_until_ready(self.proc, lambda: all(r["state"] == "ready" for r in
                                                self.info()["replicas"]),
                         "kiln launch", self.stderr, timeout)

    def stderr(self) -> str:
        try:
            return self.log_path.read_text()[-6000:]
        except OSError:
            return ""

    def info(self) -> dict:
        import requests
        return requests.get(self.url + "/info", timeout=5).json()

    def replica(self, index: int) -> dict:
        return self.info()["replicas"][index]

    def metrics(self) -> str:
        import requests
        return requests.get(self.url + "/metrics", timeout=5).text

    def stop(self, timeout: float = 60.0) -> int:
        return stop_process(self.proc, timeout)


def sample(text: str, name: str, labels: str = "") -> float:
    """The value of `name{labels}` (labels as written, e.g. 'replica="0"') in Prometheus text."""
    key = f"{name}{{{labels}}} " if labels else f"{name} "
    for line in text.splitlines():
        if line.startswith(key):
            return float(line.split()[-1])
    raise KeyError(key)


def processes_with(marker: str) -> list[str]:
    """Command lines of live processes whose arguments contain `marker`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = (Path("/proc") / pid / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            status = (Path("/proc") / pid / "status").read_text()
        except OSError:
            continue
        if marker in cmdline and "State:\tZ" not in status:
            found.append(f"{pid}: {cmdline}")
    return found
