"""`kiln bench` end to end, through the real binary.

1. Against a fake OpenAI streaming server in this process (always runs when the binary exists):
   profiles, outputs, incomplete requests, re-rendering a saved report.
2. Cross-checks with GuideLLM (its `guidellm` CLI from PyPI; skipped when it is not installed):
   both tools measure the same server, one after the other, with the same prompts and load, and
   must agree within 10% on TTFT median, ITL median and output tokens/s:
   a. GuideLLM's own mock server (`guidellm mock-server`);
   b. the real `kiln serve` with the default model (skipped until `kiln serve` exists).

Environment: KILN_BIN (the kiln binary; default <repo>/build/kiln or $KILN_BUILD_DIR/kiln),
KILN_GUIDELLM (the guidellm executable; default: PATH, then <repo>/.venv-guidellm/bin),
KILN_SERVE_ARGS (extra arguments for `kiln serve`), KILN_BENCH_XCHECK_TOLERANCE (relative
tolerance of the cross-checks, default 0.10).
"""

from __future__ import annotations

import http.server
import json
import os
import random
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.request
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


def guidellm_binary() -> Path:
    for candidate in (
        os.environ.get("KILN_GUIDELLM"),
        shutil.which("guidellm"),
        str(ROOT / ".venv-guidellm" / "bin" / "guidellm"),
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    pytest.skip("guidellm is not installed (pip install guidellm, or set KILN_GUIDELLM)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float, proc: subprocess.Popen | None = None) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before answering {url}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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


# ---------------------------------------------------------------- cross-checks with GuideLLM


# Short requests in a long window: output tokens/s counts whole requests, so the one cut off at
# the end weighs about latency / SECONDS.
PROMPT_WORDS, OUTPUT_TOKENS, SECONDS = 48, 16, 30
TOLERANCE = float(os.environ.get("KILN_BENCH_XCHECK_TOLERANCE", "0.10"))


def write_prompts(path: Path, seed: int) -> None:
    """Prompts of identical token counts for both tools, but never the same text: each prompt
    is a shuffle of one multiset of common words (a word is its own pre-token, so the count
    does not depend on the order), seeded per tool. A server with a prefix cache would otherwise
    serve the second tool's prompts from the cache the first one filled."""
    words = ("the of and to in is that for it as was with be by on not he this are or his "
             "from at which but have an had they you were her all she there would their we him "
             "been has when who will more no if out so said what up its about into than them")
    words = words.split()[:PROMPT_WORDS]
    rng = random.Random(seed)
    with path.open("w") as f:
        for _ in range(400):
            rng.shuffle(words)
            f.write(json.dumps({"prompt": " ".join(words), "output_tokens_count": OUTPUT_TOKENS})
                    + "\n")


def guidellm_metrics(guidellm: Path, target: str, model: str, data: Path, out: Path) -> dict:
    cmd = [str(guidellm), "run",
           "--backend", f"kind=openai_http,target={target},model={model},"
                        "request_format=/v1/completions",
           "--profile", "kind=synchronous",
           "--constraint", f"kind=max_duration,seconds={SECONDS}",
           "--data", f"kind=json_file,path={data}",
           "--output", f"kind=json,path={out}", "--disable-progress"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"guidellm failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    m = json.loads(out.read_text())["benchmarks"][0]["metrics"]
    return {
        "ttft": m["time_to_first_token_ms"]["successful"]["median"],
        "itl": m["inter_token_latency_ms"]["successful"]["median"],
        "tps": m["output_tokens_per_second"]["successful"]["mean"],
    }


def kiln_metrics(kiln: Path, target: str, model: str, data: Path, out: Path) -> dict:
    run_bench(kiln, ["--target", target, "--model", model, "--profile", "synchronous",
                     "--max-seconds", str(SECONDS), "--data", str(data), "--output", str(out),
                     "--no-progress"], timeout=600)
    m = json.loads(out.read_text())["benchmarks"][0]["metrics"]
    return {
        "ttft": m["time_to_first_token_ms"]["successful"]["median"],
        "itl": m["inter_token_latency_ms"]["successful"]["median"],
        "tps": m["output_tokens_per_second"],
    }


def measure_both(kiln: Path, guidellm: Path, target: str, model: str, tmp_path: Path):
    """Warms the server up, then measures it kiln bench / GuideLLM / kiln bench (A-B-A): the
    mean of the two kiln runs cancels a drift of the machine's load over the three."""
    for name, seed in (("warmup", 1), ("kiln1", 2), ("guidellm", 3), ("kiln2", 4)):
        write_prompts(tmp_path / f"{name}.jsonl", seed)
    run_bench(kiln, ["--target", target, "--model", model, "--profile", "synchronous",
                     "--max-requests", "3", "--data", str(tmp_path / "warmup.jsonl"),
                     "--no-progress"])
    first = kiln_metrics(kiln, target, model, tmp_path / "kiln1.jsonl", tmp_path / "kiln1.json")
    theirs = guidellm_metrics(guidellm, target, model, tmp_path / "guidellm.jsonl",
                              tmp_path / "guidellm.json")
    second = kiln_metrics(kiln, target, model, tmp_path / "kiln2.jsonl", tmp_path / "kiln2.json")
    ours = {key: (first[key] + second[key]) / 2 for key in first}
    return ours, theirs


def assert_agree(kiln: dict, guide: dict, tolerance: float = TOLERANCE) -> None:
    for key in ("ttft", "itl", "tps"):
        assert kiln[key] == pytest.approx(guide[key], rel=tolerance), (
            f"{key}: kiln bench {kiln[key]:.2f} vs guidellm {guide[key]:.2f} "
            f"(kiln {kiln}, guidellm {guide})")


def test_agrees_with_guidellm_on_its_mock_server(tmp_path):
    kiln = kiln_binary()
    guidellm = guidellm_binary()
    port = free_port()
    # Latencies large against scheduling noise of a busy machine.
    mock = subprocess.Popen(
        [str(guidellm), "mock-server", "--port", str(port), "--ttft-ms", "200", "--itl-ms", "40",
         "--output-tokens", str(OUTPUT_TOKENS)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        target = f"http://127.0.0.1:{port}"
        wait_http(target + "/v1/models", 240, mock)
        ours, theirs = measure_both(kiln, guidellm, target, "mock", tmp_path)
        assert_agree(ours, theirs)
        assert ours["ttft"] >= 200 and ours["itl"] >= 39
    finally:
        stop(mock)


def test_agrees_with_guidellm_on_kiln_serve(tmp_path):
    kiln = kiln_binary()
    guidellm = guidellm_binary()
    if subprocess.run([str(kiln), "serve", "--help"], capture_output=True).returncode != 0:
        pytest.skip("kiln serve is not implemented yet")
    port = free_port()
    extra = shlex.split(os.environ.get("KILN_SERVE_ARGS", ""))
    server = subprocess.Popen([str(kiln), "serve", "--port", str(port), "--hostname", "127.0.0.1",
                               *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        target = f"http://127.0.0.1:{port}"
        try:
            wait_http(target + "/health", 300, server)
        except RuntimeError as e:
            pytest.skip(f"kiln serve did not start: {e}: {server.stderr.read().decode()[-2000:]}")
        with urllib.request.urlopen(target + "/v1/models", timeout=10) as r:
            model = json.loads(r.read())["data"][0]["id"]
        ours, theirs = measure_both(kiln, guidellm, target, model, tmp_path)
        assert_agree(ours, theirs)
    finally:
        stop(server)
