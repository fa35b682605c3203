# The stand-in's own checks, built by tests/nix/run: its builds run as in Nix's build
# sandbox, so the defects a real build meets show here too.
{ pkgs }:
let
  inherit (pkgs) lib runCommand;
in
{
  # What a build sees of the machine: no FHS programs, busybox as /bin/sh, the builder
  # not root, no home.
  sandboxLayout = runCommand "standin-sandbox-layout" { } ''
    for p in /usr/bin /bin/true /bin/bash /usr/bin/env /usr/local; do
      if [ -e "$p" ]; then echo "the build sandbox has $p"; exit 1; fi
    done
    sh_answer=$( (exec -a SPLATTER /bin/sh -c 'echo $0') 2>&1 || true)
    case "$sh_answer" in
      *"applet not found"*) ;;
      *) echo "/bin/sh is not busybox (exec -a SPLATTER /bin/sh answered: $sh_answer)"; exit 1 ;;
    esac
    # nixpkgs' sandbox shell has no applets beyond the shell's: programs are execs.
    if env -i PATH=/nonexistent /bin/sh -c 'touch made-by-an-applet' 2>/dev/null; then
      echo "/bin/sh ran touch without an exec (a busybox with standalone applets)"; exit 1
    fi
    [ "$(id -u)" = 1000 ] || { echo "the builder is uid $(id -u), not 1000"; exit 1; }
    [ "$HOME" = /homeless-shelter ] && [ ! -e "$HOME" ] || { echo "HOME is $HOME"; exit 1; }
    touch $out
  '';

  # Expected to fail: a path passed through lib.escapeShellArgs is a string without
  # store context (the pinned lib's behaviour), so its store path is not an input of
  # the build and the sandbox does not have it.
  pathWithoutContext = runCommand "standin-path-without-context" { } ''
    cat ${lib.escapeShellArgs [ ./README.md ]}
    touch $out
  '';
}
