"""The deploy/ files that no test here can run whole (Docker, Kubernetes): their structure,
their agreement with each other and with `kiln serve`'s defaults, the Kubernetes manifests
against the API schemas (kubernetes-validate, offline), and the image's health check script
against a real `kiln serve`. Docker itself is never required: `docker compose config` runs
only where a docker CLI with the compose plugin works."""

from __future__ import annotations

import copy
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, require_module, unavailable

DEPLOY = REPO / "deploy"
COMPOSE = DEPLOY / "docker" / "compose.yaml"
DOCKERFILE = DEPLOY / "docker" / "Dockerfile"
HEALTHCHECK = DEPLOY / "docker" / "kiln-healthcheck"
NGINX = DEPLOY / "nginx"
K8S = DEPLOY / "k8s"
# Oldest Kubernetes the manifests claim (autoscaling/v2 and startupProbe are older); the newest
# that kubernetes-validate ships is checked too.
K8S_OLDEST = "1.29.0"

# --------------------------------------------------------------------------- helpers


def yaml_docs(path: Path) -> list[dict]:
    yaml = require_module("yaml")
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def compose() -> dict:
    return yaml_docs(COMPOSE)[0]


def kiln_services(c: dict) -> dict[str, dict]:
    """The services that run the kiln image (built from deploy/docker/Dockerfile)."""
    return {name: s for name, s in c["services"].items()
            if str(s.get("build", {}).get("dockerfile", "")).endswith("deploy/docker/Dockerfile")}


def cpus(spec: str) -> set[int]:
    """A cpuset list ("0-3,6") as a set of core numbers."""
    out: set[int] = set()
    for part in str(spec).split(","):
        lo, _, hi = part.strip().partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def seconds(duration: str) -> float:
    """A compose duration ("1m30s", "100s") in seconds."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, duration
    return sum(float(n) * units[u] for n, u in parts)


def nginx_directives(text: str, name: str) -> list[str]:
    """Arguments of every `name ...;` directive line (comments dropped)."""
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith(name + " ") and line.endswith(";"):
            out.append(line[len(name) + 1:-1].strip())
    return out


def upstream_servers(path: Path) -> dict[str, str]:
    """host:port -> parameters of the `server` lines of an upstream include."""
    servers = {}
    for args in nginx_directives(path.read_text(), "server"):
        address, _, params = args.partition(" ")
        servers[address] = params.strip()
    return servers


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out, buf = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        if line.lstrip().startswith("#") or (not buf and not line.strip()):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        ins, _, args = (buf + line).strip().partition(" ")
        out.append((ins.upper(), " ".join(args.split())))
        buf = ""
    return out


def apt_installs(run_args: str) -> list[str]:
    """The packages of the `apt-get install` in a RUN line."""
    cmd = run_args.split("apt-get install", 1)[1].split("&&", 1)[0]
    return [w for w in cmd.split() if not w.startswith("-")]


def linked_libraries(exe: Path) -> list[str]:
    """The shared libraries `exe` loads (ldd's resolved paths)."""
    if shutil.which("ldd") is None or shutil.which("dpkg") is None:
        unavailable("ldd or dpkg missing")
    return re.findall(r"=> (/\S+)", subprocess.run(["ldd", str(exe)], capture_output=True,
                                                   text=True, check=True).stdout)


def setup_apt_packages() -> set[str]:
    text = (REPO / "scripts" / "setup.sh").read_text()
    block = re.search(r"^APT_PACKAGES=\((.*?)^\)", text, re.M | re.S).group(1)
    return {w for line in block.splitlines() for w in line.split("#", 1)[0].split()}


def kiln_serve_defaults(exe: Path) -> dict[str, str]:
    """`kiln serve --help`'s defaults, e.g. {"--payload-limit": "2000000", ...}."""
    text = subprocess.run([str(exe), "serve", "--help"], capture_output=True, text=True,
                          timeout=30, check=True).stdout
    return dict(re.findall(r"(--[a-z-]+) [A-Z]+=(\S+)", text))


# --------------------------------------------------------------------------- compose


def test_compose_replicas_have_disjoint_cpusets_and_healthchecks():
    c = compose()
    kiln = kiln_services(c)
    assert len(kiln) >= 2, list(c["services"])
    seen: dict[int, str] = {}
    for name, s in kiln.items():
        assert "cpuset" in s, f"{name}: no cpuset"
        for core in cpus(s["cpuset"]):
            assert core not in seen, f"{name} and {seen[core]} share core {core}"
            seen[core] = name
        check = s["healthcheck"]
        assert check["test"][0] in ("CMD", "CMD-SHELL") and "kiln-healthcheck" in check["test"]
        assert seconds(check["start_period"]) >= 30  # model load
        assert s["environment"]["MODEL_ID"].startswith("/models/")
        assert any(v.endswith(":/models:ro") for v in s["volumes"]), s["volumes"]
        # One model cache for all replicas: the model is exported once.
        assert "kiln-cache:/cache" in s["volumes"] and "kiln-cache" in c["volumes"]
        # kiln drains up to 90 s (-g) after SIGTERM; docker must not SIGKILL it before.
        assert seconds(s["stop_grace_period"]) > 90
        build = s["build"]
        assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == \
            DOCKERFILE.resolve()
        assert DOCKERFILE.is_file()


def test_compose_nginx_fronts_exactly_the_replicas():
    c = compose()
    kiln = kiln_services(c)
    nginx = c["services"]["nginx"]
    assert set(nginx["depends_on"]) == set(kiln)
    for name in kiln:
        assert nginx["depends_on"][name]["condition"] == "service_healthy", name

    # The mounted files: kiln.conf as a conf.d server, the compose upstream list where
    # kiln.conf's include finds it (relative names resolve against /etc/nginx/).
    mounts = {}
    for v in nginx["volumes"]:
        src, dst, *mode = v.split(":")
        assert mode == ["ro"], v
        mounts[(COMPOSE.parent / src).resolve()] = dst
    kiln_conf_text = (NGINX / "kiln.conf").read_text()
    [include] = nginx_directives(kiln_conf_text, "include")
    assert re.fullmatch(r"/etc/nginx/conf\.d/[^/]+\.conf", mounts[(NGINX / "kiln.conf").resolve()])
    upstream_file = (NGINX / "kiln-upstream-compose.conf").resolve()
    assert mounts[upstream_file] == f"/etc/nginx/{include}"

    servers = upstream_servers(upstream_file)
    assert {a.split(":")[0] for a in servers} == set(kiln), servers
    for address in servers:
        name, port = address.split(":")
        assert port == str(kiln[name]["environment"]["PORT"]), address
    # Same passive-health parameters as the loopback list the nginx tests run.
    assert set(servers.values()) == set(upstream_servers(NGINX / "kiln-upstream.conf").values())

    # The published port is the one kiln.conf listens on.
    [listen] = nginx_directives(kiln_conf_text, "listen")
    assert listen in [str(p).split(":")[-1] for p in nginx["ports"]], (listen, nginx["ports"])


def test_compose_config_with_docker_if_available(tmp_path):
    """`docker compose config -q` (the compose plugin's own validation), where it works."""
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "compose", "version"], capture_output=True,
                                        timeout=30).returncode != 0:
        pytest.skip("no docker CLI with the compose plugin (not required)")
    env = dict(os.environ, KILN_MODEL_DIR=str(tmp_path))
    r = subprocess.run([docker, "compose", "-f", str(COMPOSE), "config", "-q"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------------- Dockerfile


def test_dockerfile_stages_and_runtime_settings():
    ins = dockerfile_instructions()
    froms = [a for i, a in ins if i == "FROM"]
    assert froms == ["debian:12 AS build", "debian:12-slim"], froms
    runtime = ins[[i for i, _ in ins].index("FROM", 1):]
    get = lambda name: [a for i, a in runtime if i == name]  # noqa: E731
    assert get("USER") and get("USER")[-1].split(":")[0] not in ("root", "0")
    assert get("VOLUME") == ['["/models", "/cache"]']
    entry = get("ENTRYPOINT")[-1]
    assert entry.startswith('["kiln", "serve"') and '"--hostname", "0.0.0.0"' in entry
    env = dict(re.findall(r"(\w+)=(\S+)", " ".join(get("ENV"))))
    assert env["MODEL_ID"].startswith("/models/")
    # The model cache is a volume the image's user can write (the root filesystem may be
    # read-only, as the Kubernetes manifest makes it), and compose shares it between replicas.
    assert env["KILN_CACHE"] == "/cache"
    assert any("chown 10001:10001 /cache" in a for i, a in runtime if i == "RUN")
    assert get("EXPOSE") == [env["PORT"]]
    assert get("HEALTHCHECK") and "kiln-healthcheck" in get("HEALTHCHECK")[-1]
    build_runs = " ".join(a for i, a in ins[:len(ins) - len(runtime)] if i == "RUN")
    for flag in ("-G Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DKILN_BUILD_TESTS=OFF",
                 "-DKILN_BUILD_BENCH=OFF"):
        assert flag in build_runs, flag
    assert os.access(HEALTHCHECK, os.X_OK)


def test_dockerfile_build_packages_are_setup_sh_packages():
    """The build stage installs a subset of what scripts/setup.sh installs (which the CI
    build uses), so the image builds with the packages the project is tested with."""
    ins = dockerfile_instructions()
    runs = [a for i, a in ins[:[i for i, _ in ins].index("FROM", 1)] if i == "RUN"]
    packages = [p for r in runs if "apt-get install" in r for p in apt_installs(r)]
    assert packages and set(packages) <= setup_apt_packages(), \
        set(packages) - setup_apt_packages()


def test_dockerignore_lets_in_what_the_dockerfile_copies():
    rules = [r.strip() for r in (REPO / ".dockerignore").read_text().splitlines()
             if r.strip() and not r.startswith("#")]
    assert rules[0] == "*", "expected an allow-list (`*`, then `!path` lines)"
    allowed = {r[1:].rstrip("/") for r in rules[1:] if r.startswith("!")}
    for i, args in dockerfile_instructions():
        if i == "COPY" and not args.startswith("--from"):
            *sources, _ = shlex.split(args)
            for s in sources:
                assert s.rstrip("/") in allowed, f"COPY {s}: excluded by .dockerignore"
                assert (REPO / s).exists(), s


def test_runtime_packages_cover_the_binarys_libraries(kiln_paths):
    """Every shared library `kiln` links comes from a package the runtime stage installs or
    one that debian:12-slim has (libc6, libgcc-s1)."""
    libs = linked_libraries(kiln_paths[0])
    ins = dockerfile_instructions()
    runtime = ins[[i for i, _ in ins].index("FROM", 1):]
    installed = {p for i, a in runtime if i == "RUN" and "apt-get install" in a
                 for p in apt_installs(a)} | {"libc6", "libgcc-s1"}
    # dpkg knows each file by the path its package ships it at: /usr/lib or /lib (usrmerge).
    paths = sorted({p for lib in libs for p in (lib, os.path.realpath(lib))})
    owners = subprocess.run(["dpkg", "-S", *paths], capture_output=True, text=True).stdout
    owner = {line.split(": ", 1)[1]: line.split(":")[0] for line in owners.splitlines()}
    for lib in libs:
        package = owner.get(lib) or owner.get(os.path.realpath(lib))
        assert package, f"{lib}: no Debian package owns it"
        assert package in installed, f"{lib} is in {package}, which the image lacks"


def test_build_stage_has_each_linked_librarys_dev_package(kiln_paths):
    """The build stage installs the development package of every library `kiln` links: the
    package that ships its unversioned `libX.so` (the link-time name), e.g. libncurses-dev
    for libncursesw.so.6. The C and C++ runtimes come with build-essential."""
    libs = linked_libraries(kiln_paths[0])
    ins = dockerfile_instructions()
    build = ins[:[i for i, _ in ins].index("FROM", 1)]
    installed = {p for i, a in build if i == "RUN" and "apt-get install" in a
                 for p in apt_installs(a)}
    runtimes = ("libc.so", "libm.so", "libgcc_s.so", "libstdc++.so", "ld-linux", "libmvec.so")
    for lib in libs:
        name = os.path.basename(lib)
        if name.startswith(runtimes):
            continue
        link_name = name.split(".so", 1)[0] + ".so"
        found = subprocess.run(["dpkg", "-S", f"*/{link_name}"], capture_output=True,
                               text=True).stdout.splitlines()
        dev = {line.split(":")[0] for line in found if line.endswith("/" + link_name)}
        assert dev, f"{lib}: no installed package ships {link_name}"
        assert dev & installed, f"{lib}: the build stage lacks {sorted(dev)} ({link_name})"


def test_healthcheck_script_against_kiln_serve(start_server):
    bash = shutil.which("bash")
    server = start_server("--kv-cache-memory", "0.25")
    env = dict(os.environ, PORT=str(server.port))
    assert subprocess.run([bash, str(HEALTHCHECK)], env=env, timeout=30).returncode == 0
    server.stop()  # drained and gone: nothing listens there now
    r = subprocess.run([bash, str(HEALTHCHECK)], env=env, timeout=30, capture_output=True)
    assert r.returncode == 1 and not r.stderr, r.stderr


def test_deploy_settings_match_kiln_serve_defaults(kiln_paths):
    """The numbers the deploy files take from `kiln serve` are its defaults."""
    exe, _ = kiln_paths
    d = kiln_serve_defaults(exe)
    drain, payload = float(d["--graceful-termination-timeout"]), d["--payload-limit"]
    kiln_conf = (NGINX / "kiln.conf").read_text()
    assert nginx_directives(kiln_conf, "client_max_body_size") == [payload]
    # Upstream keep-alive connections close on nginx's side before kiln's 75 s idle timeout,
    # and streams' keep-alive comments come well within the read timeout.
    assert seconds(nginx_directives(kiln_conf, "keepalive_timeout")[0]) < 75
    read_timeout = seconds(nginx_directives(kiln_conf, "proxy_read_timeout")[0])
    assert read_timeout > 4 * float(d["--keep-alive-interval"])
    for s in kiln_services(compose()).values():
        assert seconds(s["stop_grace_period"]) > drain
    [deployment] = [x for x in yaml_docs(K8S / "deployment.yaml") if x["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    env = {e["name"]: e["value"] for e in pod["containers"][0].get("env", [])}
    drain = float(env.get("GRACEFUL_TERMINATION_TIMEOUT", drain))
    pre_stop = pod["containers"][0]["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[0] == "sleep"
    assert pod["terminationGracePeriodSeconds"] > drain + float(pre_stop[1])
    assert env["PORT"] == str(pod["containers"][0]["ports"][0]["containerPort"])
    assert d["--port"] == "3000" == str(kiln_services(compose())["kiln-1"]["environment"]["PORT"])


# --------------------------------------------------------------------------- Kubernetes


def k8s_resources() -> list[tuple[Path, dict]]:
    out = [(p, doc) for p in sorted(K8S.glob("*.yaml")) for doc in yaml_docs(p)]
    assert {doc["kind"] for _, doc in out} >= {"Deployment", "Service",
                                               "HorizontalPodAutoscaler"}
    return out


def test_k8s_manifests_validate_strictly():
    kv = require_module("kubernetes_validate")
    from kubernetes_validate.utils import latest_version
    versions = [K8S_OLDEST, latest_version()]
    for path, doc in k8s_resources():
        for version in versions:
            try:
                kv.validate(doc, version, strict=True)
            except kv.ValidationError as e:
                pytest.fail(f"{path.name} {doc['kind']} against {version}: {e.message} at "
                            f"{'/'.join(map(str, e.path))}", pytrace=False)
    # Strict means strict: a misspelt field fails.
    [deployment] = [d for _, d in k8s_resources() if d["kind"] == "Deployment"]
    bad = copy.deepcopy(deployment)
    bad["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["periodSecond"] = 5
    with pytest.raises(kv.ValidationError):
        kv.validate(bad, K8S_OLDEST, strict=True)


def test_k8s_manifests_agree():
    docs = {d["kind"]: d for _, d in k8s_resources()}
    deployment, service, hpa = (docs["Deployment"], docs["Service"],
                                docs["HorizontalPodAutoscaler"])
    template = deployment["spec"]["template"]
    labels = template["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]

    [container] = template["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for sp in service["spec"]["ports"]:
        assert sp["targetPort"] in ports or sp["targetPort"] in ports.values(), sp
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert get["path"] == "/health", probe
        assert get["port"] in ports or get["port"] in ports.values(), (probe, get)

    # Guaranteed QoS with whole cores: the static CPU manager's exclusive cores.
    res = container["resources"]
    assert res["requests"] == res["limits"], res
    assert set(res["requests"]) >= {"cpu", "memory"}
    assert re.fullmatch(r"[1-9]\d*", str(res["requests"]["cpu"])), res["requests"]["cpu"]

    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["models"]["mountPath"] == "/models" and mounts["models"]["readOnly"]
    assert any(v["name"] == "models" for v in template["spec"]["volumes"])
    # The model cache must be writable although the root filesystem is not.
    assert container["securityContext"]["readOnlyRootFilesystem"]
    assert mounts["model-cache"]["mountPath"] == "/cache" and not mounts["model-cache"].get(
        "readOnly")
    assert any(v["name"] == "model-cache" for v in template["spec"]["volumes"])
    args = container.get("args", [])
    assert args[args.index("--model-id") + 1].startswith("/models/")
    # The image's non-root user.
    uid = re.search(r"--uid (\d+)", DOCKERFILE.read_text()).group(1)
    assert str(template["spec"]["securityContext"]["runAsUser"]) == uid

    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"], target["apiVersion"]) == \
        ("Deployment", deployment["metadata"]["name"], deployment["apiVersion"])
    assert hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
