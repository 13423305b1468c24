"""`kiln launch`: replicas behind the router, under faults: a replica killed under streaming
load, a hung replica, SIGTERM, overload, client disconnects, and bad launch arguments, each
checked through the real binary and the process table."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time

import pytest
import requests

from conftest import free_port
from launch_tools import KilnLaunch, processes_with, sample

STREAM_BODY = {"prompt": "Tell me a story about a dragon", "max_tokens": 48, "ignore_eos": True,
               "stream": True}


@pytest.fixture
def launch(kiln_paths):
    """launch(*flags, replicas=2) -> KilnLaunch; stopped after the test, which checks that it
    exits 0 and that no replica outlives it."""
    launches: list[KilnLaunch] = []

    def start(*args: str, replicas: int = 2, **kw) -> KilnLaunch:
        la = KilnLaunch(*kiln_paths, [str(a) for a in args], replicas=replicas, **kw)
        launches.append(la)
        return la

    yield start
    for la in launches:
        code = la.stop()
        assert code == 0, f"kiln launch exited with {code}:\n{la.stderr()}"
        assert not processes_with(la.marker), processes_with(la.marker)


class StreamOutcome:
    def __init__(self):
        self.status = 0
        self.events = 0
        self.done = False
        self.error_event = None
        self.exception = None
        self.replica = None


def stream_once(url: str, max_tokens: int = 48) -> StreamOutcome:
    """One streamed completion, recorded: status, data events, [DONE] or an error event."""
    out = StreamOutcome()
    try:
        with requests.post(url + "/v1/completions", json={**STREAM_BODY, "max_tokens": max_tokens},
                           stream=True,
                           timeout=60) as r:
            out.status = r.status_code
            out.replica = r.headers.get("x-kiln-replica")
            for line in r.iter_lines():
                if not line.startswith(b"data: "):
                    continue
                payload = line[6:]
                if payload == b"[DONE]":
                    out.done = True
                    continue
                event = json.loads(payload)
                if "error" in event:
                    out.error_event = event["error"]
                else:
                    out.events += 1
    except requests.RequestException as e:
        out.exception = repr(e)
    return out


def wait_for(predicate, timeout: float, step: float = 0.05) -> float:
    """Seconds until predicate() held; fails after `timeout`."""
    start = time.time()
    last = None
    while time.time() - start < timeout:
        try:
            if predicate():
                return time.time() - start
        except (requests.RequestException, KeyError, ValueError) as e:
            last = e
        time.sleep(step)
    pytest.fail(f"condition not met within {timeout} s (last error: {last!r})", pytrace=False)


def test_kill9_one_replica_under_streaming_load(launch):
    la = launch("--max-concurrent-requests", "8", "--health-interval", "0.5")
    outcomes: list[StreamOutcome] = []
    lock = threading.Lock()
    stop = threading.Event()

    def client():
        while not stop.is_set():
            o = stream_once(la.url)
            with lock:
                outcomes.append(o)

    threads = [threading.Thread(target=client) for _ in range(8)]
    for t in threads:
        t.start()
    time.sleep(2.0)
    victim = la.replica(0)["pid"]
    os.kill(victim, signal.SIGKILL)
    killed_at = time.time()
    back = wait_for(lambda: la.replica(0)["state"] == "ready" and la.replica(0)["pid"] != victim,
                    timeout=20)
    time.sleep(2.0)  # load on the restarted replica too
    stop.set()
    for t in threads:
        t.join(60)

    assert len(outcomes) >= 16, len(outcomes)
    # No request failed before its first byte: those were re-dispatched.
    unstarted_failures = [vars(o) for o in outcomes if o.events == 0 and not o.done]
    assert not [vars(o) for o in outcomes if o.events == 0 and o.error_event is not None]
    assert not unstarted_failures, unstarted_failures[:5]
    assert all(o.status == 200 and o.exception is None for o in outcomes)
    # Every started stream completed, or ended with an error event: never a silent truncation.
    truncated = [vars(o) for o in outcomes if not o.done and o.error_event is None]
    assert not truncated, truncated[:5]
    for o in outcomes:
        assert o.error_event is None or "replica 0" in o.error_event["message"], vars(o)
    assert back < 10.0, f"replica 0 took {back:.1f} s to come back"
    text = la.metrics()
    assert sample(text, "kiln_router_replica_restarts_total", 'replica="0"') == 1
    affected = sample(text, "kiln_router_stream_errors_total") + \
        sample(text, "kiln_router_retries_total")
    assert affected >= 1, "the kill hit no request: the test did not test anything"
    assert sum(o.replica == "0" for o in outcomes if o.status == 200) > 0
    # Nothing left open: no request in the router, only this scrape's connection.
    wait_for(lambda: sample(la.metrics(), "kiln_router_requests_active") == 0, timeout=5)
    wait_for(lambda: sample(la.metrics(), "kiln_router_http_connections") <= 1, timeout=5)
    print(f"\nkill -9: {len(outcomes)} streams, "
          f"{sum(o.error_event is not None for o in outcomes)} ended with an error event, "
          f"retries {sample(text, 'kiln_router_retries_total'):.0f}, "
          f"replica back in {back:.2f} s (killed at +{killed_at - la.started:.1f} s)")


def test_hung_replica_leaves_rotation_and_comes_back(launch):
    la = launch("--health-interval", "0.5", "--health-timeout", "0.5",
                "--restart-unhealthy-after", "60")
    pid = la.replica(1)["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        out_after = wait_for(lambda: la.replica(1)["state"] == "unhealthy", timeout=5)
        # Within a probe interval plus its timeout (and the router's 100 ms tick).
        assert out_after < 0.5 + 0.5 + 0.5, out_after
        for _ in range(6):
            r = requests.post(la.url + "/generate", timeout=30,
                              json={"inputs": "Hello", "parameters": {"max_new_tokens": 4}})
            assert r.status_code == 200, r.text
            assert r.headers["x-kiln-replica"] == "0"
        assert requests.get(la.url + "/health", timeout=5).status_code == 200
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_for(lambda: la.replica(1)["state"] == "ready", timeout=5)
    assert la.replica(1)["pid"] == pid  # back as it was, not restarted


def test_hung_replica_is_killed_and_restarted(launch):
    la = launch("--health-interval", "0.3", "--health-timeout", "0.3",
                "--restart-unhealthy-after", "1")
    pid = la.replica(0)["pid"]
    os.kill(pid, signal.SIGSTOP)
    wait_for(lambda: la.replica(0)["state"] == "ready" and la.replica(0)["pid"] != pid,
             timeout=15)
    assert la.replica(0)["restarts"] == 1


def test_sigterm_drains_streams_then_stops_replicas(kiln_paths):
    la = KilnLaunch(*kiln_paths, [])
    result: list[StreamOutcome] = []
    t = threading.Thread(target=lambda: result.append(stream_once(la.url, max_tokens=400)))
    t.start()
    wait_for(lambda: sample(la.metrics(), "kiln_router_requests_active") >= 1, timeout=10,
             step=0.01)
    la.proc.send_signal(signal.SIGTERM)
    wait_for(lambda: requests.get(la.url + "/health", timeout=1).status_code == 503, timeout=5,
             step=0.01)
    refused = requests.post(la.url + "/generate", timeout=5,
                            json={"inputs": "x", "parameters": {"max_new_tokens": 2}})
    assert refused.status_code == 503
    assert refused.json()["error_type"] == "unavailable"
    t.join(60)
    assert result and result[0].done and result[0].error_event is None, vars(result[0])
    assert result[0].events > 300  # one event per token, some tokens share one
    assert la.proc.wait(60) == 0, la.stderr()
    assert not processes_with(la.marker)
    assert "exited with code 0" in la.stderr()


def test_overload_gets_tgi_429_and_the_queue_holds_the_rest(launch):
    # Each replica admits one request (no queue of its own): two run, the router holds none.
    la = launch("--max-concurrent-requests", "1", "--router-queue", "0")
    results: list[requests.Response] = []
    lock = threading.Lock()

    def post():
        r = requests.post(la.url + "/generate", timeout=60, json={
            "inputs": "Count", "parameters": {"max_new_tokens": 64}})
        with lock:
            results.append(r)

    threads = [threading.Thread(target=post) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    statuses = sorted(r.status_code for r in results)
    assert statuses.count(200) >= 2, statuses
    overloaded = [r for r in results if r.status_code == 429]
    assert overloaded, statuses
    assert overloaded[0].json() == {"error": "Model is overloaded", "error_type": "overloaded"}
    assert overloaded[0].headers.get("retry-after") == "1"
    assert sample(la.metrics(), "kiln_router_rejected_total") == len(overloaded)


def test_router_queue_holds_requests_until_a_replica_has_room(launch):
    la = launch("--max-concurrent-requests", "1", "--router-queue", "8")
    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(requests.post(
        la.url + "/generate", timeout=60,
        json={"inputs": "Count", "parameters": {"max_new_tokens": 16}}).status_code))
        for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == [200] * 6


@pytest.fixture(scope="module")
def shared_launch(kiln_paths):
    la = KilnLaunch(*kiln_paths, ["--prefix-affinity", "--prefix-affinity-chars", "64"])
    yield la
    assert la.stop() == 0, la.stderr()
    assert not processes_with(la.marker)


def test_info_and_metrics_name_every_replica(shared_launch):
    la = shared_launch
    info = la.info()
    assert info["replica_count"] == 2
    assert len(info["core_sets"]) == 2 and info["core_sets"][0] != info["core_sets"][1]
    assert info["max_total_tokens"] == 2048  # the replicas' own /info fields are there
    for i in range(4):
        assert requests.post(la.url + "/generate", timeout=30, json={
            "inputs": f"Question {i}: why?", "parameters": {"max_new_tokens": 2}}).ok
    text = la.metrics()
    for r in ("0", "1"):
        assert sample(text, "kiln_router_replica_up", f'replica="{r}"') == 1
        sample(text, "tgi_request_count", f'replica="{r}"')
        sample(text, "kiln_kv_cache_blocks_total", f'replica="{r}"')
    assert sum(sample(text, "tgi_request_count", f'replica="{r}"') for r in "01") >= 4
    assert text.count("# TYPE tgi_request_count counter") == 1


def test_prefix_affinity_keeps_a_prefix_on_one_replica(shared_launch):
    la = shared_launch
    system = "You are a terse assistant that answers in one word. " * 2
    seen = set()
    for i in range(6):
        r = requests.post(la.url + "/v1/chat/completions", timeout=30, json={
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": f"Question {i}?"}], "max_tokens": 2})
        assert r.ok, r.text
        seen.add(r.headers["x-kiln-replica"])
    assert len(seen) == 1, seen
    home = seen.pop()
    # The prefix cache on that replica did its work.
    assert sample(la.metrics(), "kiln_prefix_cache_hits_total", f'replica="{home}"') > 0


def test_client_disconnect_cancels_on_the_replica(shared_launch):
    la = shared_launch
    before = sample(la.metrics(), "kiln_router_client_cancels_total")
    s = socket.create_connection(("127.0.0.1", la.port), timeout=30)
    body = json.dumps({**STREAM_BODY, "max_tokens": 1000}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    got = b""
    while got.count(b"data: ") < 3:
        got += s.recv(4096)
    s.close()
    wait_for(lambda: sample(la.metrics(), "kiln_router_client_cancels_total") == before + 1,
             timeout=5)

    def replicas_idle():
        text = la.metrics()
        return all(sample(text, "kiln_requests_running", f'replica="{r}"') == 0 for r in "01")

    wait_for(replicas_idle, timeout=5)


def test_not_found_and_validation_errors_pass_through(shared_launch):
    la = shared_launch
    r = requests.post(la.url + "/generate", timeout=10,
                      json={"inputs": "x", "parameters": {"top_p": 1.0}})
    assert r.status_code == 422 and r.json()["error_type"] == "validation"
    assert requests.get(la.url + "/nope", timeout=10).status_code == 404
    r = requests.post(la.url + "/v1/chat/completions", timeout=10, data=b"{",
                      headers={"content-type": "application/json"})
    assert r.status_code == 400 and "error" in r.json()


def run_launch_expecting_failure(kiln_paths, *args: str, timeout: float = 60) -> str:
    exe, model = kiln_paths
    marker = f"kiln-bad-launch-{os.getpid()}-{time.time_ns()}"
    model_args = [] if "--model-id" in args else ["--model-id", str(model)]
    cmd = [str(exe), "launch", *model_args, "--hostname", "127.0.0.1",
           "--served-model-name", marker, "--kv-cache-memory", "0.25", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode != 0, done.stderr
    assert "kiln: error:" in done.stderr, done.stderr
    time.sleep(0.2)
    assert not processes_with(marker), processes_with(marker)
    return done.stderr


def test_bad_launches_fail_clearly_and_leave_no_child(kiln_paths):
    ncpu = len(os.sched_getaffinity(0))
    port = str(free_port())
    err = run_launch_expecting_failure(kiln_paths, "--replicas", str(ncpu + 1), "--port", port)
    assert f"--replicas {ncpu + 1} is more than the {ncpu} physical cores" in err
    err = run_launch_expecting_failure(kiln_paths, "--core-sets", "0,0-1", "--port", port)
    assert "core sets overlap" in err and "share CPU 0" in err
    err = run_launch_expecting_failure(kiln_paths, "--core-sets", "0,4095", "--port", port)
    assert "uses CPU 4095" in err
    err = run_launch_expecting_failure(kiln_paths, "--cores", "0", "--port", port)
    assert "use --core-sets or --cores-per-replica" in err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        err = run_launch_expecting_failure(kiln_paths, "--replicas", "1", "--port",
                                           str(taken.getsockname()[1]))
    assert "bind" in err or "in use" in err, err
    # The model fails to load in the replicas: the error names the replica and its own words.
    err = run_launch_expecting_failure(kiln_paths, "--replicas", "1", "--port", port,
                                       "--model-id", "/nonexistent/model.gguf")
    assert "replica 0" in err and "before it was ready" in err and "/nonexistent/model.gguf" in err
    # A flag kiln serve rejects: same.
    err = run_launch_expecting_failure(kiln_paths, "--replicas", "1", "--port", port,
                                       "--max-batch-size", "banana")
    assert "replica 0" in err and "max-batch-size" in err
