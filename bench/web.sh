#!/usr/bin/env bash
# Web benchmark (not a test): see bench/web.py. Installs pandoc (the baseline converter)
# if missing. BENCH_RUNS sets the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v pandoc >/dev/null || apt-get install -y -q pandoc >/dev/null
command -v curl >/dev/null || apt-get install -y -q curl >/dev/null
cargo build --release --locked --quiet
python3 bench/web.py "$PWD/target/release/whalebox"
