"""packages.image, as the stand-in's dockerTools.buildLayeredImage records it (it builds
no image; tests/nix/nixpkgs/README.md): the configuration, the root the customisation
layer would hold, and that both agree with the image deploy/container/Containerfile
makes without Nix. Run by tests/nix/run:

    python3 tests/nix/image_check.py RESULT WHALEBOX_OUT ZSH_GATED_OUT
"""

import json
import os
import re
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SERVE = ["whalebox", "serve", "--http", "0.0.0.0:8080", "--profile", "/etc/whalebox/profile.toml"]


def fail(msg, *context):
    for c in context:
        print(c, file=sys.stderr)
    print(f"tests/nix: FAILED: packages.image: {msg}", file=sys.stderr)
    sys.exit(1)


def containerfile():
    """USER, WORKDIR, EXPOSE, VOLUME, CMD and ENV of deploy/container/Containerfile."""
    with open(os.path.join(REPO, "deploy", "container", "Containerfile")) as f:
        text = re.sub(r"\\\n", " ", f.read())
    out = {"ENV": {}}
    for line in text.splitlines():
        word, _, rest = line.strip().partition(" ")
        if word in ("USER", "WORKDIR", "EXPOSE"):
            out[word] = rest.strip()
        elif word in ("VOLUME", "CMD", "ENTRYPOINT"):
            out[word] = json.loads(rest)
        elif word == "ENV":
            out["ENV"].update(dict(kv.split("=", 1) for kv in rest.split()))
    return out


def main():
    result, whalebox, zsh = sys.argv[1:4]
    with open(os.path.join(result, "config.json")) as f:
        cfg = json.load(f)
    env = dict(e.split("=", 1) for e in cfg.get("Env", []))
    want = {
        "User": "10001:10001",
        "WorkingDir": "/workspace",
        "Entrypoint": ["/bin/tini", "--"],
        "Cmd": SERVE,
        "ExposedPorts": {"8080/tcp": {}},
        "Volumes": {"/workspace": {}, "/home/whalebox": {}},
    }
    for key, value in want.items():
        if cfg.get(key) != value:
            fail(f"config.{key} is {cfg.get(key)!r}, not {value!r}")
    for key, value in {"WHALEBOX_PROFILE": "/etc/whalebox/profile.toml",
                       "HOME": "/home/whalebox", "PATH": "/bin"}.items():
        if env.get(key) != value:
            fail(f"Env {key} is {env.get(key)!r}, not {value!r}")

    # The Debian image (deploy/container/Containerfile) is configured the same way.
    deb = containerfile()
    same = [
        (deb.get("USER"), cfg["User"]),
        (deb.get("WORKDIR"), cfg["WorkingDir"]),
        (deb.get("EXPOSE") + "/tcp", next(iter(cfg["ExposedPorts"]))),
        (sorted(deb.get("VOLUME", [])), sorted(cfg["Volumes"])),
        (deb.get("CMD"), cfg["Cmd"]),
        (deb.get("ENTRYPOINT", [None])[1:], cfg["Entrypoint"][1:]),
        (deb["ENV"].get("WHALEBOX_PROFILE"), env["WHALEBOX_PROFILE"]),
        (deb["ENV"].get("HOME"), env["HOME"]),
        (deb["ENV"].get("XDG_STATE_HOME"), env.get("XDG_STATE_HOME")),
    ]
    for a, b in same:
        if a != b:
            fail(f"the Containerfile says {a!r} where the Nix image says {b!r}")

    with open(os.path.join(result, "contents")) as f:
        contents = f.read().split()
    for pkg in (whalebox, zsh):
        if pkg not in contents:
            fail(f"{pkg} is not in contents", contents)

    root = os.path.join(result, "root")
    links = {
        "bin/whalebox": f"{whalebox}/bin/whalebox",
        "bin/whalebox-gate": f"{whalebox}/bin/whalebox-gate",
        "bin/zsh": f"{zsh}/bin/zsh",
    }
    for path, target in links.items():
        if os.readlink(os.path.join(root, path)) != target:
            fail(f"/{path} does not link to {target}")
    for path in ("bin/tini", "bin/bash", "bin/sh", "bin/git", "bin/cat", "usr/bin/env",
                 "etc/ssl/certs/ca-bundle.crt"):
        if not os.path.exists(os.path.join(root, path)):
            fail(f"/{path} is missing (or a dangling link)")
    with open(os.path.join(root, "etc/passwd")) as f:
        passwd = f.read()
    if "whalebox:x:10001:10001:whalebox:/home/whalebox:/bin/bash\n" not in passwd:
        fail("/etc/passwd has no user whalebox 10001", passwd)
    with open(os.path.join(root, "etc/group")) as f:
        if "whalebox:x:10001:\n" not in f.read():
            fail("/etc/group has no group whalebox 10001")
    with open(os.path.join(root, "etc/whalebox/profile.toml")) as a, \
            open(os.path.join(REPO, "deploy/container/profile.toml")) as b:
        if a.read() != b.read():
            fail("/etc/whalebox/profile.toml is not deploy/container/profile.toml")

    with open(os.path.join(result, "modes.txt")) as f:
        modes = dict(reversed(line.split(" ", 1)) for line in f.read().splitlines() if " -> " not in line)
    for path, mode in {"tmp": "drwxrwxrwt", "workspace": "drwxr-xr-x", "home/whalebox": "drwx------"}.items():
        if modes.get(path) != mode:
            fail(f"/{path} is {modes.get(path)}, not {mode}")
    with open(os.path.join(result, "ownership")) as f:
        owned = f.read().split()
    if owned[:2] != ["chown", "10001:10001"] or set(owned[2:]) != {"workspace", "home/whalebox"}:
        fail(f"fakeRootCommands did not give 10001 the workspace and the home: {owned}")
    print("tests/nix: packages.image: user 10001, tini -- whalebox serve --http 0.0.0.0:8080, "
          "/workspace and /home/whalebox, /bin linking to the flake's whalebox and zsh-gated, "
          "/etc/passwd, the profile; as deploy/container/Containerfile has them")


if __name__ == "__main__":
    main()
