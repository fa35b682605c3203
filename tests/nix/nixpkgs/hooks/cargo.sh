# shellcheck shell=bash
# Stand-in for rustPlatform's hooks (pkgs/build-support/rust/hooks/): cargoSetupHook,
# cargoBuildHook, cargoCheckHook and cargoInstallHook, with nixpkgs' command lines:
#   cargo build -j N --target TRIPLE --offline --profile release  [cargoBuildFlags]
#   cargo test  -j N --profile release --target TRIPLE --offline [cargoTestFlags] -- [checkFlags]
# and binaries installed from target/TRIPLE/release as they were after the build.
# Where nixpkgs vendors the crates named by Cargo.lock (importCargoLock), the stand-in
# builds offline against the host's cargo registry cache (@cargoRegistry@).

# rustPlatform brings cargo and rustc: here the host's toolchain, bound into the sandbox.
export PATH="@toolchain@/bin:$PATH"

cargoSetupHook() {
  export CARGO_HOME="$TMPDIR/cargo-home"
  mkdir -p "$CARGO_HOME"
  ln -sfn "@cargoRegistry@" "$CARGO_HOME/registry"
  export RUSTC="@toolchain@/bin/rustc"
  # nixpkgs refuses a source whose Cargo.lock differs from the one it vendored.
  if ! cmp -s Cargo.lock "$cargoLockFile"; then
    echo "ERROR: cargoLock.lockFile ($cargoLockFile) is not the source's Cargo.lock" >&2
    return 1
  fi
}

cargoBuildHook() {
  runHook preBuild
  export "CARGO_PROFILE_${cargoBuildType^^}_STRIP"=false
  local flags=(-j "$NIX_BUILD_CORES" --target "@rustTarget@" --offline)
  [ "$cargoBuildType" != debug ] && flags+=(--profile "$cargoBuildType")
  # shellcheck disable=SC2206
  flags+=(${cargoBuildFlags:-})
  echo "cargoBuildHook flags: ${flags[*]}"
  cargo build "${flags[@]}"
  # As cargoInstallPostBuildHook: remember the binaries now, before tests build more.
  local dir="target/@rustTarget@/$cargoBuildType"
  rm -rf "$dir-tmp" && mkdir -p "$dir-tmp"
  find "$dir" -maxdepth 1 -type f -executable -exec cp -p {} "$dir-tmp/" \;
  runHook postBuild
}

cargoCheckHook() {
  runHook preCheck
  export RUST_TEST_THREADS="$NIX_BUILD_CORES"
  local flags=(-j "$NIX_BUILD_CORES")
  [ "$cargoCheckType" != debug ] && flags+=(--profile "$cargoCheckType")
  flags+=(--target "@rustTarget@" --offline)
  # shellcheck disable=SC2206
  flags+=(${cargoTestFlags:-} -- ${checkFlags:-})
  echo "cargoCheckHook flags: ${flags[*]}"
  cargo test "${flags[@]}"
  runHook postCheck
}

cargoInstallHook() {
  runHook preInstall
  mkdir -p "$out/bin"
  cp -p "target/@rustTarget@/$cargoBuildType-tmp/"* "$out/bin/"
  runHook postInstall
}

postUnpackHooks+=(cargoSetupHook)
[ -z "${buildPhase:-}" ] && buildPhase=cargoBuildHook
[ -z "${checkPhase:-}" ] && checkPhase=cargoCheckHook
[ -z "${installPhase:-}" ] && installPhase=cargoInstallHook
[ -z "${configurePhase:-}" ] && configurePhase=true
true
