"""Admission control and payload limits of a real `kiln serve`."""

from __future__ import annotations

import socket
import threading

import requests

from http_raw import connect, post_json, read_status


def test_64_simultaneous_requests_vs_8_running_plus_8_queued(start_server):
    server = start_server("--max-concurrent-requests", "8", "--max-queue", "8",
                          "--max-total-tokens", "2048")
    body = post_json("/v1/chat/completions", {
        "messages": [{"role": "user", "content": "Write a very long story."}],
        "max_tokens": 1500, "ignore_eos": True, "stream": True})
    sockets: list[socket.socket] = [connect(server.port) for _ in range(64)]
    statuses: list[int] = [0] * 64
    barrier = threading.Barrier(64)

    def fire(i: int):
        barrier.wait()
        sockets[i].sendall(body)
        statuses[i] = read_status(sockets[i])

    threads = [threading.Thread(target=fire, args=(i,)) for i in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert statuses.count(200) == 16, statuses
        assert statuses.count(429) == 48, statuses
    finally:
        for s in sockets:
            s.close()
    # Once the streams are gone, capacity is back.
    r = requests.post(server.url + "/generate",
                      json={"inputs": "Hi", "parameters": {"max_new_tokens": 2}}, timeout=60)
    assert r.status_code == 200


def test_overloaded_body_and_retry_after(start_server):
    server = start_server("--max-concurrent-requests", "1", "--max-total-tokens", "2048")
    hold = connect(server.port)
    hold.sendall(post_json("/generate_stream", {"inputs": "Tell me a long story",
                                                "parameters": {"max_new_tokens": 1500}}))
    assert read_status(hold) == 200
    try:
        r = requests.post(server.url + "/generate", json={"inputs": "x"}, timeout=30)
        assert r.status_code == 429
        assert r.headers["Retry-After"] == "1"
        assert r.json() == {"error": "Model is overloaded", "error_type": "overloaded"}
        s = requests.post(server.url + "/generate_stream", json={"inputs": "x"}, timeout=30)
        assert s.status_code == 429  # a real status, not 200 + error event
    finally:
        hold.close()


def test_payload_limit(start_server):
    server = start_server("--payload-limit", "1000", "--max-total-tokens", "2048")
    ok = requests.post(server.url + "/tokenize", data=b'{"inputs": "' + b"a" * 980 + b'"}',
                       timeout=30)
    assert ok.status_code == 200
    big = requests.post(server.url + "/generate", data=b'{"inputs": "' + b"a" * 2000 + b'"}',
                        timeout=30)
    assert big.status_code == 413


def test_api_key(start_server):
    server = start_server("--api-key", "sekret", "--max-total-tokens", "2048")
    assert requests.get(server.url + "/health").status_code == 200
    assert requests.post(server.url + "/generate", json={"inputs": "x"}).status_code == 401
    r = requests.post(server.url + "/generate",
                      json={"inputs": "x", "parameters": {"max_new_tokens": 2}},
                      headers={"Authorization": "Bearer sekret"}, timeout=60)
    assert r.status_code == 200
