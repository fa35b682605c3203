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
    # C02cond makes setuid/setgid files, which Nix's seccomp filter refuses in builds.
    rm Test/C02cond.ztst
    for group in A B C D E V W; do
      make check TESTNUM=$group > check-$group.log 2>&1 || {
        tail -n 40 check-$group.log
        echo "zsh-gated: zsh's own tests, group $group, failed"
        exit 1
      }
      grep -h "successful test scripts" check-$group.log | sed "s/^/zsh-gated: tests $group: /"
    done
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
