#!/usr/bin/env bash
# Benchmark: the network fence's cost. A download and a run of small requests, each new
# connection, from an HTTP server on 127.0.0.1, measured by curl itself: directly on
# this machine, and from a command inside whalebox (`whalebox run`) whose only way out is
# the session's egress proxy, with each kernel fence this machine has (its own network
# namespace; Landlock + seccomp). Rounds alternate direct and fenced. Prints medians and
# the ratios (goals: >= 0.9x direct throughput, <= +1 ms per connection). Not a test.
#
#   bench/network.sh                    # 512 MiB download, 300 requests, 5 rounds
#   BENCH_MB=1024 BENCH_REQUESTS=500 BENCH_RUNS=7 bench/network.sh
#   BENCH_RATE=400M bench/network.sh    # the download capped (curl --limit-rate), both ways
#
# On a 2-core machine an uncapped loopback download keeps the server and curl busy on
# both cores; the proxy's copy then takes its share of them, which is what the uncapped
# ratio shows. A cap below what the machine moves shows whether the proxy holds a rate.
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${BENCH_MB:-512}
requests=${BENCH_REQUESTS:-300}
runs=${BENCH_RUNS:-5}
rate=${BENCH_RATE:-}

cargo build --release --locked --quiet
whalebox=$PWD/target/release/whalebox
dir=$(mktemp -d /tmp/whalebox-bench-network.XXXXXX)
trap 'kill $server 2>/dev/null; rm -rf "$dir"' EXIT
mkdir -p "$dir/ws" "$dir/www"
head -c $((mb * 1024 * 1024)) /dev/urandom >"$dir/www/big"
echo ok >"$dir/www/small"

python3 - "$dir/www" >"$dir/port" <<'EOF' &
import http.server, socketserver, sys, os, functools
os.chdir(sys.argv[1])
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
print(server.server_address[1], flush=True)
server.serve_forever()
EOF
server=$!
for _ in $(seq 50); do [ -s "$dir/port" ] && break; sleep 0.1; done
port=$(cat "$dir/port")

# curl's own clock: seconds for the download, and the mean seconds per request.
measure() { # HOST [RUNNER…]
  local host=$1; shift
  local urls=()
  for _ in $(seq "$requests"); do urls+=("http://$host:$port/small"); done
  "$@" curl -s ${rate:+--limit-rate "$rate"} -o /dev/null -w '%{time_total}\n' "http://$host:$port/big"
  "$@" curl -s -H 'Connection: close' -o /dev/null -w '%{time_total}\n' "${urls[@]}" |
    awk '{ s += $1 } END { printf "%.6f\n", s / NR }'
}

median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

kernels=()
for kernel in namespace landlock; do
  cat >"$dir/$kernel.toml" <<EOF
workspace = "ws"
[shell]
exec_boundary = "off"
[network]
kernel = "$kernel"
allow_domains = ["bench.test"]
allow_private = ["127.0.0.1"]
ports = []
[network.hosts]
"bench.test" = "127.0.0.1"
EOF
  got=$("$whalebox" doctor --json --profile "$dir/$kernel.toml" | python3 -c 'import json,sys; print(json.load(sys.stdin)["network"]["enforcement"]["kind"])')
  if [ "$got" = "$kernel" ]; then kernels+=("$kernel"); else echo "skipped: the $kernel fence is not available here ($got)"; fi
done

: >"$dir/direct"
for kernel in "${kernels[@]}"; do : >"$dir/$kernel"; done
for _ in $(seq "$runs"); do
  measure 127.0.0.1 env --unset=http_proxy --unset=HTTP_PROXY | paste -sd' ' >>"$dir/direct"
  for kernel in "${kernels[@]}"; do
    measure bench.test "$whalebox" run --profile "$dir/$kernel.toml" -- | paste -sd' ' >>"$dir/$kernel"
  done
done

direct_s=$(cut -d' ' -f1 "$dir/direct" | median)
direct_req=$(cut -d' ' -f2 "$dir/direct" | median)
printf '%-10s %12s %14s %10s %14s\n' path "MiB/s" "ms/request" "x direct" "+ms/request"
awk -v mb="$mb" -v s="$direct_s" -v r="$direct_req" \
  'BEGIN { printf "%-10s %12.0f %14.3f %10s %14s\n", "direct", mb / s, r * 1000, "1.00", "0" }'
for kernel in "${kernels[@]}"; do
  s=$(cut -d' ' -f1 "$dir/$kernel" | median)
  r=$(cut -d' ' -f2 "$dir/$kernel" | median)
  awk -v k="$kernel" -v mb="$mb" -v s="$s" -v r="$r" -v ds="$direct_s" -v dr="$direct_req" \
    'BEGIN { printf "%-10s %12.0f %14.3f %10.2f %14.3f\n", k, mb / s, r * 1000, ds / s, (r - dr) * 1000 }'
done
echo "($mb MiB download${rate:+ capped at $rate/s}, $requests requests of one new connection each, median of $runs rounds)"
