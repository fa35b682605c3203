#!/usr/bin/env bash
# whalebox as a NixOS user runs it: the flake's package in a root laid out like NixOS,
# run by tests/nix/run after `nix build .#whalebox`.
#
#   tests/nix/nixos_root.sh WHALEBOX_OUT ZSH_GATED_OUT BASH_OUT COREUTILS_OUT
#
# The root (bubblewrap, as uid 1000 in a user namespace, no network): the Nix store;
# /bin/sh and /usr/bin/env as the only programs at FHS paths, links into the store, as
# NixOS has them; the user's programs on PATH through /run/current-system/sw/bin and
# /etc/profiles/per-user/user/bin, links into the store; /etc with passwd and group; a
# home directory. The one thing NixOS has not: the host's shared libraries under
# /lib/<multiarch> (the packages here are built against the host's glibc, where
# nixpkgs' link their libraries from the store).
#
# Checked: whalebox finds the gated zsh by itself, the kernel exec gate and Landlock
# hold, a gated shell_run and `whalebox run` run commands, the policy refuses a denied
# program wherever it is started from, and a write outside the workspace fails.
set -euo pipefail
whalebox=$1 zsh_gated=$2 bash=$3 coreutils=$4
step() { echo "tests/nix/nixos_root: $*"; }
fail() { echo "tests/nix/nixos_root: FAILED: $*" >&2; exit 1; }
command -v bwrap >/dev/null || fail "bwrap is not installed (.ci/run installs Debian's bubblewrap)"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# The host's dynamic loader and the directory of its libraries.
loader=""
for l in /lib64/ld-linux-x86-64.so.2 /lib/ld-linux-aarch64.so.1; do
  [ -e "$l" ] && { loader=$l; break; }
done
[ -n "$loader" ] || fail "no dynamic loader found at /lib64 or /lib"
libdir=$(dirname "$(readlink -f "$loader")")
multiarch=$(basename "$libdir")

# /run/current-system/sw/bin and the user's profile: links into the store.
system=$scratch/system
mkdir -p "$system/sw/bin" "$scratch/profile/bin"
for p in "$coreutils"/bin/* "$bash"/bin/*; do ln -sf "$p" "$system/sw/bin/"; done
ln -s "$whalebox/bin/whalebox" "$scratch/profile/bin/whalebox"
printf 'root:x:0:0:System administrator:/root:/run/current-system/sw/bin/bash\nuser:x:1000:100::/home/user:/run/current-system/sw/bin/bash\nnobody:x:65534:65534:Unprivileged account:/var/empty:/run/current-system/sw/bin/nologin\n' > "$scratch/passwd"
printf 'root:x:0:\nusers:x:100:\nnogroup:x:65534:\n' > "$scratch/group"
home=$scratch/home
mkdir -p "$home/project" "$home/elsewhere"
# A policy that denies `rm` and allows the rest.
cat > "$home/project/policy.toml" <<'EOF'
version = 1
default = "allow"
default_nested = "allow"

[[rule]]
pattern = ["rm"]
decision = "deny"
justification = "no deletions in this test"
match = ["rm x"]
EOF

in_root() {
  env -i bwrap \
    --unshare-user --uid 1000 --gid 100 --unshare-pid --unshare-ipc --unshare-uts --unshare-net \
    --die-with-parent \
    --ro-bind /nix/store /nix/store \
    --ro-bind "$libdir" "/lib/$multiarch" \
    --symlink "/lib/$multiarch/$(basename "$loader")" "$loader" \
    --symlink "$bash/bin/sh" /bin/sh \
    --symlink "$coreutils/bin/env" /usr/bin/env \
    --ro-bind "$system" /run/current-system \
    --ro-bind "$scratch/profile" /etc/profiles/per-user/user \
    --ro-bind "$scratch/passwd" /etc/passwd \
    --ro-bind "$scratch/group" /etc/group \
    --proc /proc --dev /dev --tmpfs /tmp \
    --bind "$home" /home/user \
    --chdir /home/user/project \
    --setenv HOME /home/user --setenv USER user --setenv LANG C.UTF-8 \
    --setenv PATH /run/wrappers/bin:/etc/profiles/per-user/user/bin:/run/current-system/sw/bin \
    "$@"
}

step "the root is laid out like NixOS"
in_root sh -c '[ ! -e /bin/true ] && [ ! -e /usr/bin/true ] && [ ! -e /usr/lib ] && [ "$(ls /bin)" = sh ] && [ "$(ls /usr/bin)" = env ]' ||
  fail "the root has more than /bin/sh and /usr/bin/env at FHS paths"

step "whalebox doctor finds the gated zsh, the kernel gate and Landlock"
in_root whalebox doctor --workspace . > "$scratch/doctor.txt" 2>&1 || { cat "$scratch/doctor.txt"; fail "whalebox doctor"; }
sed 's/^/tests\/nix\/nixos_root:   /' "$scratch/doctor.txt"
grep -qF "gated zsh:  $zsh_gated/bin/zsh" "$scratch/doctor.txt" || fail "the gated zsh was not found"
grep -q "^exec gate:  kernel" "$scratch/doctor.txt" || fail "the kernel exec gate is not installed"
landlock=yes
if ! grep -q "^landlock:   Landlock ABI [1-9].*enforcing filesystem" "$scratch/doctor.txt"; then
  landlock=""
  echo "tests/nix/nixos_root: SKIPPED the Landlock checks: this kernel has no Landlock ($(grep '^landlock:' "$scratch/doctor.txt"))"
fi

step "a gated shell_run runs commands in the workspace"
in_root whalebox call shell_run --workspace . \
  --args '{"command": "echo gated > made.txt && cat made.txt"}' > "$scratch/run.json" ||
  { cat "$scratch/run.json"; fail "shell_run"; }
grep -q '"ok":true' "$scratch/run.json" || { cat "$scratch/run.json"; fail "shell_run did not succeed"; }
grep -q '"zsh":"[^"]*zsh-gated' "$scratch/run.json" || { cat "$scratch/run.json"; fail "shell_run did not use the gated zsh"; }
[ "$(cat "$home/project/made.txt")" = gated ] || fail "made.txt was not written"

step "the policy refuses rm in shell_run, and from a script in whalebox run"
in_root whalebox call shell_run --workspace . --policy policy.toml \
  --args '{"command": "rm made.txt"}' > "$scratch/denied.json" || true
grep -q 'denied' "$scratch/denied.json" || { cat "$scratch/denied.json"; fail "rm was not denied in shell_run"; }
[ -f "$home/project/made.txt" ] || fail "shell_run's rm removed made.txt"
if in_root whalebox run --policy policy.toml -- sh -c 'rm made.txt' 2> "$scratch/denied.txt"; then
  fail "whalebox run: the nested rm succeeded"
fi
[ -f "$home/project/made.txt" ] || fail "whalebox run's nested rm removed made.txt"
grep -q 'whalebox: denied' "$scratch/denied.txt" || { cat "$scratch/denied.txt"; fail "no denial message"; }

step "whalebox run writes inside the workspace$([ -n "$landlock" ] && echo ", not outside it")"
in_root whalebox run -- touch inside.txt || fail "whalebox run -- touch inside.txt"
[ -f "$home/project/inside.txt" ] || fail "inside.txt was not written"
if [ -n "$landlock" ]; then
  if in_root whalebox run -- touch /home/user/elsewhere/escaped.txt 2> "$scratch/escaped.txt"; then
    fail "a write outside the workspace succeeded"
  fi
  [ ! -e "$home/elsewhere/escaped.txt" ] || fail "escaped.txt was written"
  grep -q "Permission denied" "$scratch/escaped.txt" || { cat "$scratch/escaped.txt"; fail "no permission error"; }
fi
step "passed"
