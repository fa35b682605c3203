# whalebox: the MCP server and its exec gate, wrapped so it finds the gated zsh in the
# store without any profile key, with shell completions, man pages and the JSON Schemas
# of its profile and policy files.
{
  lib,
  rustPlatform,
  installShellFiles,
  makeBinaryWrapper,
  zsh-gated,
  curl,
  git,
  python3,
  util-linux,
}:

let
  cargoToml = lib.importTOML ../Cargo.toml;
in
rustPlatform.buildRustPackage {
  pname = "whalebox";
  inherit (cargoToml.package) version;

  # Only what the build and its Rust tests read: editing the README, the flake or the
  # Python, Nix and container test harnesses does not rebuild whalebox.
  src = lib.fileset.toSource {
    root = ../.;
    fileset =
      lib.fileset.difference
        (lib.fileset.unions [
          ../Cargo.toml
          ../Cargo.lock
          ../crates
          ../src
          ../tests
          ../bench
          ../policies
        ])
        (
          lib.fileset.unions [
            ../tests/mcp
            ../tests/nix
            ../tests/container
          ]
        );
  };
  cargoLock.lockFile = ../Cargo.lock;

  nativeBuildInputs = [
    installShellFiles
    makeBinaryWrapper
  ];

  # The tests run the real binaries against real files, processes, PTYs, the gated zsh
  # and (where the builder's kernel has it) Landlock. The programs they start come from
  # here and the stdenv (no /usr/bin in the build sandbox): git for repositories, python3
  # for scripted servers and children, setsid for detached processes, curl for the
  # network fence's commands.
  nativeCheckInputs = [
    curl
    git
    python3
    util-linux
    zsh-gated
  ];
  preCheck = ''
    export HOME=$(mktemp -d)
    export WHALEBOX_ZSH=${lib.getExe zsh-gated}
    # The toolchain-preset tests run cargo, npm, pip, go and nix against registries on
    # loopback and the machine's Nix; the build sandbox has none of them (tests/run
    # runs them). They skip, saying so.
    export WHALEBOX_SKIP_TOOLCHAIN_TESTS=1
  '';
  # The tests build in the debug profile: in release every test binary is linked with
  # thin LTO, which took 9 minutes of a 2-core CI machine against 3 for a debug build.
  checkType = "debug";
  # The library crates' own tests too (crates/: whalebox-text, whalebox-edit).
  cargoTestFlags = [ "--workspace" ];
  # Every test runs here too: they find programs on PATH (not at FHS paths the build
  # sandbox lacks) and the gated zsh through WHALEBOX_ZSH; Landlock tests skip, saying
  # so, on a builder whose kernel has no Landlock.

  postInstall = ''
    installShellCompletion --cmd whalebox \
      --bash <($out/bin/whalebox completions bash) \
      --zsh <($out/bin/whalebox completions zsh) \
      --fish <($out/bin/whalebox completions fish)
    $out/bin/whalebox man --dir man
    installManPage man/*.1
    mkdir -p $out/share/whalebox
    $out/bin/whalebox profile schema > $out/share/whalebox/profile.schema.json
    $out/bin/whalebox policy schema > $out/share/whalebox/policy.schema.json
    cp -r policies $out/share/whalebox/policies
    wrapProgram $out/bin/whalebox --set-default WHALEBOX_ZSH ${lib.getExe zsh-gated}
  '';

  # The installed, wrapped program finds the gated zsh by itself, and its policy decides.
  doInstallCheck = true;
  installCheckPhase = ''
    runHook preInstallCheck
    export HOME=$(mktemp -d)
    ws=$(mktemp -d)
    $out/bin/whalebox doctor --workspace "$ws" | tee doctor.txt
    grep -q "gated zsh:  ${lib.getExe zsh-gated}" doctor.txt
    $out/bin/whalebox call shell_run --workspace "$ws" \
      --args '{"command": "echo gated > made.txt && cat made.txt"}' | tee result.json
    grep -q '"ok":true' result.json
    [ "$(cat "$ws/made.txt")" = gated ]
    runHook postInstallCheck
  '';

  meta = {
    description = "The hands of an LLM coding agent: exact, fenced-in file, search, edit and shell tools over MCP";
    longDescription = ''
      whalebox serves file, search, edit and shell tools to an LLM agent over MCP. Every
      command runs in a patched zsh whose execs a versioned policy decides, inside Linux
      Landlock fences; the same sandbox runs CI jobs (`whalebox run -- CMD`).
    '';
    homepage = "https://github.com/whalebox/whalebox";
    license = with lib.licenses; [
      mit
      asl20
    ];
    mainProgram = "whalebox";
    # Landlock, the exec boundary and the task supervisor are Linux-only.
    platforms = lib.platforms.linux;
  };
}
