#!/usr/bin/env bash
# Configures and builds Kiln (Release, Ninja) in build/ (or $KILN_BUILD_DIR).
#   bash scripts/build.sh [extra cmake -D options]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD="${KILN_BUILD_DIR:-build}"
JOBS="${KILN_JOBS:-$(nproc)}"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$BUILD" -j "$JOBS"
