#!/usr/bin/env bash
# mcp group benchmark (not a test): see bench/mcp.py. Needs the MCP test venv
# (tests/run creates it). BENCH_RUNS sets the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet
venv=${WHALEBOX_TEST_VENV:-$PWD/target/test-venv}
[ -x "$venv/bin/python" ] || { echo "bench/mcp.sh: no venv at $venv (run tests/run once)" >&2; exit 1; }
"$venv/bin/python" bench/mcp.py "$PWD/target/release/whalebox"
