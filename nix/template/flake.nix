{
  description = "A repository whose CI jobs and agents run inside whalebox's sandbox";

  inputs = {
    whalebox.url = "github:whalebox/whalebox";
    nixpkgs.follows = "whalebox/nixpkgs";
  };

  outputs =
    {
      self,
      nixpkgs,
      whalebox,
    }:
    let
      systems = [
        "x86_64-linux"
        "aarch64-linux"
      ];
      forAllSystems =
        f:
        nixpkgs.lib.genAttrs systems (
          system:
          let
            pkgs = nixpkgs.legacyPackages.${system};
          in
          f (
            whalebox.lib.mkSandbox {
              inherit pkgs;
              # The command is `sandbox`: `sandbox run -- CMD`, `sandbox shell`, `sandbox serve`.
              name = "sandbox";
              profile = ./whalebox.toml;
              policy = ./policies/project.toml;
              # What the project's jobs need inside the sandbox.
              packages = with pkgs; [
                coreutils
                gnugrep
                gnused
                git
              ];
            }
          )
        );
    in
    {
      packages = forAllSystems (sandbox: {
        default = sandbox.package;
      });
      apps = forAllSystems (sandbox: {
        default = sandbox.app;
      });
      devShells = forAllSystems (sandbox: {
        default = sandbox.devShell;
        sandbox = sandbox.devShell;
      });
      # `nix flake check` fails when the profile does not load or a policy example breaks.
      checks = forAllSystems (sandbox: {
        sandbox-policy = sandbox.check;
      });
    };
}
