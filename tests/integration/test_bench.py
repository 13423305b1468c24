"""`kiln bench` end to end, through the real binary, against a fake OpenAI streaming server in
this process: profiles, outputs, incomplete requests, re-rendering a saved report. The
cross-checks with GuideLLM are in test_guidellm.py.

Environment: KILN_BIN (the kiln binary; default <repo>/build/kiln or $KILN_BUILD_DIR/kiln).
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- locating tools


def kiln_binary() -> Path:
    candidates = []
    if os.environ.get("KILN_BIN"):
        candidates.append(Path(os.environ["KILN_BIN"]))
    if os.environ.get("KILN_BUILD_DIR"):
        candidates.append(Path(os.environ["KILN_BUILD_DIR"]) / "kiln")
    candidates.append(ROOT / "build" / "kiln")
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            probe = subprocess.run([str(path), "bench", "--help"], capture_output=True, timeout=30)
            if probe.returncode == 0:
                return path
    pytest.skip("no kiln binary with `kiln bench` (build it, or set KILN_BIN)")


# ---------------------------------------------------------------- fake OpenAI server


class FakeOpenAI(http.server.ThreadingHTTPServer):
    """Streams `max_tokens` chunks (default 8): the first after `ttft`, then one per `itl`."""

    daemon_threads = True
    request_queue_size = 256  # listen backlog: the default 5 drops SYNs under load

    def __init__(self, ttft=0.05, itl=0.01, usage=True):
        self.ttft, self.itl, self.usage = ttft, itl, usage
        self.bodies: list[dict] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), FakeHandler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def close(self):
        self.shutdown()
        self.server_close()


class FakeHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "fake-model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def chunk(self, data: str) -> None:
        raw = data.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(raw), raw))
        self.wfile.flush()

    def do_POST(self):
        server: FakeOpenAI = self.server
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with server.lock:
            server.bodies.append(request)
        tokens = request.get("max_tokens", 8)
        chat = "messages" in request
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        start = time.monotonic()
        try:
            for i in range(tokens):
                delay = start + server.ttft + i * server.itl - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                choice = {"index": 0, "delta": {"content": " w"}} if chat else {"index": 0, "text": " w"}
                self.chunk("data: " + json.dumps({"choices": [choice]}) + "\n\n")
            if server.usage:
                usage = {"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": tokens + 5}
                self.chunk("data: " + json.dumps({"choices": [], "usage": usage}) + "\n\n")
            self.chunk("data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


@pytest.fixture
def fake_server():
    server = FakeOpenAI()
    yield server
    server.close()


def run_bench(kiln: Path, args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    result = subprocess.run([str(kiln), "bench", *args], capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, f"kiln bench failed:\n{result.stdout}\n{result.stderr}"
    return result


# ---------------------------------------------------------------- against the fake server


def test_sweep_writes_every_output(fake_server, tmp_path):
    kiln = kiln_binary()
    out = tmp_path / "report.json"
    result = run_bench(kiln, [
        "--target", fake_server.url, "--profile", "sweep", "--rate", "4", "--max-seconds", "2",
        "--max-concurrency", "8", "--data", "prompt_tokens=32,output_tokens=16",
        "--output", str(out), "--output-csv", str(tmp_path / "r.csv"),
        "--output-html", str(tmp_path / "r.html"), "--no-progress"])
    report = json.loads(out.read_text())
    types = [b["strategy"]["type"] for b in report["benchmarks"]]
    assert types == ["synchronous", "throughput", "constant", "constant"]
    sync_rate = report["benchmarks"][0]["metrics"]["requests_per_second"]
    thr_rate = report["benchmarks"][1]["metrics"]["requests_per_second"]
    rates = [b["strategy"]["rate"] for b in report["benchmarks"][2:]]
    # numpy.linspace(sync, throughput, 3)[1:]
    assert rates == pytest.approx([(sync_rate + thr_rate) / 2, thr_rate], rel=1e-6)
    for b in report["benchmarks"]:
        assert b["request_totals"]["successful"] > 0
        assert b["request_totals"]["errored"] == 0
        ttft = b["metrics"]["time_to_first_token_ms"]["successful"]["median"]
        assert 45 <= ttft < 1000
        for r in b["requests"]:
            if r["status"] == "successful":
                assert r["output_tokens"] == 16 and r["usage_reported"]
    assert report["run"]["model"] == "fake-model"
    assert all(body["max_tokens"] == 16 and body["ignore_eos"] for body in fake_server.bodies)
    assert "Benchmarks Stats" in result.stdout and "constant@" in result.stdout
    csv_lines = (tmp_path / "r.csv").read_text().splitlines()
    assert len(csv_lines) == 5
    html = (tmp_path / "r.html").read_text()
    assert html.count("<svg") == 4 and "<script" not in html


def test_chat_with_max_requests(fake_server, tmp_path):
    kiln = kiln_binary()
    out = tmp_path / "chat.json"
    run_bench(kiln, [
        "--target", fake_server.url + "/v1", "--model", "m", "--profile", "synchronous",
        "--max-requests", "5", "--request-type", "chat_completions",
        "--data", "prompt_tokens=10,output_tokens=4", "--output", str(out)])
    report = json.loads(out.read_text())
    (bench,) = report["benchmarks"]
    assert bench["request_totals"] == {"successful": 5, "incomplete": 0, "errored": 0, "total": 5}
    assert fake_server.bodies[0]["messages"][0]["role"] == "user"
    assert len(fake_server.bodies[0]["messages"][0]["content"].split()) == 10  # word tokens
    assert fake_server.bodies[0]["model"] == "m"


def test_time_limit_cuts_streams_as_incomplete(tmp_path):
    kiln = kiln_binary()
    server = FakeOpenAI(ttft=0.01, itl=0.05)
    try:
        out = tmp_path / "cut.json"
        started = time.monotonic()
        run_bench(kiln, [
            "--target", server.url, "--profile", "concurrent", "--rate", "3", "--max-seconds",
            "1.5", "--data", "prompt_tokens=8,output_tokens=1000", "--output", str(out)])
        assert time.monotonic() - started < 60
        (bench,) = json.loads(out.read_text())["benchmarks"]
        assert bench["request_totals"]["incomplete"] == 3
        assert bench["duration"] == pytest.approx(1.5, abs=0.3)
        assert all(r["output_tokens"] > 0 for r in bench["requests"])  # partial output counted
    finally:
        server.close()


def test_from_report_rerenders_outputs(fake_server, tmp_path):
    kiln = kiln_binary()
    out = tmp_path / "r.json"
    run_bench(kiln, ["--target", fake_server.url, "--profile", "constant", "--rate", "5",
                     "--max-seconds", "1", "--data", "prompt_tokens=8,output_tokens=3",
                     "--output", str(out)])
    result = run_bench(kiln, ["--from-report", str(out), "--output", str(tmp_path / "again.csv")])
    assert "constant@5.00" in result.stdout
    assert len((tmp_path / "again.csv").read_text().splitlines()) == 2
