#!/usr/bin/env bash
# Benchmark: `whalebox call grep` against ripgrep and `whalebox call search_files`
# against fd, side by side on a large real source tree (the Linux kernel from Debian's
# linux-source package, ~80k files), several runs each with hyperfine. Prints the median
# of each and the ratio whalebox/baseline. Not a test: nothing here gates CI.
#
#   bench/search.sh              # installs what it needs (as root, Debian), runs all cases
#   BENCH_TREE=/some/tree bench/search.sh   # use another tree instead
#   BENCH_RUNS=20 bench/search.sh
#
# Both sides see the same rules: hidden files skipped, ignore files respected, no
# symlink following; ripgrep and fd run with their default parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${BENCH_RUNS:-10}"
work="target/bench"
mkdir -p "$work"

need=()
command -v rg >/dev/null || need+=(ripgrep)
command -v fdfind >/dev/null || command -v fd >/dev/null || need+=(fd-find)
command -v hyperfine >/dev/null || need+=(hyperfine)
if [ -z "${BENCH_TREE:-}" ] && ! ls /usr/src/linux-source-*.tar.xz >/dev/null 2>&1; then
  need+=(linux-source)
fi
if [ "${#need[@]}" -gt 0 ]; then
  echo "installing: ${need[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
fd_bin="$(command -v fd || command -v fdfind)"

tree="${BENCH_TREE:-}"
if [ -z "$tree" ]; then
  tarball="$(ls /usr/src/linux-source-*.tar.xz | sort -V | tail -n1)"
  # Outside this repository: its .gitignore (/target) would hide the tree from rg and fd.
  unpack="${BENCH_DIR:-/tmp/whalebox-bench}"
  mkdir -p "$unpack"
  tree="$unpack/$(basename "$tarball" .tar.xz)"
  if [ ! -d "$tree" ]; then
    echo "unpacking $tarball into $tree" >&2
    tar -C "$unpack" -xf "$tarball"
  fi
fi
tree="$(cd "$tree" && pwd)"
files="$("$fd_bin" --type f . "$tree" | wc -l)"
echo "tree: $tree ($files files visible to fd)"

cargo build --release --locked --quiet
wb="$PWD/target/release/whalebox"
profile="$PWD/$work/bench-profile.toml"
# Results stay as the model would see them (default caps); the search itself is complete.
printf 'workspace = "%s"\ntools = ["search"]\n' "$tree" > "$profile"

results="$PWD/$work/results"
rm -rf "$results" && mkdir -p "$results"
case_no=0

# bench NAME BASELINE_CMD WHALEBOX_TOOL WHALEBOX_ARGS_JSON (hyperfine discards output)
bench() {
  local name="$1" baseline="$2" tool="$3" args="$4"
  case_no=$((case_no + 1))
  local wcmd="$wb call $tool --profile $profile --args '$args'"
  # Sanity: both sides find something, and whalebox answers ok.
  (cd "$tree" && bash -c "$baseline" | head -c 1 | grep -q .) || { echo "baseline found nothing: $baseline" >&2; exit 1; }
  (cd "$tree" && bash -c "$wcmd" | grep -q '"ok":true') || { echo "whalebox failed: $wcmd" >&2; exit 1; }
  (cd "$tree" && hyperfine --style none --warmup 2 --runs "$runs" \
      --export-json "$results/$case_no.json" \
      -n baseline "$baseline" -n whalebox "$wcmd" >/dev/null)
  echo "$name" > "$results/$case_no.name"
}

bench "grep literal          vs rg"        "rg -n --no-heading 'EXPORT_SYMBOL_GPL\('" \
  grep '{"pattern": "EXPORT_SYMBOL_GPL\\("}'
bench "grep regex            vs rg"        "rg -n --no-heading '\bstruct \w+_ops \{'" \
  grep '{"pattern": "\\bstruct \\w+_ops \\{"}'
bench "grep -i files-only    vs rg -il"    "rg -il 'spin_lock_irqsave'" \
  grep '{"pattern": "spin_lock_irqsave", "case_insensitive": true, "output_mode": "files_with_matches"}'
bench "grep *.h count        vs rg -c -g"  "rg -c -g '*.h' 'define'" \
  grep '{"pattern": "define", "include": "*.h", "output_mode": "count"}'
bench "search_files *.c      vs fd -g"     "$fd_bin -g '*.c'" \
  search_files '{"pattern": "*.c"}'
bench "search_files path glob vs fd -p -g" "$fd_bin -p -g '**/net/**/*.h'" \
  search_files '{"pattern": "**/net/**/*.h"}'
bench "search_files Makefile vs fd -g"     "$fd_bin -g 'Makefile'" \
  search_files '{"pattern": "Makefile"}'

python3 - "$results" "$runs" <<'PY'
import json, pathlib, sys
results, runs = pathlib.Path(sys.argv[1]), sys.argv[2]
print(f"\nmedian wall time over {runs} runs (ratio = whalebox / baseline; target <= 1.30)\n")
print(f"{'case':38} {'baseline':>10} {'whalebox':>10} {'ratio':>7}")
ratios = []
for f in sorted(results.glob("*.json"), key=lambda p: int(p.stem)):
    name = (results / f"{f.stem}.name").read_text().strip()
    data = {r["command"]: r["median"] for r in json.loads(f.read_text())["results"]}
    base, wb = data["baseline"], data["whalebox"]
    ratios.append(wb / base)
    print(f"{name:38} {base*1000:8.1f}ms {wb*1000:8.1f}ms {wb/base:6.2f}x")
geo = 1.0
for r in ratios:
    geo *= r
print(f"\ngeometric mean ratio: {geo ** (1 / len(ratios)):.2f}x")
PY
