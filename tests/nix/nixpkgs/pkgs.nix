# The stand-in package set: the attributes whalebox's flake, nix/*.nix and the template
# use, with nixpkgs' names and arguments, each built with `builtins.derivation` (see
# README.md). A fixed point, so `extend` applies overlays as nixpkgs' does.
#
# Builds run in Nix's own build sandbox (tests/nix/run sets `sandbox = relaxed`), as a
# real Nix build does: a build sees its inputs' store paths, busybox as /bin/sh, the
# host's shared libraries and C headers (what nixpkgs' glibc, gcc and ncurses inputs
# bring), the Rust toolchain and crates, and nothing else of the host: no /usr/bin, no
# /bin/true or /bin/bash, no /etc/passwd but Nix's own. Its programs come from the
# bootstrap below, through its inputs, exactly as in nixpkgs.
{ system, host }:
let
  lib = import ./lib.nix;
  inherit (builtins)
    concatMap
    derivation
    functionArgs
    head
    intersectAttrs
    isFunction
    isPath
    removeAttrs
    ;

  rustTarget =
    {
      x86_64-linux = "x86_64-unknown-linux-gnu";
      aarch64-linux = "aarch64-unknown-linux-gnu";
    }
    .${system};

  # The bootstrap: host programs copied into the store, the stand-in's version of the
  # bootstrap tools nixpkgs fetches. These are the only derivations built outside the
  # sandbox (`__noChroot`): a program that a build needs and does not get through its
  # inputs is missing there, as it would be in a real build. `extra` runs after the
  # copies (links, a setup hook).
  hostTool =
    name: programs: extra:
    derivation {
      inherit name system;
      builder = "/bin/bash";
      __noChroot = true;
      # Debian's programs, not a user's (pyenv shims, ~/.cargo/bin).
      PATH = "/usr/sbin:/usr/bin:/sbin:/bin";
      args = [
        "-euc"
        ''
          mkdir -p $out/bin
          for p in ${toString programs}; do
            path=$(type -P "$p") || { echo "stand-in ${name}: the host has no $p" >&2; exit 1; }
            cp -L "$path" "$out/bin/$p"
          done
          ${extra}
        ''
      ];
    }
    // {
      meta.mainProgram = head programs;
    };

  # The Rust toolchain is not copied (rustc finds its libraries next to itself): its
  # programs are links into the host's sysroot, which the sandbox binds at its own path.
  toolchainTool =
    name: programs:
    derivation {
      inherit name system;
      builder = "${bootstrap.bash}/bin/bash";
      PATH = "${bootstrap.coreutils}/bin";
      args = [
        "-euc"
        ''
          mkdir -p $out/bin
          for p in ${toString programs}; do
            [ -x "${host.toolchain}/bin/$p" ] || { echo "stand-in ${name}: the toolchain has no $p" >&2; exit 1; }
            ln -s "${host.toolchain}/bin/$p" "$out/bin/$p"
          done
        ''
      ];
    }
    // {
      meta.mainProgram = head programs;
    };

  bootstrap = {
    # nixpkgs' bash has bin/sh too: `sh` on a build's PATH is bash, `/bin/sh` is busybox.
    bash = hostTool "bash" [ "bash" ] "ln -s bash $out/bin/sh";
    coreutils = hostTool "coreutils" [
      "arch"
      "b2sum"
      "base32"
      "base64"
      "basename"
      "basenc"
      "cat"
      "chgrp"
      "chmod"
      "chown"
      "cksum"
      "comm"
      "cp"
      "csplit"
      "cut"
      "date"
      "dd"
      "df"
      "dirname"
      "du"
      "echo"
      "env"
      "expand"
      "expr"
      "factor"
      "false"
      "fmt"
      "fold"
      "groups"
      "head"
      "id"
      "install"
      "join"
      "link"
      "ln"
      "logname"
      "ls"
      "md5sum"
      "mkdir"
      "mkfifo"
      "mknod"
      "mktemp"
      "mv"
      "nice"
      "nl"
      "nohup"
      "nproc"
      "numfmt"
      "od"
      "paste"
      "pathchk"
      "printenv"
      "printf"
      "pwd"
      "readlink"
      "realpath"
      "rm"
      "rmdir"
      "seq"
      "sha1sum"
      "sha256sum"
      "sha512sum"
      "shuf"
      "sleep"
      "sort"
      "split"
      "stat"
      "stty"
      "sum"
      "sync"
      "tac"
      "tail"
      "tee"
      "test"
      "timeout"
      "touch"
      "tr"
      "true"
      "truncate"
      "tsort"
      "tty"
      "uname"
      "unexpand"
      "uniq"
      "unlink"
      "wc"
      "whoami"
      "yes"
    ] "ln -s test $out/bin/[";
    findutils = hostTool "findutils" [
      "find"
      "xargs"
    ] "";
    diffutils = hostTool "diffutils" [
      "diff"
      "cmp"
      "diff3"
    ] "";
    gnused = hostTool "gnused" [ "sed" ] "";
    gnugrep = hostTool "gnugrep" [
      "grep"
      "egrep"
      "fgrep"
    ] "";
    gawk = hostTool "gawk" [ "awk" ] "";
    gnutar = hostTool "gnutar" [ "tar" ] "";
    gzip = hostTool "gzip" [ "gzip" ] "";
    bzip2 = hostTool "bzip2" [ "bzip2" ] "";
    xz = hostTool "xz" [ "xz" ] "";
    gnumake = hostTool "gnumake" [ "make" ] "";
    gnupatch = hostTool "gnupatch" [ "patch" ] "";
    # Debian's gcc finds cc1 and its crt files under its own prefix (/usr/lib/gcc),
    # relative to where it runs from; copied, it is told where that prefix is, by a
    # wrapper script as nixpkgs' cc-wrapper is one.
    gcc =
      hostTool "gcc"
        [
          "gcc"
          "cpp"
        ]
        ''
          mkdir -p $out/libexec
          for p in gcc cpp; do
            mv $out/bin/$p $out/libexec/$p
            printf '#!%s\nexport GCC_EXEC_PREFIX=/usr/lib/gcc/\nexec %s "$@"\n' \
              ${bootstrap.bash}/bin/bash $out/libexec/$p > $out/bin/$p
            chmod +x $out/bin/$p
          done
          ln -s gcc $out/bin/cc
        '';
    binutils = hostTool "binutils" [
      "as"
      "ld"
      "ar"
      "ranlib"
      "nm"
      "strip"
      "objcopy"
      "objdump"
      "readelf"
    ] "";
  };

  # nixpkgs' stdenv: these programs on every build's PATH (its initialPath, plus the
  # C compiler), bash as the builder and as $SHELL.
  initialPath = with bootstrap; [
    coreutils
    findutils
    diffutils
    gnused
    gnugrep
    gawk
    gnutar
    gzip
    bzip2
    xz
    gnumake
    bash
    gnupatch
    gcc
    binutils
  ];
  shell = "${bootstrap.bash}/bin/bash";

  # A derivation that only runs a bash script, with the stdenv's programs on PATH.
  script =
    name: text: env:
    derivation (
      {
        inherit name system;
        builder = shell;
        args = [
          "-euc"
          text
        ];
        PATH = lib.makeBinPath initialPath;
      }
      // env
    );

  # `stdenv`: the generic builder (stdenv/setup.sh) with the initial PATH filled in.
  stdenvOut =
    script "stdenv-standin"
      ''
        mkdir -p $out
        sed -e "s|@initialPath@|${lib.makeBinPath initialPath}|" -e "s|@shell@|${shell}|" $setup > $out/setup
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
          builder = shell;
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
    # The bootstrap's programs are packages too (bash, coreutils, gcc, …).
    bootstrap
    // {
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
            echo '#!${shell}'
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

      makeWrapper = makeSetupHook "make-shell-wrapper-hook" ./hooks/make-wrapper.sh { inherit shell; };
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

      # What nixpkgs' rustPlatform and the default devShell bring: the host's toolchain.
      cargo = toolchainTool "cargo" [ "cargo" ];
      rustc = toolchainTool "rustc" [ "rustc" ];
      clippy = toolchainTool "clippy" [
        "cargo-clippy"
        "clippy-driver"
      ];
      rustfmt = toolchainTool "rustfmt" [
        "rustfmt"
        "cargo-fmt"
      ];
      nixfmt =
        script "nixfmt" ''
          mkdir -p $out/bin
          cp ${host.nixfmt} $out/bin/nixfmt
        '' { __noChroot = true; }
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
      # nixpkgs' dockerTools.buildLayeredImage builds an image tarball: a layer per store
      # path of the closure, and a customisation layer whose root is `contents` linked
      # into / (symlinkJoin), then changed by `extraCommands` and by `fakeRootCommands`
      # under fakeroot. The stand-in builds no image. It refuses an argument nixpkgs does
      # not take, makes the customisation layer's root the same way and runs both scripts
      # in it, with chown and chgrp recorded instead of run (no fakeroot here; the builder
      # is uid 1000), and writes out what a test can check: root/ (that root),
      # ownership (the recorded changes), modes.txt, config.json, contents.
      dockerTools.buildLayeredImage =
        args:
        let
          known = [
            "name"
            "tag"
            "fromImage"
            "contents"
            "config"
            "architecture"
            "created"
            "mtime"
            "uid"
            "gid"
            "uname"
            "gname"
            "maxLayers"
            "extraCommands"
            "fakeRootCommands"
            "enableFakechroot"
            "includeStorePaths"
            "includeNixDB"
            "passthru"
            "meta"
            "compressor"
          ];
          unknown = builtins.filter (n: !builtins.elem n known) (builtins.attrNames args);
        in
        if unknown != [ ] then
          throw "stand-in dockerTools.buildLayeredImage: nixpkgs takes no argument ${toString unknown}"
        else
          script "docker-image-${args.name}.tar.gz"
            ''
              root=$PWD/root
              mkdir -p $root $out
              # symlinkJoin's lndir: directories made, files linked, the first path wins.
              for p in $contents; do
                ( cd "$p"
                  find . -mindepth 1 -type d -printf '%P\n' | while IFS= read -r d; do mkdir -p "$root/$d"; done
                  find . -mindepth 1 ! -type d -printf '%P\n' | while IFS= read -r f; do
                    [ -e "$root/$f" ] || [ -L "$root/$f" ] || ln -s "$p/$f" "$root/$f"
                  done )
              done
              cd $root
              eval "$extraCommands"
              touch $out/ownership
              chown() { echo "chown $*" >> $out/ownership; }
              chgrp() { echo "chgrp $*" >> $out/ownership; }
              eval "$fakeRootCommands"
              unset -f chown chgrp
              find . -mindepth 1 \( -type l -printf '%M %P -> %l\n' \) -o -printf '%M %P\n' | sort > $out/modes.txt
              cd ..
              cp -a root $out/root
              printf '%s' "$configJson" > $out/config.json
              printf '%s\n' $contents > $out/contents
            ''
            {
              contents = args.contents or [ ];
              extraCommands = args.extraCommands or "";
              fakeRootCommands = args.fakeRootCommands or "";
              configJson = builtins.toJSON (args.config or { });
            }
          // {
            imageName = args.name;
            imageTag = args.tag or "latest";
          };
      # nixpkgs' cacert: the Mozilla bundle as etc/ssl/certs/ca-bundle.crt (here the host's).
      cacert =
        script "cacert"
          ''
            mkdir -p $out/etc/ssl/certs
            cp /etc/ssl/certs/ca-certificates.crt $out/etc/ssl/certs/ca-bundle.crt
          ''
          {
            __noChroot = true;
          };
      tini = hostTool "tini" [ "tini" ] "";
      which = hostTool "which" [ "which" ] "";
      git = hostTool "git" [ "git" ] "";
      curl = hostTool "curl" [ "curl" ] "";
      bashInteractive = bootstrap.bash;
      python3 = hostTool "python3" [ "python3" ] "";
      util-linux = hostTool "util-linux" [
        "setsid"
        "flock"
      ] "";
    };
in
let
  fixed = packages fixed;
in
fixed
