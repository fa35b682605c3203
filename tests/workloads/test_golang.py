"""Go: `go build`, `go vet`, `go test` of a small module (the standard library only),
with GOFLAGS=-mod=mod, GOPROXY=off and the build cache in the task's HOME (the go
preset's GOCACHE)."""

import pytest

from conftest import matrix

pytestmark = pytest.mark.anyio

GOENV = "export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=0; "

PROJECT = {
    "go.mod": "module example.com/demo\n\ngo 1.19\n",
    "calc/calc.go": (
        "// Package calc adds.\npackage calc\n\n"
        "import \"strconv\"\n\n"
        "// Sum adds the numbers.\nfunc Sum(xs ...int) int {\n\tt := 0\n\tfor _, x := range xs {\n\t\tt += x\n\t}\n\treturn t\n}\n\n"
        "// Text is Sum in decimal.\nfunc Text(xs ...int) string { return strconv.Itoa(Sum(xs...)) }\n"
    ),
    "calc/calc_test.go": (
        "package calc\n\nimport (\n\t\"os\"\n\t\"path/filepath\"\n\t\"testing\"\n)\n\n"
        "func TestSum(t *testing.T) {\n\tt.Parallel()\n\tif Sum(1, 2, 3) != 6 {\n\t\tt.Fatal(\"sum\")\n\t}\n}\n\n"
        "func TestText(t *testing.T) {\n\tt.Parallel()\n\tif Text(40, 2) != \"42\" {\n\t\tt.Fatal(\"text\")\n\t}\n}\n\n"
        "func TestTempDir(t *testing.T) {\n\tp := filepath.Join(t.TempDir(), \"f\")\n"
        "\tif err := os.WriteFile(p, []byte(\"x\"), 0o600); err != nil {\n\t\tt.Fatal(err)\n\t}\n}\n"
    ),
    "cmd/demo/main.go": (
        "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/demo/calc\"\n)\n\n"
        "func main() { fmt.Println(\"sum =\", calc.Text(40, 2)) }\n"
    ),
}


@pytest.mark.parametrize("config,user", matrix())
async def test_golang(wl, config, user):
    async def steps(t):
        await t.sh(GOENV + "go build -o bin/demo ./cmd/demo 2>&1", timeout=180)
        r = await t.sh("./bin/demo")
        assert "sum = 42" in r.text, r.describe("the binary printed the wrong sum")
        await t.sh(GOENV + "go vet ./... 2>&1", timeout=180)
        r = await t.sh(GOENV + "go test -count=1 ./... 2>&1", timeout=180)
        assert "ok  \texample.com/demo/calc" in r.text, r.describe("go test did not pass")
        await t.sh(GOENV + 'test -d "$(go env GOCACHE)" && go env GOCACHE')

    await wl.run("golang", config, user, steps, files=PROJECT, programs=["go"])
