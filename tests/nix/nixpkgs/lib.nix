# The part of nixpkgs' `lib` that whalebox's flake, package and template use, with the
# names, arguments and results of nixpkgs' own (lib/attrsets.nix, lib/lists.nix,
# lib/strings.nix, lib/meta.nix, lib/sources.nix, lib/fileset, lib/licenses.nix,
# lib/systems). Written for Nix 2.8, which cannot evaluate the real lib.
let
  inherit (builtins)
    attrNames
    concatStringsSep
    filter
    foldl'
    isList
    listToAttrs
    map
    match
    replaceStrings
    stringLength
    substring
    ;

  hasPrefix = pre: s: substring 0 (stringLength pre) s == pre;

  escapeShellArg =
    arg:
    let
      s = toString arg;
    in
    if match "[[:alnum:],._+:@%/-]+" s != null then s else "'${replaceStrings [ "'" ] [ "'\\''" ] s}'";

  getBin = drv: drv.bin or drv.out or drv;

  fileset = {
    # A file set is a list of paths here; nixpkgs' is a richer value, used the same way.
    # A file set here is the paths it includes and the paths it then excludes.
    unions = paths: {
      _include = paths;
      _exclude = [ ];
    };
    difference = positive: negative: {
      _include = positive._include;
      _exclude = positive._exclude ++ negative._include;
    };
    maybeMissing = path: path;
    toSource =
      { root, fileset }:
      let
        strs = paths: map toString (filter builtins.pathExists paths);
        included = strs fileset._include;
        excluded = strs fileset._exclude;
        rootStr = toString root;
        under = dir: path: path == dir || hasPrefix (dir + "/") path;
        # Keep a path in the set (or a directory on the way to one), unless excluded.
        keep =
          path: _type:
          !(builtins.any (no: under no path) excluded)
          && builtins.any (want: under want path || hasPrefix (path + "/") want) included;
      in
      builtins.path {
        name = "source";
        path = root;
        filter = path: type: path == rootStr || keep path type;
      };
  };
in
rec {
  inherit
    escapeShellArg
    fileset
    getBin
    hasPrefix
    ;

  genAttrs =
    names: f:
    listToAttrs (
      map (n: {
        name = n;
        value = f n;
      }) names
    );
  mapAttrs = builtins.mapAttrs;
  attrValues = builtins.attrValues;
  optional = cond: x: if cond then [ x ] else [ ];
  optionals = cond: xs: if cond then xs else [ ];
  optionalString = cond: s: if cond then s else "";
  optionalAttrs = cond: as: if cond then as else { };
  concatMapStringsSep =
    sep: f: xs:
    concatStringsSep sep (map f xs);
  concatStringsSep = builtins.concatStringsSep;
  escapeShellArgs = xs: concatStringsSep " " (map escapeShellArg xs);
  makeBinPath = pkgs: concatStringsSep ":" (map (p: "${getBin p}/bin") pkgs);
  getExe = drv: "${getBin drv}/bin/${drv.meta.mainProgram or (builtins.parseDrvName drv.name).name}";
  getExe' = drv: name: "${getBin drv}/bin/${name}";
  importTOML = path: builtins.fromTOML (builtins.readFile path);
  flatten = x: if isList x then builtins.concatMap flatten x else [ x ];
  recursiveUpdate = a: b: a // b;
  foldl = foldl';
  inherit attrNames;

  licenses = {
    mit = {
      spdxId = "MIT";
      shortName = "mit";
    };
    asl20 = {
      spdxId = "Apache-2.0";
      shortName = "asl20";
    };
  };
  platforms = {
    linux = [
      "x86_64-linux"
      "aarch64-linux"
    ];
  };
  systems.flakeExposed = [
    "x86_64-linux"
    "aarch64-linux"
  ];
}
