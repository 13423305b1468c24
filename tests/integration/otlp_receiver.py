"""A stand-in OpenTelemetry collector for the tracing tests: a plain HTTP server on loopback that
takes OTLP/HTTP trace exports (POST /v1/traces, protobuf) and decodes them with the official
`opentelemetry-proto` classes, or misbehaves on purpose (refuses, hangs, answers 500 or
garbage) so the tests can watch Kiln keep serving."""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from dataclasses import dataclass, field

from conftest import require_module

MODES = ("ok", "http500", "hang", "garbage")


@dataclass
class ReceivedSpan:
    service: str
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start: int  # unix ns
    end: int
    attributes: dict
    status_code: int
    resource: dict = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return (self.end - self.start) / 1e9


def _any_value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def decode(body: bytes) -> list[ReceivedSpan]:
    """The spans of one ExportTraceServiceRequest."""
    require_module("opentelemetry.proto")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import \
        ExportTraceServiceRequest
    req = ExportTraceServiceRequest()
    req.ParseFromString(body)
    out = []
    for rs in req.resource_spans:
        resource = {a.key: _any_value(a.value) for a in rs.resource.attributes}
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append(ReceivedSpan(
                    service=resource.get("service.name", ""), trace_id=s.trace_id.hex(),
                    span_id=s.span_id.hex(), parent_span_id=s.parent_span_id.hex(),
                    name=s.name, kind=s.kind, start=s.start_time_unix_nano,
                    end=s.end_time_unix_nano,
                    attributes={a.key: _any_value(a.value) for a in s.attributes},
                    status_code=s.status.code, resource=resource))
    return out


class OtlpReceiver:
    """Listens on 127.0.0.1:<port>. `mode`: ok (200, decoded and kept), http500, hang (reads the
    request, never answers), garbage (non-HTTP bytes, then close)."""

    def __init__(self, mode: str = "ok"):
        assert mode in MODES, mode
        self.mode = mode
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self.content_types: list[str] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        receiver = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                receiver._serve(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _serve(self, sock: socket.socket):
        sock.settimeout(30)
        buf = b""
        try:
            while not self._stop.is_set():
                while b"\r\n\r\n" not in buf:
                    chunk = sock.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, _, buf = buf.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in
                           (line.partition(":") for line in lines[1:])}
                length = int(headers.get("content-length", "0"))
                while len(buf) < length:
                    chunk = sock.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                body, buf = buf[:length], buf[length:]
                with self._lock:
                    self.requests += 1
                    self.paths.append(lines[0].split(" ")[1] if " " in lines[0] else "")
                    self.content_types.append(headers.get("content-type", ""))
                if self.mode == "hang":
                    self._stop.wait(60)
                    return
                if self.mode == "garbage":
                    sock.sendall(b"\x00\xffnot http at all\r\n\r\n")
                    return
                if self.mode == "http500":
                    sock.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n")
                    continue
                spans = decode(body)
                with self._lock:
                    self.spans.extend(spans)
                # An empty ExportTraceServiceResponse.
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n"
                             b"Content-Length: 0\r\n\r\n")
        except OSError:
            return

    def wait_for(self, predicate, timeout: float = 15.0) -> list[ReceivedSpan]:
        """Waits until predicate(spans) holds; returns the spans (the last seen on timeout)."""
        deadline = time.time() + timeout
        while True:
            with self._lock:
                spans = list(self.spans)
            if predicate(spans) or time.time() > deadline:
                return spans
            time.sleep(0.1)

    def close(self):
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()


def closed_port_url() -> str:
    """A loopback URL where nothing listens (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
