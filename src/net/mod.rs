//! The network side of the fence (issue 24): every connection a task makes goes through
//! whalebox and is decided per host. This module knows no profile: a caller hands it a
//! [`Decide`]r, a [`Resolve`]r, a [`ProxyConfig`] and a [`Sink`] for records.
//!
//! # Built (this slice)
//!
//! - [`Proxy`]: a per-session egress proxy on 127.0.0.1 (a random port), HTTP `CONNECT
//!   host:port` tunnels and plain-HTTP forwarding of absolute-form requests (one request
//!   per client connection, `Connection: close`, hop-by-hop headers dropped, `Host`
//!   from the URL, `Content-Length` + `Transfer-Encoding` together refused). Heads are
//!   parsed by httparse ([`head`]); hosts by the WHATWG rules after a strict character
//!   check, so `0x7f.1`, `2130706433` and `[::ffff:7f00:1]` are the addresses they mean
//!   and `a@b`, `\`, `%` never reach a parser.
//! - Per connection: [`Decide::decide`]`(host, port)` first (async, so an `ask` can wait
//!   for a person); then the proxy resolves the name itself, refuses when *any* address
//!   is loopback, private, link-local, metadata (the web group's rules, IPv6 forms that
//!   carry such an IPv4 address included) unless `allow_private` names it, and connects
//!   only to an address it checked (a second resolution cannot move it).
//! - Refusals are HTTP answers: 403 naming the host, the rule and how to allow it; 400
//!   for what is not a proxy request (the proxy keeps serving), 431 past the head limit,
//!   408 for a head too slow, 502/504 when an allowed host does not resolve or answer,
//!   503 past `max_connections` (answered and closed, not queued: a flood holds no more
//!   than the limit). A tunnel or forward with no byte either way for `idle_timeout` is
//!   closed.
//! - One [`ConnectionRecord`] per accepted connection (host, port, address, outcome with
//!   the rule, bytes up and down, start and end), also for garbage and for connections
//!   cut by [`Proxy::shutdown`].
//! - **Credentials the task never sees** (item 4 below, the mechanism; the profile's
//!   `[network.credentials.NAME]` is wired elsewhere): [`Credentials`] from
//!   [`Credential`]s (name, variable, hosts, [`Sending`]: header + format or Basic user,
//!   the secret) makes per-session placeholders (`whalebox-placeholder-NAME-<32 hex>`,
//!   [`Credentials::task_env`]) and a per-session CA (rcgen; path length 0 and name
//!   constraints to the credential hosts; a leaf per host, cached), written with the
//!   system roots by [`Credentials::write_ca_bundle`] (0600) for [`trust_env`]. With
//!   `ProxyConfig.credentials` set, every request is screened before its decision
//!   (`credential::screen_request`): a placeholder in the host, URL, headers (Basic
//!   decoded) or the first 64 KiB of a plain body, sent to a host its credential does
//!   not cover, is refused 403 naming the credential, its variable and hosts (recorded
//!   `Denied`); a plain request to a covered host has its headers swapped. A `CONNECT`
//!   to a covered host, after the decision and address check, has its TLS ended
//!   (`intercept`: rustls, http/1.1 by ALPN; hyper per request with keep-alive; `Host`
//!   set to the decided host; swapped; on to the origin over rustls on the connection
//!   already made to the checked address, trusting Mozilla's, the system's and
//!   `ProxyConfig.upstream_roots`; a bad certificate is a 502; secrets in the origin's
//!   response headers are masked back). Other hosts stay tunnels. Records carry the
//!   credentials swapped (`credential`), never a secret. Tested by curl and git in
//!   tests/net_credentials.rs.
//!
//! # Checked on the build machine (Linux 6.18, 2 cores, as root)
//!
//! - `unshare -Urn true` works, and also as uid 65534 (`setpriv --reuid=65534 … unshare
//!   -Urn`): unprivileged user + network namespaces are available. Inside one, `ip link
//!   set lo up` works, TCP and UDP to outside addresses fail with ENETUNREACH (no route,
//!   nothing sent), and a *pathname* unix socket bound outside is reachable (pathname
//!   sockets belong to the filesystem, not the network namespace; abstract ones do not).
//! - Landlock ABI 7 (`landlock_create_ruleset(NULL, 0, VERSION)`): TCP bind/connect rules
//!   (ABI 4) and abstract-unix-socket and signal scoping (ABI 6) are there; pathname unix
//!   sockets are not restricted by this ABI.
//!
//! # Next
//!
//! 1. **Wiring**: `[network]` in the profile (`allow_domains`, `deny_domains` as
//!    [`Rules`], `allow_private`, `ports`, `on_new_domain`), one proxy per session,
//!    started lazily; every task's environment gets `HTTP_PROXY`, `HTTPS_PROXY`,
//!    `ALL_PROXY` (both cases) and `NO_PROXY=` (empty: nothing bypasses). To attribute
//!    records to a task (the audit's task and program chain), give each task its own
//!    proxy URL with credentials (`http://t42:RANDOM@127.0.0.1:PORT`): the proxy then
//!    also refuses a client that is not one of this session's tasks (other local users
//!    can reach 127.0.0.1). Records go to `data.network` (hosts reached and refused) and
//!    the audit log.
//! 2. **Kernel enforcement, where namespaces work (this machine)**: the task starts in
//!    a new user + network namespace (`unshare(CLONE_NEWUSER | CLONE_NEWNET)` in the
//!    spawn path, before Landlock and the exec gate; uid/gid mapped to the caller's),
//!    with only `lo` up. A small forwarder inside listens on the namespace's own
//!    127.0.0.1:PORT and passes each connection to the proxy over a pathname unix socket
//!    in the session's private directory (mode 0600: other users cannot use it; Landlock
//!    before ABI 9 does not restrict connecting to it, which here is the point: it is
//!    the one way out, and it leads to the proxy that decides). No other TCP, no UDP, no
//!    DNS leaves: the namespace has no route. Caveats to handle:
//!    the exec gate's ptrace/seccomp supervisor and user namespaces must cooperate
//!    (the gate runs in the parent namespace; check `PR_SET_NO_NEW_PRIVS` ordering), and
//!    a task that needs loopback services of the host (a database) needs them listed.
//! 3. **Fallback without namespaces**: Landlock `ConnectTcp` limited to the proxy's port
//!    (ABI 4), and a seccomp filter refusing `socket(AF_INET/AF_INET6, SOCK_DGRAM|SOCK_RAW)`
//!    and `AF_PACKET` (plain integer arguments: no race). Remains open, said in `doctor`
//!    and `data.network`: TCP to *another* host on the proxy's port number, pathname unix
//!    sockets. `mode = "enforce"` refuses to run when neither 2 nor 3 holds.
//! 4. **Credentials, what is left** (the mechanism is built, above): the profile's
//!    `[network.credentials.NAME]` (`env`, `hosts`, `header` + `format` or `basic`) read
//!    into [`Credential`]s with the secret from the server's environment (refuse to
//!    start when it is unset); the session's [`Credentials`] in `ProxyConfig`; the
//!    task's environment gets [`Credentials::task_env`] and [`trust_env`] of the bundle
//!    written to the session's private directory. Not covered yet: placeholders in the
//!    *body* of a request inside TLS (headers and URL are screened), secrets echoed in
//!    an origin's response *body* (headers are masked), WebSocket upgrades to a
//!    credential host (`Upgrade` is dropped), HTTP/2 to credential hosts (http/1.1 only).
//! 5. **Asks**: a `Decide` that consults `Rules`, then the exec approval paths
//!    (elicitation, `input_required`, terminal, `on_ask`) once per host per session
//!    ("always" remembered); where nobody can answer, a refusal that says so.
//! 6. **Presets' registry hosts** added to `allow_domains`: rust `crates.io`,
//!    `static.crates.io`, `index.crates.io`; node `registry.npmjs.org`; python `pypi.org`,
//!    `files.pythonhosted.org`; go `proxy.golang.org`, `sum.golang.org`; nix
//!    `cache.nixos.org`. Policy files with network rules and `match`/`not_match` examples.
//! 7. `bench/network.sh`: throughput and per-connection latency through the proxy vs
//!    direct, as ratios.

pub mod credential;
pub mod decide;
pub mod fence;
pub mod head;
pub(crate) mod intercept;
pub mod netns;
pub mod programs;
pub mod proxy;
pub mod record;
pub mod relay;
pub mod resolve;
pub mod sockets;

pub use credential::{Credential, Credentials, Leak, Sending, trust_env};
pub use decide::{Decide, Decision, Rules, Verdict};
pub use proxy::{Door, DoorConfig, Egress, Proxy, ProxyConfig};
pub use record::{ConnectionRecord, Kind, Outcome, Sink, channel_sink, null_sink};
pub use resolve::{Resolve, StaticResolver, SystemResolver};
