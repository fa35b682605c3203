# shellcheck shell=bash
# Stand-in for nixpkgs' installShellFiles setup hook
# (pkgs/by-name/in/installShellFiles/setup-hook.sh): installShellCompletion with
# --cmd/--name and --bash/--zsh/--fish (paths or process substitutions), and
# installManPage (section from the file name's suffix); empty files are errors.

installShellCompletion() {
  local shell="" cmd="" name="" arg dest file
  while [ $# -gt 0 ]; do
    arg="$1"
    shift
    case "$arg" in
      --bash | --zsh | --fish) shell="${arg#--}"; continue ;;
      --cmd) cmd="$1"; shift; continue ;;
      --name) name="$1"; shift; continue ;;
    esac
    [ -s "$arg" ] || [ -p "$arg" ] || { echo "installShellCompletion: $arg does not exist or has zero size" >&2; return 1; }
    [ -n "$shell" ] || { echo "installShellCompletion: no shell given for $arg" >&2; return 1; }
    if [ -z "$name" ]; then
      [ -n "$cmd" ] || { echo "installShellCompletion: $arg needs --cmd or --name" >&2; return 1; }
      case "$shell" in
        bash) name="$cmd.bash" ;;
        zsh) name="_$cmd" ;;
        fish) name="$cmd.fish" ;;
      esac
    fi
    case "$shell" in
      bash) dest="$out/share/bash-completion/completions" ;;
      zsh) dest="$out/share/zsh/site-functions" ;;
      fish) dest="$out/share/fish/vendor_completions.d" ;;
    esac
    mkdir -p "$dest"
    file="$dest/$name"
    cat "$arg" > "$file"
    [ -s "$file" ] || { echo "installShellCompletion: $file has zero size" >&2; return 1; }
    name=""
  done
}

installManPage() {
  local page section
  for page in "$@"; do
    [ -s "$page" ] || { echo "installManPage: $page does not exist or has zero size" >&2; return 1; }
    section="${page##*.}"
    [ "$section" = gz ] && { section="${page%.gz}"; section="${section##*.}"; }
    mkdir -p "$out/share/man/man$section"
    install -m 0644 "$page" "$out/share/man/man$section/"
  done
}
