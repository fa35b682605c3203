# The stand-in package set: the attributes whalebox's flake, nix/*.nix and the template
# use, with nixpkgs' names and arguments, each built with `builtins.derivation` from the
# host's tools (see README.md). A fixed point, so `extend` applies overlays as nixpkgs'
# does.
{ system, host }:
let
  lib = import ./lib.nix;
  inherit (builtins)
    concatMap
    derivation
    functionArgs
    intersectAttrs
    isFunction
    isPath
    removeAttrs
    ;

  hostPath = "${host.toolchain}/bin:/usr/local/bin:/usr/bin:/bin";
  rustTarget =
    {
      x86_64-linux = "x86_64-unknown-linux-gnu";
      aarch64-linux = "aarch64-unknown-linux-gnu";
    }
    .${system};

  # A derivation that only runs a bash script, with host tools on PATH.
  script =
    name: text: env:
    derivation (
      {
        inherit name system;
        builder = "/bin/bash";
        args = [
          "-euc"
          text
        ];
        PATH = hostPath;
      }
      // env
    );

  # `stdenv`: the generic builder (stdenv/setup.sh) with the host's PATH filled in.
  stdenvOut =
    script "stdenv-standin"
      ''
        mkdir -p $out
        sed "s|@hostPath@|${hostPath}|" $setup > $out/setup
        cp $defaultBuilder $out/default-builder.sh
      ''
      {
        setup = ./stdenv/setup.sh;
        defaultBuilder = ./stdenv/default-builder.sh;
      };

  # A setup hook package: nix-support/setup-hook with @name@ substitutions.
  makeSetupHook =
    name: file: substitutions:
    script name ''
      mkdir -p $out/nix-support
      cp $hook $out/nix-support/setup-hook
      ${lib.concatMapStringsSep "\n" (
        k: "sed -i 's|@${k}@|${substitutions.${k}}|g' $out/nix-support/setup-hook"
      ) (builtins.attrNames substitutions)}
    '' { hook = file; };

  # nixpkgs' overrideAttrs accepts `prev: {…}` and `final: prev: {…}`.
  applyOverride =
    f: final: prev:
    let
      x = f prev;
    in
    if isFunction x then f final prev else x;

  mkDerivation =
    fArgs:
    let
      resolve = final: if isFunction fArgs then fArgs final else fArgs;
      attrs = resolve attrs;
      env = attrs.env or { };
      drvAttrs =
        removeAttrs attrs [
          "meta"
          "passthru"
          "env"
          "cargoLock"
          "buildType"
          "checkType"
        ]
        // env
        // {
          name = attrs.name or "${attrs.pname}-${attrs.version}";
          inherit system;
          builder = "/bin/bash";
          args = [
            "-e"
            "${stdenvOut}/default-builder.sh"
          ];
          stdenv = stdenvOut;
          outputs = [ "out" ];
          doCheck = attrs.doCheck or false;
          doInstallCheck = attrs.doInstallCheck or false;
        };
      drv = derivation drvAttrs;
    in
    drv
    // (attrs.passthru or { })
    // {
      meta = attrs.meta or { };
      inherit attrs;
      overrideAttrs = f: mkDerivation (final: resolve final // applyOverride f final (resolve final));
    };

  # A package made of host programs: bin/NAME symlinks to what the host has.
  hostTool =
    name: programs:
    (script name ''
      mkdir -p $out/bin
      for p in ${toString programs}; do
        path=$(command -v "$p") || { echo "stand-in ${name}: the host has no $p" >&2; exit 1; }
        ln -s "$path" $out/bin/$p
      done
    '' { })
    // {
      meta.mainProgram = builtins.head programs;
    };

  packages =
    self:
    let
      callPackage =
        fn: args:
        let
          f = if isPath fn then import fn else fn;
        in
        f (intersectAttrs (functionArgs f) self // args);
    in
    {
      inherit lib system callPackage;
      extend =
        overlay:
        let
          fixed = packages fixed // overlay fixed (packages fixed);
        in
        fixed;

      stdenv = {
        inherit mkDerivation;
        hostPlatform = {
          inherit system;
          isLinux = true;
          rust.rustcTarget = rustTarget;
        };
        buildPlatform.canExecute = _: true;
        cc.isGNU = true;
      };
      stdenvNoCC = self.stdenv;

      runCommand =
        name: env: buildCommand:
        mkDerivation ({ inherit name buildCommand; } // env);
      runCommandLocal = self.runCommand;
      writeText = name: text: script name ''printf '%s' "$text" > $out'' { inherit text; };
      writeShellApplication =
        {
          name,
          text,
          runtimeInputs ? [ ],
          meta ? { },
          ...
        }:
        (script name ''
          mkdir -p $out/bin
          {
            echo '#!/bin/bash'
            echo 'set -o errexit -o nounset -o pipefail'
            echo 'export PATH="${lib.makeBinPath runtimeInputs}:$PATH"'
            printf '%s\n' "$text"
          } > $out/bin/${name}
          chmod +x $out/bin/${name}
          bash -n $out/bin/${name}
        '' { inherit text; })
        // {
          meta = meta // {
            mainProgram = name;
          };
        };
      mkShell =
        {
          name ? "nix-shell",
          packages ? [ ],
          inputsFrom ? [ ],
          shellHook ? "",
          ...
        }@args:
        mkDerivation (
          removeAttrs args [
            "packages"
            "inputsFrom"
          ]
          // {
            inherit name;
            nativeBuildInputs =
              packages
              ++ (args.nativeBuildInputs or [ ])
              ++ concatMap (d: d.attrs.nativeBuildInputs or [ ]) inputsFrom;
            shellHook =
              lib.concatStringsSep "\n" (map (d: d.attrs.shellHook or "") inputsFrom) + "\n" + shellHook;
            buildCommand = ''echo "This derivation is for nix develop, not for nix build." > $out'';
          }
        );

      makeWrapper = makeSetupHook "make-shell-wrapper-hook" ./hooks/make-wrapper.sh { };
      makeBinaryWrapper = self.makeWrapper;
      installShellFiles = makeSetupHook "install-shell-files" ./hooks/install-shell-files.sh { };

      rustPlatform.buildRustPackage =
        args:
        assert !(args ? useFetchCargoVendor);
        mkDerivation (
          args
          // {
            nativeBuildInputs = (args.nativeBuildInputs or [ ]) ++ [ self.cargoHooks ];
            cargoBuildType = args.buildType or "release";
            cargoCheckType = args.checkType or args.buildType or "release";
            cargoLockFile = args.cargoLock.lockFile;
            doCheck = args.doCheck or true;
          }
        );
      cargoHooks = makeSetupHook "cargo-hooks" ./hooks/cargo.sh {
        inherit (host) cargoRegistry toolchain;
        inherit rustTarget;
      };

      # nixpkgs 25.11 builds zsh 5.9 from the same release tarball (plus six upstream
      # patches to configure, docs and pcre that the stand-in leaves out).
      zsh = mkDerivation {
        pname = "zsh";
        version = "5.9";
        src = host.zshTarball;
        patches = [ ];
        configureFlags = [
          "--with-tcsetpgrp"
          "--enable-zshenv=${placeholder "out"}/etc/zshenv"
          "--disable-gdbm"
          "--disable-pcre"
          "--disable-cap"
        ];
        installFlags = [ ];
        postInstall = ''
          rm -f $out/bin/zsh-5.9
        '';
        meta = {
          mainProgram = "zsh";
          description = "The Z shell";
        };
      };

      cargo = hostTool "cargo" [ "cargo" ];
      rustc = hostTool "rustc" [ "rustc" ];
      clippy = hostTool "clippy" [
        "cargo-clippy"
        "clippy-driver"
      ];
      rustfmt = hostTool "rustfmt" [
        "rustfmt"
        "cargo-fmt"
      ];
      nixfmt =
        script "nixfmt" ''
          mkdir -p $out/bin
          ln -s ${host.nixfmt} $out/bin/nixfmt
        '' { }
        // {
          meta.mainProgram = "nixfmt";
        };
      # nixpkgs' nixfmt-tree is treefmt configured with nixfmt for every *.nix file.
      nixfmt-tree = self.writeShellApplication {
        name = "treefmt";
        runtimeInputs = [
          self.nixfmt
          self.findutils
        ];
        text = ''
          if [ "$#" -eq 0 ]; then set -- .; fi
          find "$@" -name '*.nix' -not -path '*/.git/*' -exec nixfmt {} +
        '';
      };
      coreutils = hostTool "coreutils" [
        "ls"
        "cat"
        "cp"
        "mv"
        "rm"
        "mkdir"
        "touch"
        "echo"
        "env"
        "true"
        "false"
        "sort"
        "head"
        "tail"
        "wc"
        "tee"
        "id"
        "readlink"
        "realpath"
        "dirname"
        "basename"
        "mktemp"
        "chmod"
        "date"
        "sleep"
        "uname"
      ];
      findutils = hostTool "findutils" [
        "find"
        "xargs"
      ];
      gnugrep = hostTool "gnugrep" [ "grep" ];
      gnused = hostTool "gnused" [ "sed" ];
      gawk = hostTool "gawk" [ "awk" ];
      diffutils = hostTool "diffutils" [ "diff" ];
      gnutar = hostTool "gnutar" [ "tar" ];
      gzip = hostTool "gzip" [ "gzip" ];
      which = hostTool "which" [ "which" ];
      git = hostTool "git" [ "git" ];
      bashInteractive = hostTool "bash" [ "bash" ];
      python3 = hostTool "python3" [ "python3" ];
    };
in
let
  fixed = packages fixed;
in
fixed
