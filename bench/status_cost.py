"""The cost of GET /v1/status (kiln top's poll) on a running `kiln serve`, against /health and
/metrics: the mean loopback round trip on one keep-alive connection, and the server's own CPU
time per call (utime + stime of its process from /proc/PID/stat, around N calls).

    python bench/status_cost.py --pid PID --port PORT [--calls 5000]
"""

from __future__ import annotations

import argparse
import http.client
import os
import time


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(pid: int, port: int, path: str, calls: int) -> tuple[float, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.request("GET", path)
    conn.getresponse().read()  # connect outside the timing
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    for _ in range(calls):
        conn.request("GET", path)
        conn.getresponse().read()
    t1, cpu1 = time.perf_counter(), cpu_seconds(pid)
    return (t1 - t0) / calls, (cpu1 - cpu0) / calls


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pid", type=int, required=True, help="the kiln serve process")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--calls", type=int, default=5000)
    a = p.parse_args()
    for path in ["/health", "/v1/status", "/metrics"] * 2:
        rt, cpu = measure(a.pid, a.port, path, a.calls)
        print(f"{path:12s} round trip {rt * 1e6:7.1f} us   server CPU {cpu * 1e6:7.1f} us/call")


if __name__ == "__main__":
    main()
