"""deploy/nginx on the real nginx (Debian 12's nginx 1.22) in front of three `kiln serve`
replicas on loopback (every server of kiln-upstream.conf): streams pass unbuffered, every
replica gets requests, the body limit is kiln's, a draining replica's 503s are retried on the
others, and replicas killed with SIGKILL are skipped (passive health, proxy_next_upstream).
test_clients.py runs every client through the same configuration too (its [nginx] tests).

The tests of this module share one deployment and run in file order: the last two drain one
replica and kill the other two."""

from __future__ import annotations

import json
import signal
import time

from conftest import NGINX_DIR, metric, render_nginx_conf, require_module

STREAM_BODY = {"inputs": "Once upon a time",  # greedy: 64 tokens, no early EOS
               "parameters": {"max_new_tokens": 64}}


def post(url: str, path: str, body: dict, **kw):
    requests = require_module("requests")
    return requests.post(url + path, json=body, timeout=kw.pop("timeout", 60), **kw)


def generate(url: str, text: str):
    return post(url, "/generate", {"inputs": text, "parameters": {"max_new_tokens": 2}})


def request_count(replica) -> float:
    requests = require_module("requests")
    return metric(requests.get(replica.url + "/metrics", timeout=10).text, "tgi_request_count")


def sse_arrivals(url: str) -> tuple[list[float], list[dict]]:
    """POSTs STREAM_BODY to /generate_stream; returns when each data frame arrived (seconds
    after the request was sent) and the frames."""
    requests = require_module("requests")
    times, frames = [], []
    start = time.perf_counter()
    with requests.post(url + "/generate_stream", json=STREAM_BODY, stream=True,
                       timeout=60) as r:
        assert r.status_code == 200, r.text
        assert r.headers["Content-Type"].startswith("text/event-stream")
        # chunk_size=None: each line as soon as its chunk arrives, no read-ahead.
        for line in r.iter_lines(chunk_size=None):
            if line.startswith(b"data:"):
                times.append(time.perf_counter() - start)
                frames.append(json.loads(line[5:]))
    return times, frames


def test_rendered_config_differs_only_in_ports(tmp_path):
    """What the fixtures run is the shipped configuration: only listen/server ports change."""
    render_nginx_conf(tmp_path, 18080, [13001, 13002])
    for name in ("nginx.conf", "kiln.conf", "kiln-upstream.conf"):
        shipped = (NGINX_DIR / name).read_text().splitlines()
        rendered = (tmp_path / name).read_text().splitlines()
        assert len(shipped) == len(rendered), name
        for a, b in zip(shipped, rendered):
            ok = a == b or (a.strip() == "listen 8080;" and b.strip() == "listen 127.0.0.1:18080;") \
                or (a.startswith("server 127.0.0.1:300") and
                    (b == "server 127.0.0.1:1" + a[len("server 127.0.0.1:"):] or
                     b == "# (left out by the test) " + a))
            assert ok, f"{name}: {a!r} -> {b!r}"
    upstream = (tmp_path / "kiln-upstream.conf").read_text()
    assert "\nserver 127.0.0.1:13002 " in upstream and "\n# (left out by the test) server " in upstream


def test_stream_is_not_buffered(nginx_deployment):
    times, frames = sse_arrivals(nginx_deployment.url)
    direct_times, direct_frames = sse_arrivals(nginx_deployment.replicas[0].url)
    print(f"\nfirst / last of {len(times)} frames: through nginx {times[0]:.3f} / "
          f"{times[-1]:.3f} s, direct {direct_times[0]:.3f} / {direct_times[-1]:.3f} s")
    assert len(frames) >= 16, "the stream ended too early to tell"
    assert frames[-1]["generated_text"] is not None
    # Same greedy tokens as from a replica directly: nginx passes the frames through as they are.
    assert [f["token"]["text"] for f in frames] == [f["token"]["text"] for f in direct_frames]
    # Buffered, the frames arrive together at the end (proxy_buffering on with gzip did exactly
    # that); unbuffered, the first arrives one prefill after the request, the rest one decode
    # step apart.
    assert times[0] < 0.5 * times[-1], times
    assert len({round(t, 3) for t in times}) > len(times) // 2, times


def test_every_replica_gets_requests(nginx_deployment):
    d = nginx_deployment
    before = [request_count(r) for r in d.replicas]
    n = 3 * len(d.replicas)
    for i in range(n):
        r = generate(d.url, f"Request {i}:")
        assert r.status_code == 200, r.text
    deltas = [request_count(r) - b for r, b in zip(d.replicas, before)]
    assert sum(deltas) == n, deltas
    assert all(x >= 1 for x in deltas), deltas  # least_conn: ties go round robin


def test_body_limit_is_kiln_payload_limit(nginx_deployment):
    requests = require_module("requests")
    d = nginx_deployment
    body = json.dumps({"inputs": "Hi", "parameters": {"max_new_tokens": 1}})
    limit = 2_000_000  # kiln serve --payload-limit's default; kiln.conf's client_max_body_size
    at_limit = (body[:-1] + " " * (limit - len(body)) + "}").encode()  # padded with JSON spaces
    headers = {"Content-Type": "application/json"}
    r = requests.post(d.url + "/generate", data=at_limit, headers=headers, timeout=60)
    assert r.status_code == 200, r.text  # passed nginx, and kiln took it
    over = at_limit + b" "
    r = requests.post(d.url + "/generate", data=over, headers=headers, timeout=60)
    assert r.status_code == 413, r.text
    assert r.headers["Server"].startswith("nginx")  # refused before any replica saw it
    assert r.json()["error_type"] == "payload_too_large"  # the body kiln's own 413 has
    r = requests.post(d.replicas[0].url + "/generate", data=over, headers=headers, timeout=60)
    assert r.status_code == 413, r.text
    assert r.json()["error_type"] == "payload_too_large"


def test_draining_replica_is_retried_elsewhere(nginx_deployment):
    """SIGTERM: the replica answers 503 to new requests while it finishes the ones in flight;
    nginx (proxy_next_upstream http_503) sends those to the other replicas."""
    requests = require_module("requests")
    d = nginx_deployment
    draining = d.replicas[2]
    # A long request in flight on it (directly, so nginx does not avoid it), then SIGTERM.
    stream = requests.post(draining.url + "/v1/completions", stream=True, timeout=60, json={
        "model": "m", "prompt": "Once upon a time", "max_tokens": 240, "ignore_eos": True,
        "stream": True})
    lines = stream.iter_lines(chunk_size=None)
    assert next(line for line in lines if line.startswith(b"data:"))
    draining.proc.send_signal(signal.SIGTERM)
    deadline = time.time() + 10
    while requests.get(draining.url + "/health", timeout=10).status_code != 503:
        assert time.time() < deadline, "no 503 from /health after SIGTERM"
        time.sleep(0.02)
    for i in range(3 * len(d.replicas)):
        r = generate(d.url, f"While one drains {i}:")
        assert r.status_code == 200, f"{r.status_code} {r.text}\n{d.logs()}"
    assert draining.alive(), "the drain ended before the requests were sent: nothing tested"
    # The draining replica did get requests from nginx, and they went on to another replica.
    log = d.access_log.read_text()
    retried = [line for line in log.splitlines()
               if f"upstream 127.0.0.1:{draining.port}, " in line and " 503, 200 " in line]
    assert retried, log[-3000:]
    # The request in flight finishes, then the replica exits 0 by itself.
    rest = [line for line in lines if line.startswith(b"data:")]
    assert rest[-1] == b"data: [DONE]"
    assert draining.proc.wait(30) == 0


def test_killed_replicas_are_skipped(nginx_deployment):
    """Last: kills the two replicas the drain left."""
    requests = require_module("requests")
    d = nginx_deployment
    dead, survivor = d.replicas[0], d.replicas[1]
    d.kill_replica(0)
    before = request_count(survivor)
    for i in range(6):
        r = generate(d.url, f"After the kill {i}:")
        assert r.status_code == 200, f"{r.status_code} {r.text}\n{d.logs()}"
    _, frames = sse_arrivals(d.url)
    assert frames[-1]["generated_text"] is not None
    assert requests.get(d.url + "/health", timeout=10).status_code == 200
    assert request_count(survivor) - before == 7  # every one of them
    # nginx did try the dead replica (and went on to the survivor): its port is in the errors.
    errors = [line for line in d.error_log.read_text().splitlines() if "[error]" in line]
    assert any(f"127.0.0.1:{dead.port}" in line for line in errors), d.logs()

    # None left: nginx's own 502, in TGI's JSON error shape.
    d.kill_replica(1)
    for r in (requests.post(d.url + "/generate", json={"inputs": "x"}, timeout=30),
              requests.get(d.url + "/health", timeout=30)):
        assert r.status_code == 502, r.text
        assert r.headers["Content-Type"].startswith("application/json")
        assert r.json()["error_type"] == "unavailable"
