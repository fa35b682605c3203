# The container image (`nix build .#image`, then `podman load < result`): whalebox (which
# finds its gated zsh by itself), zsh-gated, a small userland, user 10001, and
# deploy/container/profile.toml as /etc/whalebox/profile.toml. The same configuration as
# the image deploy/container/build makes without Nix (docs/src/container.md), but for
# where tini lives (/bin here, /usr/bin there).
{
  dockerTools,
  whalebox,
  zsh-gated,
  bashInteractive,
  coreutils,
  git,
  cacert,
  tini,
}:

dockerTools.buildLayeredImage {
  name = "whalebox";
  # As deploy/container/build tags its image, and the Kubernetes manifests name it.
  tag = "latest";

  # Each package's bin/, etc/ … are linked into the image's root: /bin/whalebox,
  # /bin/zsh (the gated one), /bin/bash and /bin/sh, coreutils, /bin/git, /bin/tini,
  # /etc/ssl/certs/ca-bundle.crt.
  contents = [
    whalebox
    zsh-gated
    bashInteractive
    coreutils
    git
    cacert
    tini
  ];

  # The user everything runs as and what it owns: the workspace, and its home, where
  # checkpoints ($XDG_STATE_HOME, by default ~/.local/state) and the toolchain presets'
  # caches go; /tmp, where the server makes its private directories; /usr/bin/env for
  # scripts that start with it.
  fakeRootCommands = ''
    mkdir -p etc/whalebox tmp workspace home/whalebox usr/bin
    printf '%s\n' 'root:x:0:0:root:/root:/bin/bash' \
      'whalebox:x:10001:10001:whalebox:/home/whalebox:/bin/bash' > etc/passwd
    printf '%s\n' 'root:x:0:' 'whalebox:x:10001:' > etc/group
    cp ${../deploy/container/profile.toml} etc/whalebox/profile.toml
    ln -s ${coreutils}/bin/env usr/bin/env
    chmod 1777 tmp
    chmod 0700 home/whalebox
    chown 10001:10001 workspace home/whalebox
  '';

  config = {
    # Numeric, so a runtime can check it is not root without reading /etc/passwd.
    User = "10001:10001";
    WorkingDir = "/workspace";
    # tini as PID 1: signals reach whalebox as they would outside a container, and
    # orphans are reaped.
    Entrypoint = [
      "/bin/tini"
      "--"
    ];
    Cmd = [
      "whalebox"
      "serve"
      "--http"
      "0.0.0.0:8080"
      "--profile"
      "/etc/whalebox/profile.toml"
    ];
    ExposedPorts."8080/tcp" = { };
    Volumes = {
      "/workspace" = { };
      "/home/whalebox" = { };
    };
    Env = [
      "PATH=/bin"
      "HOME=/home/whalebox"
      # Every whalebox command in the container (doctor, call, tools) reads the image's
      # profile, as the server does.
      "WHALEBOX_PROFILE=/etc/whalebox/profile.toml"
      "SSL_CERT_FILE=/etc/ssl/certs/ca-bundle.crt"
    ];
  };
}
