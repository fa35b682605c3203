#!/usr/bin/env bash
# The cost of the fences on real work (not a test): see bench/workloads.py. BENCH_RUNS
# sets the runs (default 3). Needs what tests/workloads needs (tests/install), and
# fetches its packages once (tests/workloads/prepare).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet
nix/zsh/build.sh >/dev/null
python3 tests/workloads/prepare
python3 bench/workloads.py "$PWD/target/release/whalebox"
