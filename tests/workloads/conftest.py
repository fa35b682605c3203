"""Fixtures of the workloads suite (README.md): the whalebox binary and the gated zsh,
the loopback registries, and `wl`, which runs one workload in one configuration as one
user: bare first (once per workload and user: the workload is sound here), then under
whalebox, timing each run (the table is printed at the end)."""

from __future__ import annotations

import os
import pathlib
import shutil
import tempfile
import time

import anyio
import pytest

import harness
from harness import CONFIGS, PREPARED, ROOT, USERS, Bare, Fenced, Needs, Place, user_named
from registries import Registry

# (workload, config, user) -> (seconds, outcome)
TIMINGS: dict[tuple[str, str, str], tuple[float, str]] = {}
# (workload, user) -> None when the bare run passed, else why it failed
BARE: dict[tuple[str, str], str | None] = {}


def matrix():
    """Every configuration for every user, bare first: ids like `default-root`."""
    return [pytest.param(c, u, id=f"{c}-{u}") for u in USERS for c in CONFIGS]


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="session")
def whalebox_bin() -> str:
    path = os.environ.get("WHALEBOX_BIN") or str(ROOT / "target" / "debug" / "whalebox")
    if not os.access(path, os.X_OK):
        pytest.fail(f"whalebox binary not found at {path}; build it first (tests/run does)")
    return path


@pytest.fixture(scope="session")
def gated_zsh() -> str:
    path = os.environ.get("WHALEBOX_ZSH") or str(ROOT / "target" / "zsh" / "bin" / "zsh")
    if not os.access(path, os.X_OK):
        pytest.skip(f"SKIPPED: no gated zsh at {path} (nix/zsh/build.sh builds it; tests/run does)")
    return path


@pytest.fixture(scope="session")
def prepared() -> pathlib.Path:
    if not (PREPARED / "prepared").exists():
        pytest.skip(f"SKIPPED: {PREPARED} is not prepared: run tests/workloads/prepare first (tests/run does)")
    return PREPARED


PREPARED_FILES = {"cargo": "cargo/crates/*.crate", "pip": "pip/*.whl", "npm": "npm/*.tgz"}


def need_prepared(kind: str):
    """Skip, saying so, when prepare could not fetch what the `kind` registry serves."""
    if not list(PREPARED.glob(PREPARED_FILES[kind])):
        pytest.skip(f"SKIPPED: no {PREPARED_FILES[kind]} under {PREPARED} (tests/workloads/prepare said why)")


@pytest.fixture(scope="session")
def registry(prepared):
    """The cargo, pip and npm registries on 127.0.0.1 (one server, a free port)."""
    r = Registry(prepared)
    yield r
    r.close()


@pytest.fixture(scope="session")
def top():
    """Where each test's directories go: a 0755 directory under /tmp (pytest's own
    tmp_path is under a 0700 directory the unprivileged user cannot cross)."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="whalebox-workloads-"))
    os.chmod(d, 0o755)
    yield d
    if not os.environ.get("WORKLOADS_KEEP"):
        shutil.rmtree(d, ignore_errors=True)


class Workloads:
    def __init__(self, whalebox_bin, gated_zsh, top):
        self.bin = whalebox_bin
        self.zsh = gated_zsh
        self.top = top

    async def run(self, name: str, config: str, user: str, steps, *, files=None, needs: Needs | None = None,
                  programs=(), setup=None, budget: float = 300):
        """Run `steps(runner)` on a fresh workspace holding `files`, bare or under
        whalebox with `config`'s profile plus `needs`, as `user`."""
        u = user_named(user)
        if os.geteuid() != 0:
            pytest.skip("SKIPPED: the workloads suite runs as root (it makes files for, and runs as, an unprivileged user)")
        for program in programs:
            why = harness.reachable_by(u, program)
            if why:
                pytest.skip(f"SKIPPED: {name} needs {program}, not reachable as {u.name}: {why}")
        if program_needs_rust(programs) and harness.rust_toolchain_bin() is None:
            pytest.skip("SKIPPED: no readable Rust toolchain under target/workloads/rustup (tests/workloads/prepare makes it)")
        needs = needs or Needs()
        if config != "bare":
            if (name, user) not in BARE:
                await self._once(name, "bare", u, steps, files, needs, setup, budget)
            if BARE[(name, user)] is not None:
                pytest.skip(f"SKIPPED: {name} fails bare as {user}, so whalebox cannot be judged on it:\n"
                            f"{BARE[(name, user)]}")
        await self._once(name, config, u, steps, files, needs, setup, budget)

    async def _once(self, name, config, u, steps, files, needs, setup, budget):
        place = Place(self.top, f"{name}-{config}-{u.name}", u)
        runner = None
        started = time.monotonic()
        outcome = "passed"
        try:
            if config == "bare":
                runner = Bare(u, place)
            else:
                profile = self._profile(place, config, u, needs)
                runner = Fenced(self.bin, config, u, place, profile)
            if files:
                place.write(files(runner) if callable(files) else files)
            if setup:
                setup(place)
            place.give_away()
            if isinstance(runner, Fenced):
                await runner.open()
            with anyio.fail_after(budget):
                await steps(runner)
            if runner.failures:
                raise harness.StepFailed(f"{len(runner.failures)} expectation(s) failed:\n\n"
                                         + "\n\n".join(runner.failures))
        except TimeoutError:
            outcome = "timed out"
            raise AssertionError(f"{name} ({config} as {u.name}) took more than {budget} s") from None
        except BaseException as e:
            outcome = "skipped" if isinstance(e, pytest.skip.Exception) else "failed"
            if config == "bare":
                BARE[(name, u.name)] = str(e)[:4000] or repr(e)
            raise
        finally:
            if isinstance(runner, Fenced):
                await runner.close()
            elif isinstance(runner, Bare):
                runner.close()
            TIMINGS[(name, config, u.name)] = (time.monotonic() - started, outcome)
        if config == "bare":
            BARE[(name, u.name)] = None

    async def refused_at_load(self, name: str, config: str, user: str, *, needs: Needs, must_name: list[str]):
        """A combination of fences that cannot work together: `whalebox serve` must refuse
        the profile at load (exit 2), naming `must_name`, rather than start and fail later."""
        import subprocess

        u = user_named(user)
        place = Place(self.top, f"{name}-{config}-{u.name}", u)
        started = time.monotonic()
        outcome = "failed"
        try:
            profile = self._profile(place, config, u, needs)
            place.give_away()
            argv = u.wrap([self.bin, "serve", "--profile", str(profile), "--workspace", str(place.ws)])
            out = subprocess.run(argv, env=place.env(), cwd=place.ws, stdin=subprocess.DEVNULL,
                                 capture_output=True, text=True, timeout=30)
            said = out.stderr + out.stdout
            assert out.returncode == 2 and all(w in said for w in must_name), (
                f"{name} ({config} as {u.name}): this profile cannot work (one tracer per process), so "
                f"whalebox serve must refuse it at load with exit 2 naming {must_name}; it exited "
                f"{out.returncode}:\n{said}\n--- profile ---\n{profile.read_text()}")
            outcome = "passed"
        finally:
            TIMINGS[(name, config, u.name)] = (time.monotonic() - started, outcome)

    def _profile(self, place: Place, config: str, u, needs: Needs) -> pathlib.Path:
        """The configuration's profile, checked with doctor (without the workload's own
        lines), then with the workload's lines, written to a file the user can read."""
        plain = place.base / "config.toml"
        plain.write_text(harness.render_profile(harness.profile_for(config, self.zsh, Needs())))
        place.give_away()
        d = harness.doctor(self.bin, u, place, plain)
        if "error" in d:
            pytest.fail(f"whalebox doctor refuses the {config} profile as {u.name}: {d['error']}\n{plain.read_text()}")
        gate = d.get("kernel_exec_gate") or {}
        if not gate.get("works"):
            pytest.skip(f"SKIPPED: the kernel exec gate does not work here as {u.name} "
                        f"(whalebox doctor --json: kernel_exec_gate = {gate}); exec_boundary = \"required\" cannot hold")
        if config == "ptrace" and gate.get("method") != "ptrace":
            pytest.skip(f"SKIPPED: exec_gate = \"ptrace\" is not what doctor reports as {u.name}: {gate}")
        profile = place.base / "profile.toml"
        profile.write_text(harness.render_profile(harness.profile_for(config, self.zsh, needs)) + needs.toml)
        return profile


def program_needs_rust(programs) -> bool:
    return "cargo" in programs


@pytest.fixture
def wl(whalebox_bin, gated_zsh, top) -> Workloads:
    return Workloads(whalebox_bin, gated_zsh, top)


def pytest_terminal_summary(terminalreporter):
    if not TIMINGS:
        return
    tr = terminalreporter
    tr.section("workload timings (seconds)")
    configs = [f"{c}-{u}" for u in USERS for c in CONFIGS]
    names = sorted({k[0] for k in TIMINGS})
    width = max(len(n) for n in names) + 2
    shown = [c for c in configs if any((n, *c.rsplit("-", 1)) in TIMINGS for n in names)]
    tr.write_line("workload".ljust(width) + "".join(c.rjust(21) for c in shown) + "total".rjust(9))
    grand = 0.0
    for n in names:
        row, total = n.ljust(width), 0.0
        for c in shown:
            cfg, usr = c.rsplit("-", 1)
            t = TIMINGS.get((n, cfg, usr))
            if t is None:
                row += "-".rjust(21)
            else:
                total += t[0]
                mark = {"passed": "", "failed": " F", "skipped": " s", "timed out": " T"}[t[1]]
                row += f"{t[0]:.1f}{mark}".rjust(21)
        grand += total
        tr.write_line(row + f"{total:.1f}".rjust(9))
    tr.write_line(f"all workloads: {grand:.1f} s (F failed, s skipped, T timed out)")
