#!/usr/bin/env bash
# Exec-boundary benchmark (not a test): the cost the gate adds to one exec, and policy
# decisions per second.
#  1. 1000 execs of /bin/true in a loop, through `whalebox call shell_run`, once under the
#     gated zsh with an allow-all policy (a real gate and decision server per exec) and
#     once with the same zsh binary ungated (exec_boundary = "off"), side by side.
#  2. bench/policy_bench.rs: in-process decisions on a 200-rule policy.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet
nix/zsh/build.sh >/dev/null
cargo run --release --locked --quiet --example policy_bench
bin=$PWD/target/release/whalebox
zsh=$PWD/target/zsh/bin/zsh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'version = 1\ndefault = "allow"\n' > "$work/allow.toml"
printf 'policy = "allow.toml"\n[shell]\nexec_boundary = "required"\nzsh = "%s"\n' "$zsh" > "$work/gated.toml"
printf '[shell]\nexec_boundary = "off"\nprogram = "%s"\n' "$zsh" > "$work/stock.toml"
loop='for i in {1..1000}; do /bin/true; done'
run() {
  "$bin" call shell_run --profile "$work/$1.toml" --workspace "$work" \
    --args "{\"command\": \"$loop\", \"yield_time_ms\": 50000}" |
    python3 -c 'import json,sys; d=json.load(sys.stdin)["data"]; assert d["exit_code"]==0, d; print(d["duration_ms"])'
}
best() { local b=999999; for _ in 1 2 3 4 5; do t=$(run "$1"); [ "$t" -lt "$b" ] && b=$t; done; echo "$b"; }
gated=$(best gated)
stock=$(best stock)
python3 - "$gated" "$stock" <<'PY'
import sys
g, s = int(sys.argv[1]), int(sys.argv[2])
print(f"boundary: 1000 execs of /bin/true, best of 5: gated {g} ms, ungated {s} ms, "
      f"{g / s:.2f}x; added per exec {(g - s):.0f} us (target < 300 us)")
PY
