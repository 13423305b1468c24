#!/usr/bin/env bash
# Builds Kiln if needed and runs its main job on the default model (SmolLM2-135M-Instruct
# Q4_1, installed by scripts/setup.sh; MODEL_ID or --model-id picks another).
#   - `kiln serve` (TGI + OpenAI HTTP APIs, default http://127.0.0.1:3000); extra arguments
#     go to `kiln serve`, e.g. --port 8080 --hostname 0.0.0.0;
#   - with a binary that has no `serve` yet: `kiln generate` of one sample prompt (extra
#     arguments go to `kiln generate`).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BIN="${KILN_BUILD_DIR:-build}/kiln"

# The default model lives in the setup venv; let kiln find it from anywhere.
if [[ -z "${VIRTUAL_ENV:-}" && -d "${KILN_VENV:-$ROOT/.venv}" ]]; then
  export VIRTUAL_ENV="${KILN_VENV:-$ROOT/.venv}"
fi

bash scripts/build.sh

if "$BIN" serve --help >/dev/null 2>&1; then
  echo "kiln serve (Ctrl-C to stop)" >&2
  exec "$BIN" serve "$@"
fi
echo "kiln serve is not implemented yet; running kiln generate instead" >&2
exec "$BIN" generate --prompt "${KILN_PROMPT:-The three primary colors are}" --max-new-tokens 48 "$@"
