#!/usr/bin/env bash
# Builds Kiln and runs every test suite; exits non-zero if anything failed.
#   1. Release build in build/, all ctest tests
#   2. ASan+UBSan build (-O1 -g1) in build-asan/, the unit tests (ctest -L unit) and the
#      hostile-input integration tests (requests, damaged artifacts) against the sanitized
#      `kiln serve`
#   3. fuzz: scripts/fuzz.sh, every libFuzzer target of tests/fuzz for KILN_FUZZ_SECONDS (30)
#      in build-fuzz/ (clang-14)
#   4. golden tests (pytest tests/golden) against build/kiln, with the venv of scripts/setup.sh
#   5. integration tests (pytest tests/integration): the real `kiln serve` and `kiln bench`
#      driven by real clients over loopback
# Run scripts/setup.sh first. Environment: KILN_VENV (default <repo>/.venv), KILN_JOBS
# (default 2), KILN_SKIP_ASAN=1 (skip step 2, for quick local runs), KILN_SKIP_FUZZ=1 (skip
# step 3).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
VENV="${KILN_VENV:-$ROOT/.venv}"
JOBS="${KILN_JOBS:-2}"
LOGS="$(mktemp -d)"
trap 'rm -rf "$LOGS"' EXIT

failed=0
summary=()
# Each summary line carries the seconds since its stage's banner, so a slow stage shows.
stage_start=$SECONDS
note() {
  summary+=("$(printf '%-5s %s  [%d s]' "$1" "$2" $((SECONDS - stage_start)))")
  [[ "$1" == ok ]] || failed=1
}
banner() { printf '\n== test: %s\n' "$*"; stage_start=$SECONDS; }
ctest_line() { grep -E 'tests passed|No tests were found' "$1" | tail -n1; }

# Sanitizer behaviour for the ASan build (also used while gtest lists tests at build time).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# run_pytest NAME DIR [PYTEST_ARGS...]: runs one pytest suite against $PYTEST_BUILD/kiln
# (default build/); STRICT: a missing kiln binary, model file or Python package fails the test
# instead of skipping it.
pytest_lines=()
run_pytest() {
  local name="$1" dir="$2"
  shift 2
  banner "$name tests (pytest $dir, ${PYTEST_BUILD:-build}/kiln)"
  if [[ ! -x "$VENV/bin/python" ]]; then
    note FAIL "$name pytest: no venv at $VENV (run scripts/setup.sh)"
    return
  fi
  KILN_BUILD_DIR="$ROOT/${PYTEST_BUILD:-build}" KILN_GOLDEN_STRICT=1 KILN_INTEGRATION_STRICT=1 \
    "$VENV/bin/python" -m pytest "$dir" "$@" -q -rs -p no:cacheprovider 2>&1 | tee "$LOGS/$name.log"
  local rc=${PIPESTATUS[0]}
  local line
  line="$(grep -E '^=* ?[0-9]+ (passed|failed|skipped|error|deselected)|no tests ran' "$LOGS/$name.log" | tail -n1)"
  pytest_lines+=("$name: $line")
  # pytest exits 5 when it collected no test: count that as a failure too.
  if ((rc == 0)); then note ok "$name pytest"; else note FAIL "$name pytest (exit $rc)"; fi
}

# ---------------------------------------------------------------- 1. Release
banner "release build (build/)"
release_built=0
if cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release &&
   cmake --build build -j "$JOBS"; then
  release_built=1
  note ok "release build"
else
  note FAIL "release build"
fi

if ((release_built)); then
  banner "release ctest"
  ctest --test-dir build --output-on-failure -j "$JOBS" --no-tests=error --timeout 900 \
    2>&1 | tee "$LOGS/ctest-release.log"
  rc=${PIPESTATUS[0]}
  line="$(ctest_line "$LOGS/ctest-release.log")"
  if ((rc == 0)); then note ok "release ctest: $line"; else note FAIL "release ctest (exit $rc): $line"; fi
else
  note FAIL "release ctest: not run (build failed)"
fi

# ---------------------------------------------------------------- 2. ASan + UBSan
if [[ "${KILN_SKIP_ASAN:-0}" == 1 ]]; then
  note skip "asan build + unit tests (KILN_SKIP_ASAN=1)"
else
  banner "asan+ubsan build (build-asan/)"
  # -O1 -g1 (line tables): a third of -O2 -g's compile time on the kernels (matmul.cc: 53 s
  # against 144 s), with file:line in every sanitizer report.
  if cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
       "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" -DKILN_SANITIZE=ON -DKILN_BUILD_BENCH=OFF &&
     cmake --build build-asan -j "$JOBS"; then
    note ok "asan build"
    banner "asan ctest -L unit"
    ctest --test-dir build-asan -L unit --output-on-failure -j "$JOBS" --no-tests=error \
      --timeout 900 2>&1 | tee "$LOGS/ctest-asan.log"
    rc=${PIPESTATUS[0]}
    line="$(ctest_line "$LOGS/ctest-asan.log")"
    if ((rc == 0)); then note ok "asan ctest -L unit: $line"; else note FAIL "asan ctest -L unit (exit $rc): $line"; fi
    # The hostile-input test (thousands of malformed requests) against the sanitized `kiln
    # serve`: an ASan or UBSan report kills the server, which the test sees as a failure.
    # With them, the span exporter against collectors that refuse, hang, answer 500 or
    # garbage, and hostile x-request-id / traceparent values; clients that leave in the middle
    # of speculative drafts, and bad --speculate values; hostile bodies for the encoder routes
    # (embeddings, rerank, predict, qa) and clients leaving mid-batch; models loaded, failed,
    # retried and unloaded mid-stream at run time.
    PYTEST_BUILD=build-asan run_pytest asan-hostile tests/integration/test_hostile.py \
      tests/integration/test_artifact_corpus.py \
      "tests/integration/test_tracing.py::test_collector_faults_never_fail_or_slow_requests" \
      "tests/integration/test_tracing.py::test_hostile_request_ids_and_traceparents_are_replaced" \
      "tests/integration/test_speculation.py::test_client_leaving_mid_draft_frees_everything" \
      "tests/integration/test_speculation.py::test_bad_flags_are_refused" \
      "tests/integration/test_encoders.py::test_encoder_hostile_inputs" \
      "tests/integration/test_encoders.py::test_client_leaving_mid_batch" \
      "tests/integration/test_encoders.py::test_embeddings_bad_input" \
      "tests/integration/test_multi_model.py::test_admin_load_unload_and_a_failed_model"
  else
    note FAIL "asan build"
    note FAIL "asan ctest -L unit: not run (build failed)"
  fi
fi

# ---------------------------------------------------------------- 3. fuzz
if [[ "${KILN_SKIP_FUZZ:-0}" == 1 ]]; then
  note skip "fuzz (KILN_SKIP_FUZZ=1)"
else
  banner "fuzz"
  fuzz_start=$SECONDS
  # 30 s per target in CI (scripts/fuzz.sh's own default is 60): every target still runs its
  # seed corpus and a few hundred thousand mutations; longer runs are for local sessions.
  KILN_FUZZ_SECONDS="${KILN_FUZZ_SECONDS:-30}" KILN_JOBS="$JOBS" scripts/fuzz.sh 2>&1 | tee "$LOGS/fuzz.log"
  rc=${PIPESTATUS[0]}
  line="$(grep -cE '^ok ' "$LOGS/fuzz.log") targets clean, $((SECONDS - fuzz_start)) s"
  if ((rc == 0)); then note ok "fuzz: $line"; else note FAIL "fuzz (exit $rc): $line"; fi
fi

# ---------------------------------------------------------------- 4+5. pytest suites
run_pytest golden tests/golden
# The hostile-input test already ran against the sanitized binary in stage 2.
if [[ "${KILN_SKIP_ASAN:-0}" == 1 ]]; then
  run_pytest integration tests/integration
else
  run_pytest integration tests/integration --ignore=tests/integration/test_hostile.py \
    --ignore=tests/integration/test_artifact_corpus.py
fi

# ---------------------------------------------------------------- summary
banner "summary"
printf '%s\n' "${summary[@]}"
echo "total: $SECONDS s"
if ((failed)); then echo "RESULT: FAILED"; else echo "RESULT: all passed"; fi
# pytest's own closing lines, last.
for l in "${pytest_lines[@]}"; do echo "$l"; done
exit "$failed"
