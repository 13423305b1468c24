"""Raw-socket HTTP helpers for tests that need exact control: simultaneous requests, dropping
connections mid-stream, malformed bytes."""

from __future__ import annotations

import json
import socket


def request_bytes(method: str, path: str, body: bytes | str = b"",
                  headers: dict[str, str] | None = None) -> bytes:
    if isinstance(body, str):
        body = body.encode()
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}",
             "Content-Type: application/json", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def post_json(path: str, payload) -> bytes:
    return request_bytes("POST", path, json.dumps(payload))


def connect(port: int, timeout: float = 30.0) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_status(s: socket.socket) -> int:
    """Reads until the end of the response head and returns the status code."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    if not data.startswith(b"HTTP/1."):
        return 0
    return int(data.split(b" ", 2)[1])


def exchange(port: int, raw: bytes, timeout: float = 30.0) -> tuple[int, bytes]:
    """Sends `raw` on a fresh connection and reads until the server closes (or `timeout`
    passes); returns (status, everything received). Status 0: no HTTP response. The write side
    stays open: like hyper, the server takes a half-close for a client that left."""
    with connect(port, timeout) as s:
        try:
            s.sendall(raw)
        except OSError:
            pass
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.") else 0
    return status, data
