"""`kiln top` and GET /v1/status end to end: the status document of a real `kiln serve`, its
cost, the live ncurses screen read back from a detached tmux pane while `kiln bench` loads the
server, a server that dies and comes back on the same port, and a target that is not Kiln.
"""

from __future__ import annotations

import http.client
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import SERVER_FLAGS, free_port, health_ok, stop_process, wait_until_ready

MODEL_NAME = "top-test-model"
FLAGS = [*SERVER_FLAGS, "--served-model-name", MODEL_NAME]


def serve_on(kiln_paths, port: int) -> subprocess.Popen:
    """A `kiln serve` on a given port (KilnServer always picks a fresh one; the recovery test
    needs the old one back)."""
    exe, model = kiln_paths
    log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"kiln-top-serve-{port}.log", "w")
    proc = subprocess.Popen([str(exe), "serve", "--model-id", str(model), "--hostname",
                             "127.0.0.1", "--port", str(port), "--cores",
                             os.environ.get("KILN_TEST_CORES", "0"), *FLAGS],
                            stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}"
    wait_until_ready(proc, lambda: health_ok(url), "kiln serve", lambda: "", 120, step=0.2)
    return proc


def get_status(port: int) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/v1/status")
    res = conn.getresponse()
    assert res.status == 200
    return json.loads(res.read())


def mean_round_trip(port: int, path: str, n: int) -> float:
    """Mean seconds of `n` GETs on one keep-alive connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path)
    conn.getresponse().read()  # connect outside the timing
    start = time.perf_counter()
    for _ in range(n):
        conn.request("GET", path)
        res = conn.getresponse()
        res.read()
        assert res.status == 200
    return (time.perf_counter() - start) / n


def test_status_fields_and_cost(start_server):
    server = start_server(*FLAGS)
    s = get_status(server.port)
    assert s["object"] == "kiln.status"
    assert s["model"] == MODEL_NAME
    assert s["version"] and s["uptime_s"] >= 0
    assert [c["id"] for c in s["cores"]] == [0]
    assert s["cores"][0]["cpu_seconds"] >= 0
    assert s["memory"]["rss_bytes"] > 0 and s["memory"]["weight_bytes"] > 0
    kv = s["kv_cache"]
    assert kv["blocks_total"] > 0 and kv["blocks_used"] + kv["blocks_free"] == kv["blocks_total"]
    assert "blocks_cached" in kv
    assert set(s["sequences"]) >= {"running", "waiting"}
    assert set(s["tokens"]) >= {"prompt", "generated"}
    assert set(s["requests"]) >= {"total", "status_4xx", "status_5xx", "status_429"}
    for name in ("ttft_s", "itl_s"):
        assert set(s["latency"][name]) >= {"p50", "p95", "count"}
    # The server-side cost is the status round trip less a /health one on the same connection
    # (same parsing, socket and client work); both are loopback keep-alive GETs.
    status = mean_round_trip(server.port, "/v1/status", 200)
    health = mean_round_trip(server.port, "/health", 200)
    print(f"/v1/status {status * 1e3:.3f} ms, /health {health * 1e3:.3f} ms per round trip")
    assert status - health < 1e-3, (status, health)
    assert status < 5e-3


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", f"kiln-top-test-{os.getpid()}", *args],
                          capture_output=True, text=True, timeout=10).stdout


def screen() -> str:
    return tmux("capture-pane", "-p", "-t", "top")


def wait_for_screen(pred, timeout: float, what: str) -> str:
    deadline = time.time() + timeout
    text = ""
    while time.time() < deadline:
        text = screen()
        if pred(text):
            return text
        time.sleep(0.25)
    pytest.fail(f"screen never showed {what}:\n{text}", pytrace=False)


def core0_utilization(text: str) -> float:
    m = re.search(r"core 0\s+\[[#.]+\]\s+([\d.]+)%", text)
    return float(m.group(1)) if m else -1.0


@pytest.fixture
def tmux_session():
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (scripts/setup.sh installs it)")
    yield
    tmux("kill-server")


def test_top_screen_load_outage_and_recovery(kiln_paths, tmux_session):
    exe, _ = kiln_paths
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = serve_on(kiln_paths, port)
    bench = None
    try:
        tmux("new-session", "-d", "-s", "top", "-x", "160", "-y", "48",
             f"{exe} top --target {url} --interval 0.5")
        wait_for_screen(lambda t: MODEL_NAME in t, 10, "the model name")
        # KEY_RESIZE: the help line moves to the new last row (pytest exports LINES=24 and
        # COLUMNS=80 to the pane: the terminal's own size must win).
        tmux("resize-window", "-t", "top", "-x", "100", "-y", "30")
        rows = int(tmux("display-message", "-p", "-t", "top", "#{pane_height}"))
        wait_for_screen(lambda t: t.rstrip("\n").split("\n")[-1].startswith("q quit")
                        and len(t.rstrip("\n").split("\n")) == rows, 5, "the resized layout")
        tmux("resize-window", "-t", "top", "-x", "160", "-y", "48")
        bench = subprocess.Popen([str(exe), "bench", "--target", url, "--profile", "concurrent",
                                  "--rate", "2", "--max-seconds", "8", "--data",
                                  "prompt_tokens=16,output_tokens=64", "--no-progress"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        busy = wait_for_screen(lambda t: core0_utilization(t) > 50, 15, "core 0 above 50%")
        # A number from the screen agrees with /v1/status: the KV pool's size.
        total = get_status(port)["kv_cache"]["blocks_total"]
        assert re.search(rf"/ {total} blocks used", busy), busy
        assert bench.wait(30) == 0

        server.kill()  # not a drain: the monitor must notice a dead server
        server.wait()
        down = wait_for_screen(lambda t: "unreachable" in t, 10, "unreachable")
        assert "q quit" in down  # still running, still drawing
        assert tmux("list-sessions")  # kiln top did not exit

        server = serve_on(kiln_paths, port)
        wait_for_screen(lambda t: "unreachable" not in t and re.search(r"\bup\b", t)
                        and MODEL_NAME in t, 10, "the server back up")
        tmux("send-keys", "-t", "top", "q")
        deadline = time.time() + 5
        while tmux("list-sessions") and time.time() < deadline:
            time.sleep(0.1)
        assert not tmux("list-sessions"), "q did not quit"
    finally:
        if bench is not None and bench.poll() is None:
            bench.kill()
        stop_process(server)


def test_once_plain_and_json(kiln_paths, start_server):
    exe, _ = kiln_paths
    server = start_server(*FLAGS)
    plain = subprocess.run([str(exe), "top", "--once", "--interval", "0.3", "--target",
                            server.url], capture_output=True, text=True, timeout=30)
    assert plain.returncode == 0, plain.stderr
    assert MODEL_NAME in plain.stdout and "core 0" in plain.stdout and "host:" in plain.stdout
    out = subprocess.run([str(exe), "top", "--once", "--json", "--interval", "0.3", "--target",
                          server.url, "--target", f"http://127.0.0.1:{free_port()}"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    up, down = report["targets"]
    assert up["state"] == "up" and up["status"]["model"] == MODEL_NAME
    assert up["rates"]["seconds"] > 0 and len(up["rates"]["core_utilization_pct"]) == 1
    assert down["state"] == "unreachable" and down["error"]


class _NotKiln(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<html>hello</html>" if self.path == "/" else b"no such page"
        self.send_response(200 if self.path == "/" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_not_a_kiln_server(kiln_paths):
    exe, _ = kiln_paths
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotKiln)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        out = subprocess.run([str(exe), "top", "--once", "--json", "--interval", "0.2",
                              "--target", url], capture_output=True, text=True, timeout=30)
        assert out.returncode == 1
        (target,) = json.loads(out.stdout)["targets"]
        assert target["state"] == "not kiln"
        assert "not a Kiln server" in target["error"]
    finally:
        httpd.shutdown()


def test_launch_router_status_has_every_replica(kiln_paths):
    """Through `kiln launch --api-key`: the router fetches each replica's status with the key
    the replicas were given, and kiln top shows one row per replica."""
    import requests
    from launch_tools import KilnLaunch
    exe, _ = kiln_paths
    auth = {"Authorization": "Bearer sek"}
    la = KilnLaunch(*kiln_paths, ["--api-key", "sek"], replicas=2, wait=False,
                    replica_flags=SERVER_FLAGS)
    try:
        wait_until_ready(la.proc, lambda: all(
            r["state"] == "ready"
            for r in requests.get(la.url + "/info", headers=auth, timeout=5).json()["replicas"]),
            "kiln launch", la.stderr, 120)
        assert requests.get(la.url + "/v1/status", timeout=5).status_code == 401
        s = requests.get(la.url + "/v1/status", headers=auth, timeout=5).json()
        assert s["object"] == "kiln.router_status"
        assert [r["index"] for r in s["replicas"]] == [0, 1]
        for r in s["replicas"]:
            assert r["state"] == "ready" and r["port"] > 0
            assert r["object"] == "kiln.status" and r["kv_cache"]["blocks_total"] > 0
        out = subprocess.run([str(exe), "top", "--once", "--json", "--interval", "0.3",
                              "--target", la.url, "--api-key", "sek"],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        rows = json.loads(out.stdout)["targets"]
        assert [t["url"] for t in rows] == [f"{la.url} #0", f"{la.url} #1"]
        assert all(t["state"] == "up" for t in rows), rows
    finally:
        code = la.stop()
    assert code == 0, la.stderr()
