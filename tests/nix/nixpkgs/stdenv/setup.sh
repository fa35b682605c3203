# The stand-in's stdenv/setup: the generic builder of nixpkgs' stdenv
# (pkgs/stdenv/generic/setup.sh), cut down to what whalebox's derivations use: inputs
# on PATH with their setup hooks, runHook, and the phases unpack, patch, configure,
# build, check, install, fixup, installCheck (each replaceable by an attribute of the
# same name, with its pre/post hooks). Sourced by default-builder.sh, and by
# `nix develop` (its get-env.sh sources $stdenv/setup to capture the environment).
# Programs come from the stdenv's initial path (@initialPath@) and the inputs; bash is
# the builder and $SHELL, which nixpkgs passes to make (SHELL=...) so that Makefiles do
# not run their recipes with /bin/sh (busybox in the build sandbox).

: "${outputs:=out}"
export PATH="@initialPath@"
export SHELL="@shell@"
export SOURCE_DATE_EPOCH=315532800
export NIX_BUILD_CORES="${NIX_BUILD_CORES:-1}"
[ "$NIX_BUILD_CORES" = 0 ] && NIX_BUILD_CORES=$(nproc)

# Hooks: each name may be a string attribute (evaluated) and/or an array of functions
# that setup hooks registered (`postBuildHooks+=(f)`), as in nixpkgs.
runHook() {
  local name="$1" hooks="${1}Hooks" fn
  if declare -p "$hooks" >/dev/null 2>&1; then
    local -n list="$hooks"
    for fn in "${list[@]}"; do "$fn"; done
  fi
  if [ -n "${!name:-}" ]; then
    eval "${!name}"
  fi
  return 0
}

addToSearchPath() {
  local var="$1" dir="$2"
  [ -d "$dir" ] || return 0
  export "$var"="$dir${!var:+:${!var}}"
}

# Inputs: bin/ on PATH (later inputs first, like nixpkgs' order of precedence), then
# their nix-support/setup-hook sourced.
__activated=" "
activateInput() {
  local pkg="$1"
  case "$__activated" in *" $pkg "*) return 0 ;; esac
  __activated+="$pkg "
  addToSearchPath PATH "$pkg/bin"
  if [ -f "$pkg/nix-support/setup-hook" ]; then
    # shellcheck disable=SC1091
    source "$pkg/nix-support/setup-hook"
  fi
  if [ -f "$pkg/nix-support/propagated-build-inputs" ]; then
    local p
    for p in $(cat "$pkg/nix-support/propagated-build-inputs"); do activateInput "$p"; done
  fi
}

__inputs="${nativeBuildInputs:-} ${buildInputs:-} ${propagatedBuildInputs:-}"
[ -n "${doCheck:-}" ] && __inputs+=" ${nativeCheckInputs:-} ${checkInputs:-}"
[ -n "${doInstallCheck:-}" ] && __inputs+=" ${nativeInstallCheckInputs:-}"
for __input in $__inputs; do activateInput "$__input"; done
unset __input __inputs

unpackPhase() {
  runHook preUnpack
  if [ -d "$src" ]; then
    cp -r --no-preserve=mode "$src" source
    sourceRoot=source
  else
    mkdir unpack
    tar -xf "$src" -C unpack
    sourceRoot="unpack/$(ls unpack | head -1)"
  fi
  chmod -R u+w "$sourceRoot"
  cd "$sourceRoot"
  runHook postUnpack
}

patchPhase() {
  runHook prePatch
  local p
  for p in ${patches:-}; do
    echo "applying patch $p"
    patch -p1 --batch < "$p"
  done
  runHook postPatch
}

configurePhase() {
  runHook preConfigure
  if [ -x ./configure ]; then
    # shellcheck disable=SC2086
    ./configure --prefix="$out" ${configureFlags:-}
  fi
  runHook postConfigure
}

buildPhase() {
  runHook preBuild
  if [ -f Makefile ] || [ -f makefile ]; then
    # shellcheck disable=SC2086
    make -j"$NIX_BUILD_CORES" SHELL="$SHELL" ${makeFlags:-} ${buildFlags:-}
  fi
  runHook postBuild
}

checkPhase() {
  runHook preCheck
  # shellcheck disable=SC2086
  make SHELL="$SHELL" ${makeFlags:-} ${checkFlags:-} check
  runHook postCheck
}

installPhase() {
  runHook preInstall
  # shellcheck disable=SC2086
  make SHELL="$SHELL" ${makeFlags:-} ${installFlags:-} install
  runHook postInstall
}

fixupPhase() {
  runHook preFixup
  runHook postFixup
}

installCheckPhase() {
  runHook preInstallCheck
  runHook postInstallCheck
}

# Run `phase`: the attribute of that name when the derivation sets one, else the
# default function above.
runPhase() {
  local phase="$1"
  echo "@nix { \"action\": \"setPhase\", \"phase\": \"$phase\" }" >&2
  echo "running $phase" >&2
  if [ -n "${!phase:-}" ]; then
    eval "${!phase}"
  else
    "$phase"
  fi
}

genericBuild() {
  if [ -n "${buildCommand:-}" ]; then
    eval "$buildCommand"
    return
  fi
  local phase
  for phase in unpackPhase patchPhase configurePhase buildPhase checkPhase installPhase \
               fixupPhase installCheckPhase; do
    case "$phase" in
      checkPhase) [ -n "${doCheck:-}" ] || continue ;;
      installCheckPhase) [ -n "${doInstallCheck:-}" ] || continue ;;
    esac
    # Phases run in the builder's shell, so `cd` in unpackPhase carries over.
    runPhase "$phase"
  done
}
