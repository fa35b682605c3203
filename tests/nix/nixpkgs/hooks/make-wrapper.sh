# shellcheck shell=bash
# Stand-in for nixpkgs' makeWrapper / makeBinaryWrapper setup hook
# (pkgs/build-support/setup-hooks/make-wrapper.sh): the same functions and flags
# (--set, --set-default, --unset, --prefix, --suffix, --add-flags, --append-flags,
# --chdir, --argv0), always writing a bash wrapper (`#!` the stdenv's bash, as nixpkgs'
# makeWrapper writes its runtimeShell). wrapProgram moves PROG to
# .PROG-wrapped next to it, as nixpkgs does.

makeWrapper() {
  local original="$1" wrapper="$2"
  shift 2
  [ -x "$original" ] || { echo "makeWrapper: $original is not executable" >&2; return 1; }
  local flags_before="" flags_after="" argv0='"$0"' lines=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --set) lines+="export $2=$(printf '%q' "$3")"$'\n'; shift 3 ;;
      --set-default) lines+="export $2=\${$2-$(printf '%q' "$3")}"$'\n'; shift 3 ;;
      --unset) lines+="unset $2"$'\n'; shift 2 ;;
      --prefix)
        lines+="export $2=$(printf '%q' "$4")\${$2:+$(printf '%q' "$3")\$$2}"$'\n'; shift 4 ;;
      --suffix)
        lines+="export $2=\${$2:+\$$2$(printf '%q' "$3")}$(printf '%q' "$4")"$'\n'; shift 4 ;;
      --add-flags) flags_before+=" $2"; shift 2 ;;
      --add-flag) flags_before+=" $(printf '%q' "$2")"; shift 2 ;;
      --append-flags) flags_after+=" $2"; shift 2 ;;
      --chdir) lines+="cd $(printf '%q' "$2")"$'\n'; shift 2 ;;
      --argv0) argv0=$(printf '%q' "$2"); shift 2 ;;
      --inherit-argv0) argv0='"$0"'; shift ;;
      *) echo "makeWrapper: unsupported flag $1" >&2; return 1 ;;
    esac
  done
  mkdir -p "$(dirname "$wrapper")"
  {
    echo "#!@shell@ -e"
    printf '%s' "$lines"
    echo "exec -a $argv0 $(printf '%q' "$original")$flags_before \"\$@\"$flags_after"
  } > "$wrapper"
  chmod +x "$wrapper"
}

wrapProgram() {
  local prog="$1" hidden
  shift
  hidden="$(dirname "$prog")/.$(basename "$prog")-wrapped"
  while [ -e "$hidden" ]; do hidden="${hidden}_"; done
  mv "$prog" "$hidden"
  makeWrapper "$hidden" "$prog" --inherit-argv0 "$@"
}
