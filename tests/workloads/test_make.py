"""make and gcc: C sources in subdirectories, objects in a mirrored build/ tree
(`mkdir -p $(@D)`), a parallel build, an incremental rebuild after a touch, `make clean`."""

import pytest

from conftest import matrix

pytestmark = pytest.mark.anyio

PROJECT = {
    "Makefile": (
        "SRC := $(wildcard src/*/*.c) src/main.c\n"
        "OBJ := $(patsubst src/%.c,build/%.o,$(SRC))\n"
        "CFLAGS := -O1 -g -Wall -Werror -Iinclude\n\n"
        "build/app: $(OBJ)\n\t$(CC) -o $@ $^\n\n"
        "build/%.o: src/%.c include/parts.h\n\t@mkdir -p $(@D)\n\t$(CC) $(CFLAGS) -c -o $@ $<\n\n"
        "clean:\n\trm -rf build\n\n.PHONY: clean\n"
    ),
    "include/parts.h": "int add(int a, int b);\nint mul(int a, int b);\n",
    "src/math/add.c": "#include \"parts.h\"\nint add(int a, int b) { return a + b; }\n",
    "src/math/mul.c": "#include \"parts.h\"\nint mul(int a, int b) { return a * b; }\n",
    "src/main.c": (
        "#include <stdio.h>\n#include \"parts.h\"\n"
        "int main(void) { printf(\"answer %d\\n\", add(mul(4, 10), 2)); return 0; }\n"
    ),
}


@pytest.mark.parametrize("config,user", matrix())
async def test_make(wl, config, user):
    async def steps(t):
        await t.sh("make -j2 2>&1")
        r = await t.sh("./build/app && ls build/math")
        assert "answer 42" in r.text and "add.o" in r.text, r.describe("the build is not what make made")
        r = await t.sh("sleep 1; touch src/math/mul.c && make 2>&1")
        assert "-o build/math/mul.o" in r.text and "-o build/math/add.o" not in r.text, r.describe("the rebuild was not incremental")
        await t.sh("make clean && test ! -e build && make -j2 >/dev/null 2>&1 && ./build/app")

    await wl.run("make", config, user, steps, files=PROJECT, programs=["make", "gcc"])
