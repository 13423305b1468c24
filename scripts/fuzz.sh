#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz in build-fuzz/ (clang, ASan+UBSan) and runs each
# for KILN_FUZZ_SECONDS on a fresh copy of its seed corpus tests/fuzz/corpus/<target>/ (the
# repository's corpus is never written), with tests/fuzz/<target>.dict when there is one.
# Prints one line per target and exits non-zero if any target found a crash, leak, timeout,
# out-of-memory or broken invariant; the input that did it is kept under build-fuzz/artifacts/
# and its path printed, with the command that reproduces it.
#
#   scripts/fuzz.sh                                  # every target, 60 s each, 2 at a time
#   KILN_FUZZ_TARGETS=gguf KILN_FUZZ_SECONDS=300 scripts/fuzz.sh
#
# Environment: KILN_FUZZ_SECONDS (per target, default 60; 0 = only run the seeds once),
# KILN_FUZZ_TARGETS (names, separated by spaces or commas; default all), KILN_FUZZ_PARALLEL
# (targets at once, default 2), KILN_JOBS (build jobs, default 2), KILN_FUZZ_CXX / KILN_FUZZ_CC
# (default clang++-14 / clang-14).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
BUILD="$ROOT/build-fuzz"
SECONDS_PER_TARGET="${KILN_FUZZ_SECONDS:-60}"
PARALLEL="${KILN_FUZZ_PARALLEL:-2}"
JOBS="${KILN_JOBS:-2}"
ALL_TARGETS=(tokenizer_json template gguf gguf_vocab safetensors api_request http_request
  router_input kiln_artifact trace_context regex)
targets_arg="${KILN_FUZZ_TARGETS:-${ALL_TARGETS[*]}}"
read -r -a TARGETS <<<"${targets_arg//,/ }"

# Longest input per target: room for the larger seeds (a tokenizer.json, a GGUF header).
max_len() {
  case "$1" in
    tokenizer_json) echo 8192 ;;
    gguf | gguf_vocab) echo 16384 ;;
    kiln_artifact) echo 32768 ;;  # a header page, data pages and the manifest
    *) echo 4096 ;;
  esac
}

start=$SECONDS
echo "== fuzz: build ($BUILD)"
if ! cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
       "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g" \
       -DCMAKE_CXX_COMPILER="${KILN_FUZZ_CXX:-clang++-14}" \
       -DCMAKE_C_COMPILER="${KILN_FUZZ_CC:-clang-14}" \
       -DKILN_FUZZ=ON -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_BENCH=OFF \
       --no-warn-unused-cli >/dev/null ||
   ! cmake --build "$BUILD" --target kiln_fuzzers -j "$JOBS"; then
  echo "FAIL fuzz build"
  exit 1
fi
echo "== fuzz: built in $((SECONDS - start)) s; running ${#TARGETS[@]} targets," \
  "${SECONDS_PER_TARGET} s each, $PARALLEL at a time"

# Sanitizer reports go to the log; UB aborts (the build uses -fno-sanitize-recover=undefined).
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

# run_target NAME: one libFuzzer run; its log and exit status land in $BUILD/fuzz-logs/.
run_target() {
  local name="$1"
  local bin="$BUILD/tests/fuzz/${name}_fuzz"
  local corpus="$BUILD/fuzz-corpus/$name" artifacts="$BUILD/artifacts/$name/"
  local log="$BUILD/fuzz-logs/$name.log"
  rm -rf "$corpus" && mkdir -p "$corpus" "$artifacts"
  cp -r "$ROOT/tests/fuzz/corpus/$name/." "$corpus/"
  local args=(-timeout=10 -rss_limit_mb=2048 -max_len="$(max_len "$name")" -print_final_stats=1
              -artifact_prefix="$artifacts")
  [[ -f "$ROOT/tests/fuzz/$name.dict" ]] && args+=(-dict="$ROOT/tests/fuzz/$name.dict")
  if ((SECONDS_PER_TARGET > 0)); then
    args+=(-max_total_time="$SECONDS_PER_TARGET")
  else
    args+=(-runs=0)
  fi
  local t0=$SECONDS
  timeout --kill-after=10 $((SECONDS_PER_TARGET + 120)) "$bin" "${args[@]}" "$corpus" >"$log" 2>&1
  echo "$? $((SECONDS - t0))" >"$log.status"
}

# summarize NAME: prints the target's line (and, on a finding, the report's head); returns 1
# on a finding.
summarize() {
  local name="$1" log="$BUILD/fuzz-logs/$1.log"
  local rc secs
  read -r rc secs <"$log.status"
  local execs
  execs="$(grep -oE '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$')"
  [[ -z "$execs" ]] && execs="$(grep -oE '^#[0-9]+' "$log" | tail -n1 | tr -d '#')"
  if ((rc == 0)); then
    printf 'ok    %-15s %10s execs in %4s s\n' "$name" "${execs:-?}" "$secs"
    return 0
  fi
  local crash
  crash="$(grep -oE 'Test unit written to .*' "$log" | tail -n1 | sed 's/^Test unit written to //')"
  printf 'FAIL  %-15s %10s execs in %4s s (exit %s) %s\n' "$name" "${execs:-?}" "$secs" "$rc" \
    "${crash:-(no input saved; see $log)}"
  grep -m1 -E '^==[0-9]+== ?ERROR|FUZZ_CHECK failed|runtime error|ERROR: libFuzzer' "$log" |
    sed 's/^/      /'
  [[ -n "$crash" ]] && echo "      reproduce: $BUILD/tests/fuzz/${name}_fuzz $crash"
  echo "      log: $log"
  return 1
}

mkdir -p "$BUILD/fuzz-logs"
for name in "${TARGETS[@]}"; do
  if [[ ! -x "$BUILD/tests/fuzz/${name}_fuzz" ]]; then
    echo "FAIL  unknown fuzz target '$name' (have: ${ALL_TARGETS[*]})"
    exit 1
  fi
  rm -f "$BUILD/fuzz-logs/$name.log.status"
done

running=0
for name in "${TARGETS[@]}"; do
  if ((running >= PARALLEL)); then
    wait -n
    running=$((running - 1))
  fi
  run_target "$name" &
  running=$((running + 1))
done
wait

failed=0
for name in "${TARGETS[@]}"; do
  summarize "$name" || failed=1
done
echo "== fuzz: $((SECONDS - start)) s in all"
exit "$failed"
