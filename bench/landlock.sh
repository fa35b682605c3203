#!/usr/bin/env bash
# Landlock overhead benchmark (not a test): see bench/landlock.py. BENCH_RUNS sets the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet
nix/zsh/build.sh >/dev/null
python3 bench/landlock.py "$PWD/target/release/whalebox"
