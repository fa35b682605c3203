#!/usr/bin/env bash
# Benchmark: every fuzz target for longer than CI runs them (fuzz/run, 30 s each), one
# after another, printing per target the seconds, runs, executions per second, coverage
# (libFuzzer's cov: edges, ft: features) and the corpus size at the end. The corpus
# grows across runs (fuzz/target/fuzz-run/corpus/, FUZZ_KEEP_CORPUS), so a second run
# starts where the first stopped. Any crash fails it, as in CI. Not a test.
#
#   bench/fuzz.sh                      # 300 s per target
#   bench/fuzz.sh 60 edit_engine       # one target, 60 s
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_KEEP_CORPUS=1 exec fuzz/run "${1:-${FUZZ_SECONDS:-300}}" "${@:2}"
