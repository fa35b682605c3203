# lib.mkSandbox: whalebox with a repository's own profile and policy baked in, for
# other flakes. It returns the repository's command (`NAME serve`, `NAME run -- CMD`,
# `NAME shell`), a devShell with it and the given packages, an app, and a check that
# fails `nix flake check` when the profile does not load or a policy's match/not_match
# examples stop holding.
#
# The profile and the policy's directory are copied to the store; relative paths in the
# profile mean the workspace, i.e. the directory the command runs in (the wrapper sets
# WHALEBOX_RELATIVE_TO=workspace), and a policy's `include`s are resolved next to it
# (keep included files in the policy's directory).
{ whaleboxFor }:

{
  mkSandbox =
    {
      pkgs,
      profile,
      policy ? null,
      packages ? [ ],
      name ? "sandbox",
      whalebox ? whaleboxFor pkgs.stdenv.hostPlatform.system,
    }:
    let
      inherit (pkgs) lib;
      profileFile = builtins.path {
        path = profile;
        name = baseNameOf profile;
      };
      policyDir = builtins.path {
        path = dirOf policy;
        name = "${name}-policies";
      };
      policyFile = "${policyDir}/${baseNameOf policy}";

      package =
        pkgs.runCommand name
          {
            nativeBuildInputs = [ pkgs.makeBinaryWrapper ];
            meta = {
              description = "whalebox with ${baseNameOf profile} baked in";
              mainProgram = name;
            };
          }
          ''
            makeWrapper ${lib.getExe whalebox} $out/bin/${name} \
              --set WHALEBOX_PROFILE ${profileFile} \
              --set WHALEBOX_RELATIVE_TO workspace \
              ${lib.optionalString (policy != null) "--set WHALEBOX_POLICY ${policyFile}"}
          '';

      devShell = pkgs.mkShell {
        name = "${name}-shell";
        packages = [
          package
          whalebox
        ]
        ++ packages;
        # Entered interactively (not `nix develop -c CMD`), the devShell is the sandbox's
        # own shell; WHALEBOX_NO_SHELL=1 keeps the plain one.
        shellHook = ''
          if [[ $- == *i* ]] && [ -z "''${WHALEBOX_NO_SHELL:-}" ] && [ -z "''${WHALEBOX_GATE_SOCKET:-}" ]; then
            exec ${name} shell
          fi
        '';
      };

      app = {
        type = "app";
        program = lib.getExe package;
      };

      check =
        pkgs.runCommand "${name}-check"
          {
            nativeBuildInputs = [ whalebox ];
          }
          ''
            export HOME=$TMPDIR
            mkdir workspace && cd workspace
            whalebox profile check ${profileFile} --relative-to workspace --files-only \
              ${lib.optionalString (policy != null) "--policy ${policyFile}"} > /dev/null
            ${lib.optionalString (policy != null) "whalebox policy test ${policyFile}"}
            touch $out
          '';
    in
    {
      inherit
        package
        devShell
        app
        check
        ;
    };
}
