"""cargo: a workspace of a binary and a path library, with registry dependencies (itoa)
and a proc-macro (paste) from a sparse registry on the host's loopback, reached through
`[network] host_ports`; `cargo build`, `cargo test` (unit, integration and doc tests),
the binary run. CARGO_HOME is the task's own (in its HOME): nothing is shared with the
machine's cargo cache."""

import pytest

from conftest import matrix, need_prepared
from harness import Needs

pytestmark = pytest.mark.anyio


def project(registry_url):
    return {
        ".cargo/config.toml": (
            '[source.crates-io]\nreplace-with = "loopback"\n\n'
            f'[source.loopback]\nregistry = "sparse+{registry_url}/cargo/index/"\n\n'
            "[net]\nretry = 0\n"
        ),
        "Cargo.toml": '[workspace]\nmembers = ["app", "numfmt"]\nresolver = "2"\n',
        "numfmt/Cargo.toml": (
            '[package]\nname = "numfmt"\nversion = "0.1.0"\nedition = "2021"\n\n'
            '[dependencies]\nitoa = "1"\npaste = "1"\n'
        ),
        "numfmt/src/lib.rs": (
            "//! Numbers as text.\n\n"
            "paste::paste! {\n"
            "    /// Formats `n` in decimal.\n"
            "    ///\n"
            "    /// ```\n"
            "    /// assert_eq!(numfmt::format_u64(42), \"42\");\n"
            "    /// ```\n"
            "    pub fn [<format_ u64>](n: u64) -> String {\n"
            "        itoa::Buffer::new().format(n).to_owned()\n"
            "    }\n"
            "}\n\n"
            "#[cfg(test)]\nmod tests {\n"
            "    #[test]\n    fn formats() {\n        assert_eq!(super::format_u64(1234), \"1234\");\n    }\n}\n"
        ),
        "app/Cargo.toml": (
            '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n'
            '[dependencies]\nnumfmt = { path = "../numfmt" }\n'
        ),
        "app/src/main.rs": 'fn main() {\n    println!("sum = {}", numfmt::format_u64(40 + 2));\n}\n',
        "app/tests/cli.rs": (
            "#[test]\nfn prints_the_sum() {\n"
            '    let out = std::process::Command::new(env!("CARGO_BIN_EXE_app")).output().unwrap();\n'
            '    assert_eq!(String::from_utf8_lossy(&out.stdout), "sum = 42\\n");\n}\n'
        ),
    }


@pytest.mark.parametrize("config,user", matrix())
async def test_cargo(wl, registry, config, user):
    need_prepared("cargo")

    async def steps(t):
        await t.sh("cargo build 2>&1", timeout=240)
        r = await t.sh("./target/debug/app")
        assert "sum = 42" in r.text, r.describe("the binary printed the wrong sum")
        r = await t.sh("cargo test 2>&1", timeout=240)
        assert "test result: ok" in r.text and "Doc-tests numfmt" in r.text, r.describe("cargo test ran less than expected")
        r = await t.sh("ls \"$CARGO_HOME/registry/cache\"/*/")
        assert "itoa-1.0.15.crate" in r.text and "paste-1.0.15.crate" in r.text, r.describe("crates not in CARGO_HOME")
        assert registry.served("/cargo/crates/itoa-1.0.15.crate"), "the crates did not come from the loopback registry"

    await wl.run("cargo", config, user, steps, files=lambda t: project(t.url(registry.port)),
                 needs=Needs(host_ports=[registry.port]), programs=["cargo", "gcc"])
