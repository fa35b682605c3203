#!/usr/bin/env bash
# Checkpoint benchmark (not a test): see bench/checkpoints.py. The trees (a 2k-file project
# and a 78k-file Linux-sized one, synthesized unless LINUX_TREE names a tree to copy) are
# made once under target/bench-checkpoints/ (BENCH_DIR) and reused (the first run spends
# about 40 s on them; a run takes about 2 minutes). BENCH_RUNS, BENCH_CALLS, BENCH_FILES,
# BENCH_SMALL_FILES, BENCH_STATE.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v git >/dev/null || { echo "bench/checkpoints.sh: needs git (the baseline)" >&2; exit 1; }
cargo build --release --locked --quiet
python3 bench/checkpoints.py "$PWD/target/release/whalebox"
