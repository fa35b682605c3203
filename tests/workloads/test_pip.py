"""pip: a venv, `pip install` of pytest and pytest-xdist from a PEP 503 index on the
host's loopback (`[network] host_ports`), `pip install -e .` of the project (its build
backend, setuptools, fetched from the same index into pip's isolated build), then
`pytest -n 2`, whose tests include a `multiprocessing.Pool` (semaphores in /dev/shm)."""

import pytest

from conftest import matrix, need_prepared
from harness import Needs

pytestmark = pytest.mark.anyio

PROJECT = {
    "pyproject.toml": (
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "demo"\nversion = "0.1.0"\nrequires-python = ">=3.9"\n\n'
        '[tool.setuptools.packages.find]\nwhere = ["src"]\n'
    ),
    "src/demo/__init__.py": "def square(x):\n    return x * x\n",
    "tests/test_demo.py": (
        "import multiprocessing\nimport os\nimport time\n\nimport pytest\n\nimport demo\n\n\n"
        "@pytest.mark.parametrize('n', range(8))\n"
        "def test_square(n):\n    time.sleep(0.1)\n    assert demo.square(n) == n * n\n\n\n"
        "def test_pool():\n"
        "    with multiprocessing.Pool(2) as pool:\n"
        "        assert pool.map(demo.square, range(5)) == [0, 1, 4, 9, 16]\n\n\n"
        "def test_tmp_path(tmp_path):\n    (tmp_path / 'f').write_text('x')\n    assert (tmp_path / 'f').read_text() == 'x'\n\n\n"
        "def test_workers_are_separate_processes():\n    assert os.getpid() != os.getppid()\n"
    ),
}


@pytest.mark.parametrize("config,user", matrix())
async def test_pip(wl, registry, config, user):
    need_prepared("pip")

    async def steps(t):
        url = t.url(registry.port)
        host = url.split("//")[1].split(":")[0]
        pip = f".venv/bin/pip --disable-pip-version-check install --index-url {url}/pip/simple/ --trusted-host {host}"
        await t.sh("python3 -m venv .venv && .venv/bin/python -c 'import sys; print(sys.prefix)'")
        await t.sh(f"{pip} pytest==8.3.4 pytest-xdist==3.6.1 2>&1", timeout=180)
        await t.sh(f"{pip} -e . 2>&1", timeout=180)
        r = await t.sh(".venv/bin/python -c 'import demo, sys; print(demo.__file__)'")
        assert "/src/demo/__init__.py" in r.text, r.describe("the editable install does not point at src/")
        r = await t.sh(".venv/bin/python -m pytest -n 2 -q -p no:cacheprovider 2>&1", timeout=180)
        assert "11 passed" in r.text, r.describe("pytest -n 2 did not pass all 11 tests")
        assert registry.served("/pip/files/pytest_xdist-3.6.1"), "pytest-xdist did not come from the loopback index"

    await wl.run("pip", config, user, steps, files=PROJECT, needs=Needs(host_ports=[registry.port]),
                 programs=["python3"])
