"""Clients that vanish mid-stream must free their slots and KV blocks at once."""

from __future__ import annotations

import random
import socket
import threading
import time

import requests

from conftest import metric
from http_raw import connect, post_json, read_status


def test_200_streaming_clients_drop_at_random_points(start_server):
    # Small steps: a cancel takes effect at the next step boundary, so the step length bounds
    # how fast blocks come back.
    server = start_server("--max-concurrent-requests", "8", "--max-queue", "200",
                          "--max-batch-prefill-tokens", "128", "--max-total-tokens", "2048",
                          "--no-prefix-caching")
    rng = random.Random(1234)
    bodies = [
        post_json("/generate_stream", {"inputs": "Tell me a story about a dragon",
                                       "parameters": {"max_new_tokens": 1000}}),
        post_json("/v1/chat/completions", {"messages": [{"role": "user", "content": "Story?"}],
                                           "max_tokens": 1000, "ignore_eos": True,
                                           "stream": True}),
        post_json("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 1000,
                                      "ignore_eos": True, "stream": True}),
    ]
    errors: list[str] = []

    def client(i: int):
        try:
            s = connect(server.port)
            s.sendall(bodies[i % len(bodies)])
            plan = rng.random()
            if plan < 0.2:  # gone before the first byte of the answer
                time.sleep(rng.random() * 0.05)
            else:
                status = read_status(s)
                if status != 200:
                    errors.append(f"client {i}: status {status}")
                deadline = time.time() + rng.random() * 2.0
                while time.time() < deadline:
                    if not s.recv(4096):
                        break
            if rng.random() < 0.5:  # half reset, half close politely
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()
        except OSError as e:
            errors.append(f"client {i}: {e}")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[:10]
    gone = time.time()
    while True:
        text = requests.get(server.url + "/metrics", timeout=10).text
        running = metric(text, "kiln_requests_running")
        waiting = metric(text, "kiln_requests_waiting")
        used = metric(text, "kiln_kv_cache_blocks_used")
        in_flight = metric(text, "kiln_requests_in_flight")
        if running == 0 and waiting == 0 and used == 0 and in_flight == 0:
            break
        assert time.time() - gone < 2.0, (running, waiting, used, in_flight)
        time.sleep(0.05)
    r = requests.post(server.url + "/generate",
                      json={"inputs": "Hi", "parameters": {"max_new_tokens": 3}}, timeout=60)
    assert r.status_code == 200
    assert metric(text, "tgi_request_count") >= 200
    assert server.alive()


def test_sigterm_drains_in_flight_requests(start_server):
    server = start_server("--max-total-tokens", "2048", "-g", "60")
    result: dict = {}

    def long_request():
        # ignore_eos keeps the request in flight for all 400 tokens (seconds), so the signal
        # surely lands while it runs.
        result["r"] = requests.post(server.url + "/v1/completions", json={
            "prompt": "Count slowly", "max_tokens": 400, "ignore_eos": True}, timeout=120)

    t = threading.Thread(target=long_request)
    t.start()
    deadline = time.time() + 30
    while metric(requests.get(server.url + "/metrics", timeout=10).text,
                 "kiln_requests_running") < 1:
        assert time.time() < deadline, "the request never started"
        time.sleep(0.02)
    server.proc.send_signal(15)
    time.sleep(0.1)
    health = requests.get(server.url + "/health", timeout=10)
    assert health.status_code == 503
    t.join(120)
    assert result["r"].status_code == 200
    assert result["r"].json()["usage"]["completion_tokens"] == 400
    assert server.proc.wait(60) == 0
