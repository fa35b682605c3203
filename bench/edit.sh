#!/usr/bin/env bash
# Benchmark: edit, relaxed edit and 100-step multi_edit through the real registry on
# 1, 10 and 100 MB files and on 100k/1M-line mixed-ending files, against the floor of
# reading and atomically rewriting the same file, measured alternately in one run.
# Prints medians and ratios (targets: exact <= 1.5x, relaxed <= 3x; a 100-step multi_edit
# within 2x of one edit, goal 1.3x). Not a test.
#
#   bench/edit.sh                     # files under /tmp/whalebox-bench/edit
#   BENCH_DIR=/some/dir BENCH_RUNS=9 bench/edit.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --release --locked --quiet --example edit_bench
