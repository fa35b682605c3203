"""Debuggers on the task's own processes: `strace -f` and `gdb -batch` on a C program the
task built, under `[shell] debuggers = true` (with `exec_gate = "ptrace"`, which already
traces every process, the profile is refused at load, naming both); and under the
default profile (debuggers off) a refusal whose text names `[shell] debuggers = true`."""

import pytest

from conftest import matrix
from harness import Needs, check

pytestmark = pytest.mark.anyio

PROG = r"""
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void crash(void) {
    volatile int *p = 0;
    *p = 42;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "crash") == 0) {
        crash();
    }
    pid_t child = fork();
    if (child == 0) {
        printf("child says hi\n");
        return 0;
    }
    waitpid(child, 0, 0);
    printf("parent done\n");
    return 0;
}
"""


@pytest.mark.parametrize("config,user", matrix())
async def test_debuggers(wl, config, user):
    if config == "ptrace":
        # The ptrace gate traces every process of the task, and a process has one
        # tracer: the combination is refused when the profile loads.
        await wl.refused_at_load("debuggers", config, user, needs=Needs(debuggers=True),
                                 must_name=["debuggers", "exec_gate"])
        return

    async def steps(t):
        await t.sh("gcc -g -O0 -o prog prog.c")
        r = await t.sh("strace -f -o trace.txt ./prog && grep -c . trace.txt && grep -E 'write\\(1, \"child says hi' trace.txt",
                       ok=False)
        check(r, r.ok and "child says hi" in r.text, "strace -f did not trace the program and its child")
        r = await t.sh("gdb -q -batch -ex run -ex bt --args ./prog crash 2>&1", ok=False, timeout=60)
        check(r, "SIGSEGV" in r.text and "crash ()" in r.text and "main (" in r.text,
              "gdb did not run the program to its crash and print the backtrace")

    await wl.run("debuggers", config, user, steps, files={"prog.c": PROG}, needs=Needs(debuggers=True),
                 programs=["gcc", "strace", "gdb"])


@pytest.mark.parametrize("config,user", matrix())
async def test_debuggers_refused_by_default(wl, config, user):
    async def steps(t):
        await t.sh("gcc -g -O0 -o prog prog.c")
        r = await t.sh("strace -f -o trace.txt ./prog", ok=False)
        if t.fenced:
            check(r, not r.ok, "strace ran although [shell] debuggers is off")
            check(r, "debuggers = true" in r.text, "the refusal of strace does not name `[shell] debuggers = true`")
        else:
            check(r, r.ok, "bare, strace should run (the probe is broken)")
        r = await t.sh("gdb -q -batch -ex run --args ./prog 2>&1", ok=False, timeout=60)
        if t.fenced:
            check(r, "debuggers = true" in r.text, "the refusal of gdb does not name `[shell] debuggers = true`")
        else:
            check(r, "parent done" in r.text, "bare, gdb should run the program (the probe is broken)")

    await wl.run("debuggers_off", config, user, steps, files={"prog.c": PROG}, programs=["gcc", "strace", "gdb"])
