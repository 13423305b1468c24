"""1,000 idle streaming connections (issue #5): admitted streaming requests that wait in the
queue, getting only SSE keep-alive comments, are held with flat memory, and the server keeps
answering while they are open and after they are gone. The benchmark with figures is
bench/idle_connections.py (docs/benchmarks.md, "Server (kiln serve, issue #5)")."""

from __future__ import annotations

import json
import resource
import selectors
import socket
import threading
import time
from pathlib import Path

import pytest
import requests

from conftest import metric

N = 1000
KV_TOKENS = 512
# Measured: about 10 KiB of RSS per waiting stream (socket buffers are kernel memory, not RSS);
# the bound leaves room for allocator noise and still catches a per-connection leak of a few
# tens of KiB.
MAX_GROWTH_MIB = 40
# Side requests close their connection, so that the server's connection count is exact.
CLOSE = {"Connection": "close"}


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


class Reader:
    """Drains every stream from one thread; counts keep-alive comments and token events."""

    def __init__(self):
        self.sel = selectors.DefaultSelector()
        self.lock = threading.Lock()
        self.state: dict[int, dict] = {}
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def add(self, s: socket.socket):
        s.setblocking(False)
        with self.lock:
            self.state[s.fileno()] = {"sock": s, "head": b"", "status": 0, "comments": 0,
                                      "events": 0, "tail": b"", "closed": False}
            self.sel.register(s, selectors.EVENT_READ, s.fileno())

    def run(self):
        while not self.stop:
            if not self.state:
                time.sleep(0.01)
                continue
            for key, _ in self.sel.select(0.1):
                with self.lock:
                    st = self.state.get(key.data)
                    if st is None or st["closed"]:
                        continue
                    try:
                        data = st["sock"].recv(65536)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        st["closed"] = True
                        self.sel.unregister(st["sock"])
                        continue
                    if not st["status"]:
                        st["head"] += data
                        if b"\r\n" in st["head"]:
                            st["status"] = int(st["head"].split(b" ", 2)[1])
                    seen = st["tail"] + data
                    st["comments"] += seen.count(b":\n\n") - st["tail"].count(b":\n\n")
                    st["events"] += seen.count(b"data:") - st["tail"].count(b"data:")
                    st["tail"] = seen[-8:]

    def snapshot(self) -> list[dict]:
        with self.lock:
            return [dict(st) for st in self.state.values()]

    def close(self):
        with self.lock:
            for st in self.state.values():
                if not st["closed"]:
                    self.sel.unregister(st["sock"])
                    st["closed"] = True
                st["sock"].close()
        self.stop = True
        self.thread.join(5)


def test_1000_idle_streams_flat_memory(start_server):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 2 * N + 256  # this process's sockets, and the server's (it inherits the limit)
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            pytest.skip(f"RLIMIT_NOFILE hard limit {hard} < {need}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    # One request generates, N - 1 wait (capacity exactly N); the KV pool is one request.
    server = start_server("--max-concurrent-requests", "1", "--max-queue", str(N - 1),
                          "--max-batch-size", "1", "--max-total-tokens", str(KV_TOKENS),
                          "--max-batch-total-tokens", str(KV_TOKENS),
                          "--max-batch-prefill-tokens", str(KV_TOKENS),
                          "--keep-alive-interval", "1")
    pid = server.proc.pid
    # Warm-up: a prompt that fills the KV pool, so that the running stream's blocks are not
    # counted as growth, then one stream through the SSE path.
    r = requests.post(server.url + "/generate", timeout=120, headers=CLOSE, json={
        "inputs": "the" + " the" * (KV_TOKENS - 40), "parameters": {"max_new_tokens": 4}})
    assert r.status_code == 200, r.text
    r = requests.post(server.url + "/v1/completions", timeout=60, headers=CLOSE, json={
        "model": "m", "prompt": "Hi", "max_tokens": 4, "stream": True})
    assert r.status_code == 200
    time.sleep(0.3)
    base = rss_kib(pid)

    body = json.dumps({"model": "m", "prompt": "Tell me a long story about a dragon.",
                       "max_tokens": KV_TOKENS - 32, "ignore_eos": True,
                       "stream": True}).encode()
    raw = (f"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    reader = Reader()
    try:
        for _ in range(N):
            s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
            s.sendall(raw + body)
            reader.add(s)
        deadline = time.time() + 30
        while time.time() < deadline:
            if all(st["status"] for st in reader.snapshot()):
                break
            time.sleep(0.05)
        statuses = [st["status"] for st in reader.snapshot()]
        assert statuses.count(200) == N, {s: statuses.count(s) for s in set(statuses)}

        # Every slot is taken: one stream more is refused at once, the cheap routes answer.
        t0 = time.perf_counter()
        extra = requests.post(server.url + "/v1/completions", timeout=10, headers=CLOSE, json={
            "model": "m", "prompt": "x", "max_tokens": 4, "stream": True})
        assert extra.status_code == 429
        t1 = time.perf_counter()
        assert requests.get(server.url + "/health", timeout=10, headers=CLOSE).status_code == 200
        t2 = time.perf_counter()
        assert t1 - t0 < 2.0 and t2 - t1 < 2.0, (t1 - t0, t2 - t1)
        # Admitted at once; the engine takes them into its queue a moment later.
        deadline = time.time() + 10
        while True:
            text = requests.get(server.url + "/metrics", timeout=10, headers=CLOSE).text
            assert metric(text, "kiln_requests_in_flight") == N
            engine = (metric(text, "kiln_requests_running"),
                      metric(text, "kiln_requests_waiting"))
            if sum(engine) == N or time.time() > deadline:
                break
            time.sleep(0.05)
        assert engine[0] <= 1 and sum(engine) == N, engine

        before = {id(st["sock"]): st["comments"] for st in reader.snapshot()}
        time.sleep(3.0)
        held = rss_kib(pid)
        idle = [st for st in reader.snapshot() if st["events"] == 0]
        assert len(idle) >= N - 2
        # keep-alive every 1 s: each idle stream got at least one comment in 3 s.
        assert min(st["comments"] - before[id(st["sock"])] for st in idle) >= 1
        growth_mib = (held - base) / 1024
        print(f"RSS baseline {base / 1024:.1f} MiB, {N} idle streams {held / 1024:.1f} MiB "
              f"(+{growth_mib:.1f} MiB, {(held - base) / N:.1f} KiB per stream)")
        assert growth_mib < MAX_GROWTH_MIB, growth_mib
    finally:
        reader.close()

    # Gone: every request and connection released promptly, the server answers at once.
    deadline = time.time() + 10
    while True:
        text = requests.get(server.url + "/metrics", timeout=10, headers=CLOSE).text
        if (metric(text, "kiln_requests_in_flight") == 0
                and metric(text, "kiln_http_connections") <= 1):
            break
        assert time.time() < deadline, text
        time.sleep(0.05)
    r = requests.post(server.url + "/generate", timeout=60, headers=CLOSE,
                      json={"inputs": "Hi", "parameters": {"max_new_tokens": 3}})
    assert r.status_code == 200
    assert rss_kib(pid) / 1024 - base / 1024 < MAX_GROWTH_MIB
    assert server.alive()
