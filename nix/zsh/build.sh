#!/usr/bin/env bash
# Build the gated zsh: upstream zsh 5.9 plus nix/zsh/exec-boundary.patch, installed into
# target/zsh/ (bin/zsh, its modules under lib/). The source is, in order: $ZSH_TARBALL, a
# tarball already in target/zsh-src/, `apt-get source` (Debian, deb-src enabled), or the
# upstream URL. The sha256 is always checked.
#
# ZSH_PREFIX (default: target/zsh) is the prefix compiled into the zsh, where it finds its
# modules and functions at run time; ZSH_DESTDIR, when set, stages the install under it
# (make DESTDIR), so a zsh for another root is built here: deploy/container/build builds
# one for the image's /opt/whalebox/zsh into target/container/zsh.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
sha=9b8d1ecedd5b5e81fbf1918e876752a7dd948e05c1a0dba10ab863842d45acd5
src=$root/target/zsh-src
prefix=${ZSH_PREFIX:-$root/target/zsh}
destdir=${ZSH_DESTDIR:-}
installed=$destdir$prefix
mkdir -p "$src"
tarball=${ZSH_TARBALL:-}
if [ -z "$tarball" ]; then
  tarball=$src/zsh_5.9.orig.tar.xz
  if [ ! -f "$tarball" ]; then
    if ! { command -v apt-get >/dev/null && (cd "$src" && apt-get source --download-only zsh >/dev/null 2>&1) \
           && [ -f "$tarball" ]; }; then
      curl -fsSL -o "$tarball" https://www.zsh.org/pub/zsh-5.9.tar.xz
    fi
  fi
fi
echo "$sha  $tarball" | sha256sum -c --quiet - || { echo "build.sh: $tarball is not zsh 5.9 (sha256 mismatch)" >&2; exit 1; }
patch_sum=$(sha256sum nix/zsh/exec-boundary.patch | cut -c1-16)
if [ -x "$installed/bin/zsh" ] && [ "$(cat "$installed/.patch" 2>/dev/null)" = "$patch_sum" ]; then
  echo "build.sh: $installed/bin/zsh is up to date"
  exit 0
fi
work=$src/build
rm -rf "$work" && mkdir -p "$work"
tar -xf "$tarball" -C "$work" --strip-components=1
(cd "$work" && patch -p1 --quiet < "$root/nix/zsh/exec-boundary.patch")
cd "$work"
# --with-tcsetpgrp: configure cannot probe it without a terminal (CI).
./configure --quiet --prefix="$prefix" --with-tcsetpgrp --enable-etcdir="$prefix/etc" \
  --disable-gdbm --disable-pcre --disable-cap >/dev/null
make -j"$(nproc)" >"$src/make.log" 2>&1 || { tail -30 "$src/make.log" >&2; exit 1; }
# Unconfigured, the patched zsh must behave exactly like stock zsh: a sample of zsh's own
# test suite (grammar, aliases, quoting, redirection, execution, assignment, control flow,
# conditions, arithmetic, options; about 30 s). ZSH_CHECK=0 skips it.
if [ "${ZSH_CHECK:-1}" != 0 ]; then
  for t in A0 C0 E0; do
    env -u WHALEBOX_GATE -u WHALEBOX_GATE_SOCKET make check TESTNUM=$t >"$src/check-$t.log" 2>&1 ||
      { tail -20 "$src/check-$t.log" >&2; echo "build.sh: zsh's own tests $t* failed" >&2; exit 1; }
    grep -h "successful test scripts" "$src/check-$t.log" | sed "s/^/build.sh: make check $t*: /"
  done
fi
make install.bin install.modules install.fns DESTDIR="$destdir" >>"$src/make.log" 2>&1 || { tail -30 "$src/make.log" >&2; exit 1; }
echo "$patch_sum" > "$installed/.patch"
echo "build.sh: installed $installed/bin/zsh (prefix $prefix)"
