# zsh-gated: nixpkgs' zsh plus whalebox's exec-boundary patch, as a package of its own
# (never an overlay that replaces `zsh`, which would rebuild everything that uses it).
# The patch builds on zsh 5.9 (nixos-25.11) and 5.9.1 / 5.9.2 (nixpkgs master).
{ zsh }:

zsh.overrideAttrs (old: {
  pname = "zsh-gated";

  patches = (old.patches or [ ]) ++ [ ./zsh/exec-boundary.patch ];

  # zsh's own test suite, group by group: nixpkgs lists TESTNUM=A … TESTNUM=W in
  # checkFlags, but make keeps only the last assignment, so that would run W alone.
  # X, Y and Z need zsh/zpty (not available in build sandboxes), P needs root.
  # Unconfigured (no WHALEBOX_GATE_SOCKET), the patched zsh must behave as stock zsh.
  doCheck = true;
  checkPhase = ''
    runHook preCheck
    unset WHALEBOX_GATE WHALEBOX_GATE_SOCKET
    # What a build sandbox (and NixOS) lacks, which a few cases assume:
    # - C02cond makes setuid/setgid files, which Nix's seccomp filter refuses.
    rm Test/C02cond.ztst
    # - Three cases of A01grammar start /bin/sh under another name (`exec -a
    #   /bin/SPLATTER /bin/sh -c 'echo $0'`); /bin/sh is busybox there, which picks its
    #   applet from that name ("SPLATTER: applet not found"). They run the stdenv's bash,
    #   which prints $0 as given, as the cases mean.
    sed -i \
      -e "s|\(exec -a */bin/[A-Z]* \)/bin/sh |\1$SHELL |" \
      -e "s|exec \$opts /bin/sh |exec \$opts $SHELL |" \
      Test/A01grammar.ztst
    [ "$(grep -c "$SHELL -c 'echo \$0'" Test/A01grammar.ztst)" = 3 ] || {
      echo "zsh-gated: A01grammar's exec -a cases were not found"
      exit 1
    }
    # - Three cases of A01grammar run `command -p`, which searches the system's default
    #   PATH (/bin:/usr/bin, from getconf at configure time) for cat and echo: there is
    #   none. They are left out (a case is a paragraph of the .ztst file).
    awk 'BEGIN { RS = ""; ORS = "\n\n" } /command -p/ { dropped++; next } { print }
         END { if (dropped != 3) { print "zsh-gated: expected 3 command -p cases, found " dropped > "/dev/stderr"; exit 1 } }' \
      Test/A01grammar.ztst > A01grammar.ztst.new
    mv A01grammar.ztst.new Test/A01grammar.ztst
    failed=""
    for group in A B C D E V W; do
      # SHELL for make's recipes too, as nixpkgs' own phases pass it: zsh's Makefiles
      # would otherwise run them with /bin/sh.
      if make check SHELL="$SHELL" TESTNUM=$group > check-$group.log 2>&1; then
        grep -h "successful test scripts" check-$group.log | sed "s/^/zsh-gated: tests $group: /"
      else
        grep -B15 -A25 " failed: " check-$group.log | head -n 80
        failed="$failed $group"
      fi
    done
    if [ -n "$failed" ]; then
      echo "zsh-gated: zsh's own tests failed in group(s)$failed"
      exit 1
    fi
    runHook postCheck
  '';

  # The boundary itself: configured with a decision server that is not there, every
  # external exec is refused (exit 126, a `whalebox: denied` line), builtins still run.
  doInstallCheck = true;
  postInstallCheck = ''
    export WHALEBOX_GATE_SOCKET=$TMPDIR/no-such-server.sock
    if result=$($out/bin/zsh -fc "$out/bin/zsh -fc 'echo ran'" 2>&1); then
      echo "zsh-gated: an exec ran without a decision server: $result"
      exit 1
    fi
    case "$result" in
      *"whalebox: denied"*) ;;
      *) echo "zsh-gated: no denial message: $result"; exit 1 ;;
    esac
    [ "$($out/bin/zsh -fc 'echo builtin')" = builtin ]
    unset WHALEBOX_GATE_SOCKET
  '';

  meta = (old.meta or { }) // {
    description = "zsh with whalebox's exec boundary: every external exec is put to whalebox's decision server";
    mainProgram = "zsh";
  };
})
