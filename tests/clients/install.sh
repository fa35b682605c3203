#!/usr/bin/env bash
# Install the real MCP clients (Claude Code, Codex CLI) that tests/clients drives whalebox
# through, at the exact versions pinned in package.json / package-lock.json.
#
# Destination: target/clients of the repo (override with CLIENTS_DIR). The binaries end up in
# $CLIENTS_DIR/node_modules/.bin, which is where harness.py looks unless CLIENTS_BIN is set.
#
# Idempotent: when the pinned versions are already installed (and Claude Code's native binary
# is in place) nothing is downloaded. `npm ci` is used so the lock file, not the registry's
# current tags, decides what gets installed. Install scripts must run: Claude Code's
# postinstall copies the platform's native binary over its bin/claude.exe placeholder.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dest="${CLIENTS_DIR:-$repo/target/clients}"

pinned() { # pinned NAME -> version in our package.json
    node -e 'const p=require(process.argv[1]); console.log(p.dependencies[process.argv[2]])' \
        "$here/package.json" "$1"
}
installed() { # installed NAME -> version under $dest, or nothing
    local pj="$dest/node_modules/$1/package.json"
    [ -f "$pj" ] && node -e 'console.log(require(process.argv[1]).version)' "$pj" || true
}

claude_want="$(pinned @anthropic-ai/claude-code)"
codex_want="$(pinned @openai/codex)"

up_to_date() {
    [ "$(installed @anthropic-ai/claude-code)" = "$claude_want" ] || return 1
    [ "$(installed @openai/codex)" = "$codex_want" ] || return 1
    # The manifest or lock may have changed without a version bump (e.g. allowScripts).
    cmp -s "$here/package.json" "$dest/package.json" || return 1
    cmp -s "$here/package-lock.json" "$dest/package-lock.json" || return 1
    # Without the postinstall, bin/claude.exe is a small placeholder that only prints advice.
    "$dest/node_modules/.bin/claude" --version 2>/dev/null | grep -qF "$claude_want" || return 1
    "$dest/node_modules/.bin/codex" --version 2>/dev/null | grep -qF "$codex_want" || return 1
}

if up_to_date; then
    echo "install.sh: Claude Code $claude_want and Codex CLI $codex_want already in $dest; nothing to do"
    exit 0
fi

echo "install.sh: installing Claude Code $claude_want and Codex CLI $codex_want into $dest (npm ci)"
mkdir -p "$dest"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
# --foreground-scripts shows the postinstall's output; engine-strict is forced off because
# Claude Code declares node >= 22 yet its wrapper only runs the native binary.
(cd "$dest" && npm ci --no-audit --no-fund --foreground-scripts --engine-strict=false)

if ! up_to_date; then
    echo "install.sh: installed, but the clients do not report the pinned versions:" >&2
    "$dest/node_modules/.bin/claude" --version >&2 || true
    "$dest/node_modules/.bin/codex" --version >&2 || true
    exit 1
fi
echo "install.sh: done: $("$dest/node_modules/.bin/claude" --version); $("$dest/node_modules/.bin/codex" --version)"
