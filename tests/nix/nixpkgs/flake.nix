# A small offline stand-in for nixpkgs, for testing whalebox's flake on machines that
# reach neither GitHub nor cache.nixos.org and run Nix 2.8 (which cannot evaluate real
# nixpkgs). Used only through `--override-input nixpkgs path:tests/nix/nixpkgs`; what
# it proves and what it does not is in README.md. host/host.nix (written by
# tests/nix/run) says where the host's tools are.
{
  description = "offline stand-in for the parts of nixpkgs whalebox uses";

  outputs =
    { self }:
    let
      host = import ./host/host.nix;
      forSystem = system: import ./pkgs.nix { inherit system host; };
    in
    {
      lib = import ./lib.nix;
      legacyPackages = {
        x86_64-linux = forSystem "x86_64-linux";
        aarch64-linux = forSystem "aarch64-linux";
      };

      # Not nixpkgs: the stand-in's own checks (tests/nix/run), that its builds really
      # run as in Nix's build sandbox.
      selfTest = {
        x86_64-linux = import ./self-test.nix { pkgs = forSystem "x86_64-linux"; };
      };
    };
}
