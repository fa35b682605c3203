{
  description = "whalebox: the hands of an LLM coding agent, fenced in (MCP tools, a gated zsh, Landlock)";

  # One input. Keep the ref equal to flake.lock's original.ref.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.11";

  outputs =
    { self, nixpkgs }:
    let
      inherit (nixpkgs) lib;

      # Landlock, the exec boundary and the task supervisor are Linux-only: there is no
      # darwin package (macOS has no Landlock; the sandbox would be a different product).
      systems = [
        "x86_64-linux"
        "aarch64-linux"
      ];
      forAllSystems = f: lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});

      packagesFor = pkgs: rec {
        zsh-gated = pkgs.callPackage ./nix/zsh.nix { };
        whalebox = pkgs.callPackage ./nix/package.nix { inherit zsh-gated; };
        default = whalebox;
        # The container image (dockerTools.buildLayeredImage; docs/src/container.md).
        image = pkgs.callPackage ./nix/image.nix { inherit whalebox zsh-gated; };
      };

      # whalebox's own repository, fenced like any other (devShells.sandbox).
      sandboxFor =
        pkgs:
        self.lib.mkSandbox {
          inherit pkgs;
          profile = ./policies/profiles/sandbox.toml;
          policy = ./policies/dev.toml;
          packages = with pkgs; [
            coreutils
            findutils
            gnugrep
            gnused
            gawk
            diffutils
            gnutar
            gzip
            which
            git
          ];
        };

      # The .nix files, for the formatting check: names relative to the source, which the
      # check enters. (Path values passed through lib.escapeShellArgs would become plain
      # strings without store context on the pinned lib: not inputs of the build, so
      # absent from its sandbox.)
      nixFiles = [
        "flake.nix"
        "nix/package.nix"
        "nix/zsh.nix"
        "nix/image.nix"
        "nix/lib.nix"
        "nix/template/flake.nix"
      ];
    in
    {
      packages = forAllSystems packagesFor;

      apps = forAllSystems (pkgs: {
        default = {
          type = "app";
          program = lib.getExe self.packages.${pkgs.stdenv.hostPlatform.system}.whalebox;
        };
      });

      overlays.default = final: prev: {
        zsh-gated = final.callPackage ./nix/zsh.nix { };
        whalebox = final.callPackage ./nix/package.nix { };
      };

      lib = import ./nix/lib.nix {
        whaleboxFor = system: self.packages.${system}.whalebox;
      };

      devShells = forAllSystems (
        pkgs:
        let
          own = self.packages.${pkgs.stdenv.hostPlatform.system};
        in
        {
          # Hacking on whalebox: the Rust toolchain, the gated zsh the tests run, the
          # formatter and the MCP tests' Python.
          default = pkgs.mkShell {
            inputsFrom = [ own.whalebox ];
            packages = with pkgs; [
              cargo
              rustc
              clippy
              rustfmt
              nixfmt
              python3
              git
            ];
            WHALEBOX_ZSH = lib.getExe own.zsh-gated;
          };
          sandbox = (sandboxFor pkgs).devShell;
        }
      );

      checks = forAllSystems (
        pkgs:
        let
          own = self.packages.${pkgs.stdenv.hostPlatform.system};
        in
        {
          # The package builds and passes its tests; zsh-gated passes zsh's own suite; the
          # image builds.
          inherit (own) whalebox zsh-gated image;
          # The overlay gives the same packages to a nixpkgs that applies it.
          overlay = (pkgs.extend self.overlays.default).whalebox;
          # Every shipped policy loads and its match/not_match examples hold.
          policies = pkgs.runCommand "whalebox-policies-check" { } ''
            ${lib.getExe own.whalebox} policy test ${./policies}/*.toml
            touch $out
          '';
          # Every example profile loads (paths relative to a copy of the repository).
          profiles = pkgs.runCommand "whalebox-profiles-check" { } ''
            # The workspace apart from HOME: whalebox refuses a profile whose commands could
            # write its own state (the checkpoint store under HOME).
            export HOME=$TMPDIR/home
            mkdir -p "$HOME" work
            cp -r ${./policies} policies && chmod -R u+w policies
            for profile in policies/profiles/*.toml; do
              echo "profile check $profile"
              ${lib.getExe own.whalebox} profile check "$profile" --workspace work --files-only > /dev/null
            done
            touch $out
          '';
          # whalebox's own sandbox devShell: its profile and policy check as any user's do.
          sandbox = (sandboxFor pkgs).check;
          formatting = pkgs.runCommand "whalebox-nix-formatting" { } ''
            cd ${./.}
            ${lib.getExe pkgs.nixfmt} --check ${lib.escapeShellArgs nixFiles}
            touch $out
          '';
        }
      );

      formatter = forAllSystems (pkgs: pkgs.nixfmt-tree);

      templates.default = {
        path = ./nix/template;
        description = "A repository whose CI jobs and agents run inside whalebox's sandbox";
        welcomeText = ''
          Next: edit whalebox.toml (what the sandbox may touch) and policies/project.toml
          (which programs may run), then `nix flake check` and `nix develop .#sandbox`.
        '';
      };
    };
}
