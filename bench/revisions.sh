#!/usr/bin/env bash
# Benchmark: this tree against an earlier revision, side by side (not a test). Builds the
# in-process benchmarks (bench/edit_bench.rs: edit, relaxed edit and 100-step multi_edit
# through the real registry; bench/policy_bench.rs: decisions on a 200-rule policy) at
# BASE in a worktree under target/, and here, then runs the two builds alternately
# BENCH_RUNS times (default 3) and prints, per case, the best time of each and the
# ratio this tree / BASE (below 1: faster now). For moves that must not slow anything
# down, such as issue 26's crates.
#
#   bench/revisions.sh b074ce1                       # edits up to 10 MB
#   BENCH_MAX_BYTES=104857600 bench/revisions.sh b074ce1
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: bench/revisions.sh BASE-REVISION}
runs=${BENCH_RUNS:-3}
export BENCH_MAX_BYTES=${BENCH_MAX_BYTES:-$((10 << 20))}
export BENCH_RUNS=5

here=$PWD
rev=$(git rev-parse --short "$base")
tree=$here/target/bench-revisions/$rev
if [ ! -d "$tree" ]; then
  git worktree add --detach "$tree" "$rev" >/dev/null
fi
echo "building $rev and this tree (release)" >&2
(cd "$tree" && cargo build --release --locked --quiet --example edit_bench --example policy_bench)
cargo build --release --locked --quiet --example edit_bench --example policy_bench

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq "$runs"); do
  for side in base here; do
    dir=$tree
    [ "$side" = here ] && dir=$here
    BENCH_DIR=$work/edit-$side "$dir/target/release/examples/edit_bench" >>"$work/$side.edit"
    "$dir/target/release/examples/policy_bench" >>"$work/$side.policy"
  done
done

python3 - "$work" "$rev" <<'EOF'
import re, sys
work, rev = sys.argv[1], sys.argv[2]

def best(side):
    """The best time (ms) per edit case, and the best decisions/s."""
    times = {}
    for line in open(f"{work}/{side}.edit"):
        m = re.match(r"(.{34}) +(?:[\d.]+ms)? +([\d.]+)ms ", line)
        if m and ":" in m.group(1) and "/ one edit" not in m.group(1):
            case = m.group(1).strip()
            times[case] = min(times.get(case, float("inf")), float(m.group(2)))
    rate = max(float(m.group(1)) for m in
               (re.search(r"= (\d+) decisions/s", l) for l in open(f"{work}/{side}.policy")) if m)
    return times, rate

(bt, br), (ht, hr) = best("base"), best("here")
print(f"{'case':40} {rev:>10} {'this tree':>10} {'ratio':>7}")
for case in bt:
    if case in ht:
        print(f"{case:40} {bt[case]:>8.1f}ms {ht[case]:>8.1f}ms {ht[case] / bt[case]:>6.2f}x")
print(f"{'policy: time per decision':40} {1e9 / br:>8.0f}ns {1e9 / hr:>8.0f}ns {br / hr:>6.2f}x")
EOF
