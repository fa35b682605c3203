//! A session's network fence: the `[network]` profile section made real. One proxy
//! ([`Egress`]) per session, started with the first task; each task gets its own door
//! (so its records, asks and refusals name it), the variables that point its tools at
//! the door, and the kernel fence this machine allows:
//!
//! - **namespace**: the session's tasks share one network namespace (see
//!   `guard::spaces`), whose only ways out are the doors the server serves in it and the
//!   machine's loopback services the profile names (`host_ports`); nothing else leaves,
//!   TCP or UDP, and the machine reaches in only on the ports it publishes (`publish`);
//! - **landlock**: Landlock lets TCP connect to the door's port (and the host ports)
//!   only, and a seccomp filter refuses UDP, raw and other non-TCP internet sockets
//!   ([`super::sockets`]);
//! - **variables only**: neither works here; tools that honour the proxy variables go
//!   through it, anything else goes straight out (`mode = "enforce"` refuses to run).

mod ask;
mod bridges;
mod enforcement;
mod tasklog;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};

use super::credential::{Credential, Credentials, Sending, trust_env};
use super::decide::{Decide, Rules};
use super::proxy::{Door, DoorConfig, Egress, ProxyConfig};
use super::record::Sink;
use super::resolve::{Resolve, StaticResolver, SystemResolver};
use crate::boundary::{ApproverSlot, OnAsk};
use crate::guard::spaces::Spaces;
use crate::policy::NetworkRule;
use crate::profile::network::{FenceMode, NetworkSection, OnNewDomain};

use ask::TaskDecide;
pub use enforcement::{Enforcement, detect, detect_with};
use tasklog::{Entry, TaskLog, forget_oldest_ended};

pub use crate::profile::network::DOOR_PORTS;

/// What a task's spawn needs from the fence.
#[derive(Debug, Clone)]
pub struct TaskNet {
    token: String,
    /// Set for the task (last: nothing the call sets replaces them).
    pub env: Vec<(String, String)>,
    /// The task's door: the port its Landlock layer lets it connect to where that layer
    /// limits TCP (the landlock fence, or `[landlock] network = "deny"`).
    pub door_port: u16,
    /// The landlock fence: TCP connect limited to the door (and the host ports), and the
    /// socket filter.
    pub landlock_fence: bool,
    /// Said in the task's result (a published port that could not be served, …).
    pub notes: Vec<String>,
}

impl TaskNet {
    pub fn token(&self) -> &str {
        &self.token
    }
}

struct Inner {
    section: NetworkSection,
    policy_rules: Vec<NetworkRule>,
    approvals_file: Option<PathBuf>,
    /// Secrets swapped in by the proxy, and what tasks get instead: the placeholders
    /// and the variables that make them trust the session's certificate authority.
    credentials: Option<Arc<Credentials>>,
    credential_env: Vec<(String, String)>,
    rules: Rules,
    enforcement: Enforcement,
    on_ask: OnAsk,
    approver: ApproverSlot,
    ask_timeout: Duration,
    /// Hosts a person answered for, this session: true allowed.
    answered: Mutex<HashMap<String, bool>>,
    entries: Mutex<HashMap<String, Entry>>,
    audit: Option<Mutex<std::fs::File>>,
    next_token: AtomicU64,
}

impl std::fmt::Debug for NetworkFence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NetworkFence({})", self.inner.enforcement.name())
    }
}

/// A session's network fence.
pub struct NetworkFence {
    inner: Arc<Inner>,
    egress: OnceLock<Egress>,
    runtime: OnceLock<tokio::runtime::Handle>,
    /// The session's namespaces (the namespace fence): the doors and the host ports are
    /// listeners in them, published ports connections into them.
    spaces: Option<Arc<Spaces>>,
    /// The host ports and published ports, served from the first task on; what could not
    /// be served, said in every task's result.
    bridges: OnceLock<Vec<String>>,
    /// Ends the bridges with the session.
    stop: tokio_util::sync::CancellationToken,
}

impl Drop for NetworkFence {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Who settles an `ask` and where refusals are written.
pub struct FenceSettings {
    pub on_ask: OnAsk,
    pub approver: ApproverSlot,
    pub ask_timeout: Duration,
    pub audit_log: Option<PathBuf>,
    /// The server's private run directory (the CA bundle of the credentials).
    pub run_dir: PathBuf,
    /// The exec policy's `[[network]]` rules.
    pub policy_rules: Vec<NetworkRule>,
    /// Where "allow for the session" answers are appended as `[[network]]` rules for a
    /// person to review and include (`[shell] approvals_file`).
    pub approvals_file: Option<PathBuf>,
}

impl NetworkFence {
    /// None when `[network] mode = "off"`. Err: `mode = "enforce"` and this machine has
    /// no kernel fence for it.
    /// `spaces`: the session's namespaces, when the fence is the namespace one.
    pub fn new(
        section: &NetworkSection,
        settings: FenceSettings,
        enforcement: Enforcement,
        spaces: Option<Arc<Spaces>>,
    ) -> Result<Option<NetworkFence>, String> {
        if section.mode == FenceMode::Off {
            return Ok(None);
        }
        if section.mode == FenceMode::Enforce
            && let Enforcement::VariablesOnly { why } = &enforcement
        {
            return Err(format!(
                "[network] mode = \"enforce\", but this machine can fence neither by network namespace nor by Landlock and seccomp: {why}"
            ));
        }
        let audit = match &settings.audit_log {
            Some(p) => {
                let mut opts = std::fs::OpenOptions::new();
                opts.create(true).append(true);
                std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
                Some(Mutex::new(opts.open(p).map_err(|e| {
                    format!("cannot open the audit log {}: {e}", p.display())
                })?))
            }
            None => None,
        };
        let (credentials, credential_env) = credentials(section, &settings.run_dir)?;
        let enforcement_kind = match &enforcement {
            Enforcement::Namespace { .. } => Kind::Namespace,
            _ => Kind::Other,
        };
        let rules = Rules {
            allow_domains: section.allow_domains.clone(),
            deny_domains: section.deny_domains.clone(),
            ports: section.ports.clone(),
            allow_unlisted: section.on_new_domain == OnNewDomain::Allow,
        };
        Ok(Some(NetworkFence {
            inner: Arc::new(Inner {
                section: section.clone(),
                policy_rules: settings.policy_rules,
                approvals_file: settings.approvals_file,
                credentials,
                credential_env,
                rules,
                enforcement,
                on_ask: settings.on_ask,
                approver: settings.approver,
                ask_timeout: settings.ask_timeout,
                answered: Mutex::default(),
                entries: Mutex::default(),
                audit,
                next_token: AtomicU64::new(1),
            }),
            egress: OnceLock::new(),
            runtime: OnceLock::new(),
            spaces: spaces.filter(|_| matches!(enforcement_kind, Kind::Namespace)),
            bridges: OnceLock::new(),
            stop: tokio_util::sync::CancellationToken::new(),
        }))
    }

    pub fn enforcement(&self) -> &Enforcement {
        &self.inner.enforcement
    }

    fn egress(&self) -> Result<&Egress, String> {
        if let Some(e) = self.egress.get() {
            return Ok(e);
        }
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|_| "the network fence needs the async runtime".to_string())?;
        let _ = self.runtime.set(handle);
        let s = &self.inner.section;
        let config = ProxyConfig {
            allow_private: crate::web::address::AllowList::parse(&s.allow_private)?,
            max_connections: s.max_connections,
            idle_timeout: Duration::from_secs(s.idle_timeout_s),
            credentials: self.inner.credentials.clone(),
            upstream_roots: extra_roots(&s.ca_files)?,
            ..ProxyConfig::default()
        };
        let resolve: Arc<dyn Resolve> = if s.hosts.is_empty() {
            Arc::new(SystemResolver)
        } else {
            // The map's names only: a profile with a host map is for a closed network.
            let mut map = StaticResolver::new();
            for (name, addrs) in &s.hosts {
                map = map.with(name, &addrs.addrs());
            }
            Arc::new(map)
        };
        Ok(self.egress.get_or_init(|| Egress::new(config, resolve)))
    }

    /// Make `command`'s network before it is spawned: a door, its variables, and what
    /// the supervisor must do. Call [`NetworkFence::started`] with the task id after.
    /// `deny_tcp`: `[landlock] network = "deny"`, whose layers name every port a task
    /// may connect to, so the door must take one of [`DOOR_PORTS`].
    pub fn prepare(&self, command: &str, deny_tcp: bool) -> Result<TaskNet, String> {
        let egress = self.egress()?.clone();
        let notes = self.bridges().clone();
        let n = self.inner.next_token.fetch_add(1, Ordering::Relaxed);
        let token = format!("n{n}-{}", random_hex());
        let doors: Vec<u16> = DOOR_PORTS.collect();
        let host_ports = &self.inner.section.host_ports;
        let (listener, no_proxy) = match (&self.inner.enforcement, &self.spaces) {
            (Enforcement::Namespace { .. }, Some(spaces)) => (
                spaces.listen(&doors).map_err(|e| {
                    format!("cannot open the proxy's door in the session's namespace: {e}")
                })?,
                // The namespace's loopback is the session's own (its servers, and the
                // machine's host ports through it).
                "localhost,127.0.0.1,::1".to_string(),
            ),
            _ => {
                let ports: &[u16] = if deny_tcp { &doors } else { &[0] };
                let mut bound = Err(std::io::Error::other("no port to try"));
                for port in ports {
                    bound = std::net::TcpListener::bind(("127.0.0.1", *port));
                    if bound.is_ok() {
                        break;
                    }
                }
                (
                    bound.map_err(|e| format!("cannot open the proxy's port: {e}"))?,
                    // Loopback is this machine's: through the proxy, which refuses it,
                    // but for the host ports, which a task reaches directly.
                    if host_ports.is_empty() {
                        String::new()
                    } else {
                        "localhost,127.0.0.1,::1".to_string()
                    },
                )
            }
        };
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("cannot open the proxy's port: {e}"))?;
        let door = self.open_door(&egress, listener, &token)?;
        let door_port = door.addr().port();
        let url = door.url();
        let landlock_fence = matches!(self.inner.enforcement, Enforcement::Landlock { .. });
        let mut entries = self.inner.entries.lock().map_err(|_| "poisoned")?;
        forget_oldest_ended(&mut entries);
        entries.insert(
            token.clone(),
            Entry {
                serial: n,
                task: None,
                pid: None,
                command: command.to_string(),
                door: Some(door),
                log: TaskLog::default(),
            },
        );
        drop(entries);
        let mut env = Vec::new();
        for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
            env.push((name.to_string(), url.clone()));
            env.push((name.to_ascii_lowercase(), url.clone()));
        }
        env.push(("NO_PROXY".into(), no_proxy.clone()));
        env.push(("no_proxy".into(), no_proxy));
        // Node's built-in fetch reads the variables only when told to (Node 24+).
        env.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
        env.extend(self.inner.credential_env.iter().cloned());
        Ok(TaskNet {
            token,
            env,
            door_port,
            landlock_fence,
            notes,
        })
    }

    /// The host ports and published ports, started with the first task (they need the
    /// runtime and, for the namespace fence, the session's namespaces); what could not
    /// be served.
    fn bridges(&self) -> &Vec<String> {
        self.bridges.get_or_init(|| {
            let Some(handle) = self.runtime.get() else {
                return Vec::new();
            };
            let s = &self.inner.section;
            match &self.spaces {
                Some(spaces) => bridges::start(
                    handle,
                    &self.inner,
                    spaces,
                    &s.host_ports,
                    &s.publish,
                    &self.stop,
                ),
                // Outside a namespace the machine's loopback is the task's own: nothing
                // to bridge.
                None => Vec::new(),
            }
        })
    }

    /// The task `prepare`d under `token` started (or did not start: None, and its door
    /// closes).
    /// `task` is the task's id and its supervisor's pid.
    pub fn started(&self, token: &str, task: Option<(&str, i32)>) {
        if let Ok(mut entries) = self.inner.entries.lock() {
            match task {
                Some((id, pid)) => {
                    // A label seen before (an upstream server restarted): the earlier
                    // process is gone, and so is its door.
                    for (other, e) in entries.iter_mut() {
                        if other != token && e.task.as_deref() == Some(id) {
                            e.door = None;
                        }
                    }
                    if let Some(e) = entries.get_mut(token) {
                        e.task = Some(id.to_string());
                        e.pid = Some(pid);
                    }
                }
                None => {
                    entries.remove(token);
                }
            }
        }
    }

    /// The task ended: let the proxy record what its last connections did (its
    /// processes are gone, so their sockets are closing), at most `patience`, then close
    /// its door.
    pub async fn ended(&self, task_id: &str, patience: Duration) {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            let active = self.inner.entries.lock().ok().map(|entries| {
                entries
                    .values()
                    .filter(|e| e.task.as_deref() == Some(task_id))
                    .filter_map(|e| e.door.as_ref().map(Door::active))
                    .sum::<usize>()
            });
            if active.unwrap_or(0) == 0 || tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if let Ok(mut entries) = self.inner.entries.lock() {
            for e in entries.values_mut() {
                if e.task.as_deref() == Some(task_id) {
                    e.door = None;
                }
            }
        }
    }

    fn open_door(
        &self,
        egress: &Egress,
        listener: std::net::TcpListener,
        token: &str,
    ) -> Result<Door, String> {
        let handle = self
            .runtime
            .get()
            .ok_or("the network fence has no runtime yet")?;
        let _entered = handle.enter();
        let listener = tokio::net::TcpListener::from_std(listener)
            .map_err(|e| format!("cannot serve the proxy's port: {e}"))?;
        let decide: Arc<dyn Decide> = Arc::new(TaskDecide {
            inner: self.inner.clone(),
            token: token.to_string(),
        });
        let inner = self.inner.clone();
        let tok = token.to_string();
        let sink: Sink = Arc::new(move |r| inner.record(&tok, r));
        egress
            .open(
                listener,
                DoorConfig {
                    decide,
                    sink,
                    label: Some(token.to_string()),
                    identify: Some(self.inner.identify(token)),
                },
            )
            .map_err(|e| format!("cannot serve the proxy's port: {e}"))
    }

    /// A line for a command whose output says it tried the network without the proxy
    /// (a name that did not resolve, no route): under a kernel fence that is the fence,
    /// and the model should know it, not retry.
    pub fn explain_direct(&self, output_tail: &str) -> Option<String> {
        if matches!(self.inner.enforcement, Enforcement::VariablesOnly { .. }) {
            return None;
        }
        let lower = output_tail.to_ascii_lowercase();
        let signs = [
            "could not resolve host",
            "temporary failure in name resolution",
            "name or service not known",
            "network is unreachable",
            "no address associated with hostname",
            "getaddrinfo",
        ];
        signs.iter().any(|s| lower.contains(s)).then(|| {
            format!(
                "network: this command's own connections reach nothing ({}); only HTTP(S) \
                 through the proxy in HTTP_PROXY/HTTPS_PROXY leaves, and the proxy resolves names \
                 itself. Use a tool that honours those variables (curl, git over https, pip, npm, \
                 cargo), not ssh or raw sockets; a host refused by the proxy is named in its 403",
                self.inner.enforcement.name()
            )
        })
    }

    /// `data.network` for a task, and lines for its text (refusals, with how to allow).
    pub fn report(&self, task_id: &str) -> (Value, Vec<String>) {
        let entries = self.inner.entries.lock();
        let log = entries
            .ok()
            .and_then(|e| {
                e.values()
                    .find(|e| e.task.as_deref() == Some(task_id))
                    .map(|e| e.log.clone())
            })
            .unwrap_or_default();
        let mut lines = Vec::new();
        for ((host, port), r) in &log.refused {
            let by = if r.by.is_empty() {
                String::new()
            } else {
                format!(" for {}", r.by.join(", "))
            };
            lines.push(format!(
                "network: {host}:{port} refused{by} ({}). To allow it: {}",
                r.rule, r.how_to_allow
            ));
        }
        let reached: Vec<Value> = log
            .reached
            .iter()
            .map(|((host, port), r)| json!({"host": host, "port": port, "connections": r.connections, "bytes_up": r.bytes_up, "bytes_down": r.bytes_down, "by": r.by}))
            .collect();
        let refused: Vec<Value> = log
            .refused
            .iter()
            .map(|((host, port), r)| json!({"host": host, "port": port, "rule": r.rule, "how_to_allow": r.how_to_allow, "times": r.times, "by": r.by}))
            .collect();
        let mut still_open = self.inner.enforcement.still_open();
        let host_ports = &self.inner.section.host_ports;
        if !host_ports.is_empty() && matches!(self.inner.enforcement, Enforcement::Landlock { .. })
        {
            still_open.push(format!(
                "TCP to any address on the host_ports ({}): Landlock decides by port",
                host_ports
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let data = json!({
            "enforcement": self.inner.enforcement.name(),
            "still_open": still_open,
            "reached": reached,
            "refused": refused,
        });
        (data, lines)
    }
}

/// Which fence, for choosing what [`NetworkFence::new`] keeps.
enum Kind {
    Namespace,
    Other,
}

/// Variables for a task's environment.
type Vars = Vec<(String, String)>;

/// The profile's credentials whose secret is in whalebox's environment, and the
/// variables a task gets for them (placeholders, and the CA bundle that makes its tools
/// trust the proxy for those hosts). A credential whose variable is unset is left out,
/// with a warning: its tasks get no placeholder, and the host sees no secret.
fn credentials(
    section: &NetworkSection,
    run_dir: &std::path::Path,
) -> Result<(Option<Arc<Credentials>>, Vars), String> {
    let mut list = Vec::new();
    for (name, c) in &section.credentials {
        let secret = crate::net::secrets::get(&c.env).unwrap_or_default();
        if secret.is_empty() {
            tracing::warn!(
                "[network.credentials.{name}]: ${} is not set in whalebox's environment; commands get no placeholder for it",
                c.env
            );
            continue;
        }
        list.push(Credential {
            name: name.clone(),
            env: c.env.clone(),
            hosts: c.hosts.clone(),
            sending: match &c.basic {
                Some(user) => Sending::Basic { user: user.clone() },
                None => Sending::Header {
                    header: c.header.clone(),
                    format: c.format.clone(),
                },
            },
            secret,
            plain_http: c.plain_http,
        });
    }
    if list.is_empty() {
        return Ok((None, Vec::new()));
    }
    let creds = Credentials::new(list)?;
    let bundle = creds
        .write_ca_bundle(run_dir)
        .map_err(|e| format!("cannot write the session's CA bundle: {e}"))?;
    let mut env = creds.task_env();
    env.extend(trust_env(&bundle));
    Ok((Some(Arc::new(creds)), env))
}

/// The certificates of `[network] ca_files`.
fn extra_roots(
    files: &[String],
) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = Vec::new();
    for file in files {
        let found: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(file)
            .and_then(|certs| certs.collect::<Result<_, _>>())
            .map_err(|e| format!("[network] ca_files: {file}: {e}"))?;
        if found.is_empty() {
            return Err(format!("[network] ca_files: {file} holds no certificate"));
        }
        roots.extend(found);
    }
    Ok(roots)
}

impl Inner {
    /// The door's way to name the programs behind a connection.
    fn identify(self: &Arc<Self>, token: &str) -> super::proxy::Identify {
        let inner = Arc::downgrade(self);
        let token = token.to_string();
        Arc::new(move |peer, door| {
            let Some(inner) = inner.upgrade() else {
                return Ok(None);
            };
            let pid = inner
                .entries
                .lock()
                .ok()
                .and_then(|e| e.get(&token).and_then(|e| e.pid));
            if let Some(found) = pid.and_then(|pid| super::programs::chain(pid, peer, door)) {
                return Ok(Some(found));
            }
            // Not this task's: another task of the session may be using its door.
            match inner.owner_of(peer, Some(door)) {
                Some((other, programs)) if other != *token => {
                    let (task, _) = inner.task_of(&other);
                    let recorder = Arc::clone(&inner);
                    let sink: Sink = Arc::new(move |r| recorder.record(&other, r));
                    Err(super::proxy::Foreign {
                        task: task.unwrap_or_default(),
                        sink,
                        programs: Some(programs),
                    })
                }
                _ => Ok(None),
            }
        })
    }

    fn task_of(&self, token: &str) -> (Option<String>, String) {
        self.entries
            .lock()
            .ok()
            .and_then(|e| e.get(token).map(|e| (e.task.clone(), e.command.clone())))
            .unwrap_or((None, String::new()))
    }
}

/// 16 random bytes as hex, for tokens (from the kernel's generator).
fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut bytes);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests;
