"""npm: `npm install` from a registry on the host's loopback (`[network] host_ports`:
package documents whose `dist.tarball` points back at it, tarballs made by `npm pack`),
then `npm ci` from the lock file it wrote, then `npm test` (node's own test runner).
npm's cache is the task's own (in its HOME)."""

import pytest

from conftest import matrix, need_prepared
from harness import Needs

pytestmark = pytest.mark.anyio


def project(url):
    return {
        ".npmrc": f"registry={url}/npm/\naudit=false\nfund=false\nupdate-notifier=false\nloglevel=warn\n",
        "package.json": (
            '{\n  "name": "demo",\n  "version": "1.0.0",\n  "private": true,\n'
            '  "dependencies": {"is-odd": "^3.0.1"},\n'
            '  "scripts": {"test": "node --test test/"}\n}\n'
        ),
        "index.js": "const isOdd = require('is-odd');\nmodule.exports = (xs) => xs.filter(isOdd);\n",
        "test/odd.test.js": (
            "const test = require('node:test');\nconst assert = require('node:assert');\n"
            "const odds = require('..');\n\n"
            "test('keeps the odd numbers', () => {\n  assert.deepStrictEqual(odds([1, 2, 3, 4, 5]), [1, 3, 5]);\n});\n"
        ),
    }


@pytest.mark.parametrize("config,user", matrix())
async def test_npm(wl, registry, config, user):
    need_prepared("npm")

    async def steps(t):
        await t.sh("npm install 2>&1", timeout=120)
        r = await t.sh("node -e \"const l = require('./package-lock.json'); "
                       "console.log(Object.keys(l.packages).join(' '))\"")
        assert "node_modules/is-number" in r.text, r.describe("is-number (is-odd's dependency) is not locked")
        await t.sh("rm -rf node_modules && npm ci 2>&1", timeout=120)
        r = await t.sh("npm test 2>&1", timeout=120)
        assert "# pass 1" in r.text, r.describe("npm test did not pass its test")
        assert registry.served("/npm/-/is-number-6.0.0.tgz"), "the tarballs did not come from the loopback registry"

    await wl.run("npm", config, user, steps, files=lambda t: project(t.url(registry.port)),
                 needs=Needs(host_ports=[registry.port]), programs=["node", "npm"])
