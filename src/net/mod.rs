//! The network side of the fence (issue 24): every connection a task makes goes through
//! whalebox and is decided per host. The proxy ([`proxy`], [`head`], [`relay`],
//! [`credential`], `intercept`) knows no profile: a caller hands it a [`Decide`]r, a
//! [`Resolve`]r, a [`ProxyConfig`] and a [`Sink`] for records. [`fence`] is the session's
//! side: the `[network]` profile section and the policy's `[[network]]` rules made into
//! a door per task, its variables, its kernel fence ([`netns`] or [`sockets`] with
//! Landlock), asks, `data.network` and audit records (with the [`programs`] behind each
//! connection).
//!
//! # The proxy
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
//! - **Credentials the task never sees** (`[network.credentials.NAME]`, read by
//!   [`fence`]): [`Credentials`] from
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
//!   response headers and body are masked back; so are a plain request's, served by
//!   `intercept::forward_plain`). Other hosts stay tunnels. Records carry the
//!   credentials swapped (`credential`), never a secret. Tested by curl and git in
//!   tests/net_credentials.rs.
//!
//! # The session's fence ([`fence`])
//!
//! - One [`Egress`] per session, started with the first task; each task (shell task,
//!   `whalebox run`, upstream MCP server) gets its own [`Door`] labelled with it, and
//!   `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` (both cases), `NO_PROXY`,
//!   `NODE_USE_ENV_PROXY=1`, plus the credentials' placeholders and trust variables.
//! - **Namespace** (where unshare works: root, or unprivileged user namespaces): the
//!   supervisor enters a new network namespace (in a user namespace mapping only its
//!   uid/gid without root; it writes the maps in /proc/self, which the server's
//!   Landlock layer allows and the task's does not), brings `lo` up, binds
//!   127.0.0.1:3128 there and hands the listener to the server over `net.sock` in the
//!   private run directory (`SCM_RIGHTS`, with a per-task token); the server serves it
//!   as the task's door. No forwarder, no second copy; nothing else has a route.
//! - **Landlock** (no namespaces; ABI ≥ 4): the door is on the machine's 127.0.0.1; the
//!   task's Landlock layer handles `ConnectTcp` with the door's port as the only rule
//!   (bind untouched), and [`sockets`] refuses UDP, raw, packet, non-TCP stream
//!   sockets and `io_uring_setup`. Open: TCP to another host on that port number.
//! - **Variables only**: neither works; `mode = "enforce"` refuses to run commands.
//! - Decisions: the profile's ports and `deny_domains`, then the policy's `[[network]]`
//!   rules (strictest wins over `allow_domains`), then `on_new_domain`; an `ask` goes to
//!   the session's approver (elicitation, `input_required`, the terminal) on a blocking
//!   thread, once per host per session, "for the session" appended to the approvals
//!   file as a `[[network]]` rule; nobody to answer: `[shell] on_ask`.
//!
//! # Left
//!
//! - SOCKS5 (clients that only speak SOCKS fail closed).
//! - Placeholders in request *bodies* inside TLS, secrets echoed in response bodies,
//!   WebSocket and HTTP/2 to credential hosts.
//! - In Landlock mode, another local user can use a task's door on 127.0.0.1 (under
//!   this session's rules).
//! - An upstream MCP server's `ask` on the 2026-07-28 lifecycle has no shell call to
//!   carry it (as for its exec asks): it waits for the approval timeout, then `on_ask`.

mod config;
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
pub mod secrets;
pub mod sockets;

pub use credential::{Credential, Credentials, Leak, Sending, trust_env};
pub use decide::{Decide, Decision, Rules, Verdict};
pub use proxy::{Door, DoorConfig, Egress, Proxy, ProxyConfig};
pub use record::{ConnectionRecord, Kind, Outcome, Sink, channel_sink, null_sink};
pub use resolve::{Resolve, StaticResolver, SystemResolver};
