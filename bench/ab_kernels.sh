#!/bin/bash
# A/B of kernels_bench binaries on a noisy machine: runs each binary in turn, ROUNDS times,
# and prints the minimum real time (us) of every benchmark per binary (the minimum is what
# survives other tenants' load; the binaries alternate so drift hits both alike).
# usage: bench/ab_kernels.sh FILTER ROUNDS BINARY...
#   e.g. bench/ab_kernels.sh 'MatMul/batch/dtype:[345]/.*m:(1|16|512)/' 4 /tmp/old /tmp/new
set -euo pipefail
filter=$1
rounds=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq "$rounds"); do
  for bin in "$@"; do
    "$bin" --benchmark_filter="$filter" --benchmark_min_time=0.1 2>/dev/null |
      awk -v b="$bin" '/^[A-Za-z]/ && $3 == "ns" {print b, $1, $2}' >>"$out"
  done
done
python3 - "$out" "$@" <<'PY'
import collections, sys
times = collections.defaultdict(list)
for line in open(sys.argv[1]):
    binary, name, ns = line.split()
    times[(name.split("/min_time")[0], binary)].append(float(ns) / 1000)
binaries = sys.argv[2:]
print("benchmark", *binaries)
for name in sorted({n for n, _ in times}):
    print(name, *("%.0f" % min(times[(name, b)]) for b in binaries))
PY
