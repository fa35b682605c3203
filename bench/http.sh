#!/usr/bin/env bash
# Streamable HTTP benchmark (not a test): `whalebox serve --http` on loopback under
# BENCH_SESSIONS (100) sessions at once, each making BENCH_CALLS (200) read_file calls,
# beside the same calls over stdio (one `whalebox serve` process per session, the
# baseline): calls/s, p50 and p99 of a call, and the ratios; then the server's memory per
# idle session (its RSS before and after BENCH_IDLE (1,000) more sessions are opened).
# The goals (issue 27) are printed beside: >= 5,000 calls/s, p99 <= 5 ms, <= 200 KiB per
# idle session. The load generator is bench/http_bench.rs (one thread, in Rust, so that
# it is not what is measured). BENCH_ONLY=http,stateless,stdio,idle runs only those parts;
# WHALEBOX_BIN=PATH measures another binary (a dry run against target/debug/whalebox).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${WHALEBOX_BIN:-}" ]; then
  cargo build --release --locked --quiet --example http_bench
else
  cargo build --release --locked --quiet --bin whalebox --example http_bench
fi
target/release/examples/http_bench "${WHALEBOX_BIN:-$PWD/target/release/whalebox}"
