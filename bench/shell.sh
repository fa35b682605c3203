#!/usr/bin/env bash
# Shell latency benchmark (not a test): see bench/shell.py. BENCH_RUNS sets the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet
python3 bench/shell.py "$PWD/target/release/whalebox"
