//! `[network]`: the egress fence for every task (shell commands, `whalebox run`, upstream
//! MCP servers). The section as written, its checks, and the toolchain presets' registry
//! hosts that join `allow_domains`.

use std::collections::BTreeMap;
use std::net::IpAddr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::guard::presets::Preset;

/// The ports the proxy's doors take, the first free one each: in the session's network
/// namespace, or on the machine's loopback where `[landlock] network = "deny"` must name
/// them in advance (the server's own Landlock layer is made once, at start-up).
pub const DOOR_PORTS: std::ops::RangeInclusive<u16> = 3128..=3191;

/// `[network] mode`.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FenceMode {
    /// The proxy, and the kernel closing every other way out, or no task runs.
    Enforce,
    /// The proxy, and the strongest kernel fence the machine allows; what stays open is
    /// said in `whalebox doctor` and each result's `data.network`.
    #[default]
    BestEffort,
    /// No proxy and no fence: tasks reach the network directly.
    Off,
}

/// `[network] on_new_domain`: a host no list names.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OnNewDomain {
    Allow,
    /// Ask the person (as exec approvals are asked), once per host per session; where
    /// nobody can answer, `[shell] on_ask` settles it.
    #[default]
    Ask,
    Deny,
}

/// `[network] kernel`: which kernel fence keeps tasks to the proxy.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum KernelFence {
    /// A network namespace per task where the machine allows it, else Landlock.
    #[default]
    Auto,
    Namespace,
    /// Landlock TCP connect to the proxy's port and a socket filter, even where
    /// namespaces work (a task that must reach this machine's loopback services).
    Landlock,
}

/// `[network]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkSection {
    pub mode: FenceMode,
    pub kernel: KernelFence,
    /// Hosts reachable without asking: exact names, or "*.example.com" for it and its
    /// subdomains. The presets on add their registries' hosts.
    pub allow_domains: Vec<String>,
    /// Hosts never reachable (same patterns); wins over allow_domains.
    pub deny_domains: Vec<String>,
    /// Addresses or CIDR blocks reachable although loopback, private or link-local.
    pub allow_private: Vec<String>,
    /// Ports a connection may go to (empty: any).
    pub ports: Vec<u16>,
    pub on_new_domain: OnNewDomain,
    /// A static host map the proxy resolves from instead of DNS (names it lists only):
    /// for tests and for mirrors on a private network. "name" = "address" or a list.
    pub hosts: BTreeMap<String, HostAddrs>,
    /// Add the presets' registry hosts to allow_domains.
    pub preset_domains: bool,
    /// A connection with no byte either way for this long is closed.
    pub idle_timeout_s: u64,
    /// Connections through the proxy at once, across the session's tasks.
    pub max_connections: usize,
    /// Certificate authorities (PEM files) the proxy trusts, besides the public and the
    /// system roots, for the TLS it speaks itself: to a credential's hosts.
    pub ca_files: Vec<String>,
    /// Secrets the tasks never see: each task gets a placeholder in the variable, and
    /// the proxy puts the secret in requests to the credential's hosts only.
    pub credentials: BTreeMap<String, CredentialSection>,
    /// This machine's loopback services a task may reach: inside the session's network
    /// namespace, `127.0.0.1:PORT` (and `localhost:PORT`) reaches the machine's
    /// `127.0.0.1:PORT` (a database, a dev server the person runs), each connection
    /// decided and recorded as any other.
    pub host_ports: Vec<u16>,
    /// Ports of the session's network namespace the machine may reach: the machine's
    /// `127.0.0.1:PORT` reaches a server a task listens on at `127.0.0.1:PORT` (a dev
    /// server to open in a browser, an OAuth callback).
    pub publish: Vec<u16>,
}

/// `[network.credentials.NAME]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CredentialSection {
    /// The variable that holds the secret in whalebox's own environment; tasks get a
    /// placeholder in it.
    pub env: String,
    /// The hosts it is sent to (exact names or "*.domain").
    pub hosts: Vec<String>,
    /// The header it goes in (default Authorization).
    #[serde(default = "default_header")]
    pub header: String,
    /// How the header's value is made from the secret, `{}` standing for it (default
    /// "Bearer {}").
    #[serde(default = "default_format")]
    pub format: String,
    /// Send it as HTTP basic auth with this user name instead (the secret as password).
    pub basic: Option<String>,
    /// Also send it over plain HTTP, in clear on the wire (off: a plain-HTTP request
    /// that would carry it is refused, naming this line; over HTTPS the proxy ends TLS
    /// and masks the secret in whatever comes back).
    #[serde(default)]
    pub plain_http: bool,
}

fn default_header() -> String {
    "Authorization".into()
}

fn default_format() -> String {
    "Bearer {}".into()
}

impl Default for NetworkSection {
    fn default() -> Self {
        NetworkSection {
            mode: FenceMode::BestEffort,
            kernel: KernelFence::Auto,
            allow_domains: Vec::new(),
            deny_domains: Vec::new(),
            allow_private: Vec::new(),
            ports: vec![80, 443],
            on_new_domain: OnNewDomain::Ask,
            hosts: BTreeMap::new(),
            preset_domains: true,
            idle_timeout_s: 300,
            max_connections: 256,
            ca_files: Vec::new(),
            credentials: BTreeMap::new(),
            host_ports: Vec::new(),
            publish: Vec::new(),
        }
    }
}

/// One address or several.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(untagged)]
pub enum HostAddrs {
    One(IpAddr),
    Many(Vec<IpAddr>),
}

impl HostAddrs {
    pub fn addrs(&self) -> Vec<IpAddr> {
        match self {
            HostAddrs::One(a) => vec![*a],
            HostAddrs::Many(v) => v.clone(),
        }
    }
}

impl NetworkSection {
    /// Whether tasks go through the proxy.
    pub fn on(&self) -> bool {
        self.mode != FenceMode::Off
    }
}

/// The registry hosts a toolchain preset needs to fetch packages.
pub fn preset_hosts(preset: Preset) -> &'static [&'static str] {
    match preset {
        Preset::Rust => &["crates.io", "index.crates.io", "static.crates.io"],
        Preset::Node => &["registry.npmjs.org"],
        Preset::Python => &["pypi.org", "files.pythonhosted.org"],
        Preset::Go => &["proxy.golang.org", "sum.golang.org"],
        Preset::Nix => &["cache.nixos.org"],
    }
}

/// Values that cannot work.
pub fn check(n: &NetworkSection) -> Result<(), String> {
    crate::web::address::AllowList::parse(&n.allow_private)?;
    for pattern in n.allow_domains.iter().chain(&n.deny_domains) {
        let bare = pattern.strip_prefix("*.").unwrap_or(pattern);
        if bare.is_empty() || bare.contains(['*', '/', ':', ' ']) {
            return Err(format!(
                "[network] host pattern `{pattern}`: use a host name (`crates.io`) or `*.` and a domain (`*.github.com`)"
            ));
        }
    }
    if n.ports.contains(&0) {
        return Err("[network] ports: 0 is not a port".into());
    }
    for (key, list) in [("host_ports", &n.host_ports), ("publish", &n.publish)] {
        if list.contains(&0) {
            return Err(format!("[network] {key}: 0 is not a port"));
        }
        if let Some(p) = list.iter().find(|p| DOOR_PORTS.contains(p)) {
            let doors = &DOOR_PORTS;
            return Err(format!(
                "[network] {key}: {p} is one of the ports the session's proxy doors take ({}–{}); choose another",
                doors.start(),
                doors.end()
            ));
        }
    }
    if let Some(p) = n.host_ports.iter().find(|p| n.publish.contains(p)) {
        return Err(format!(
            "[network] port {p} is both in host_ports (the task reaches the machine's) and in publish (the machine reaches the task's); a port can go one way only"
        ));
    }
    for (name, addrs) in &n.hosts {
        if name.is_empty() || name.contains(['*', '/', ':', ' ']) || name.parse::<IpAddr>().is_ok()
        {
            return Err(format!(
                "[network.hosts] `{name}`: a key is a host name (`registry.test`)"
            ));
        }
        if addrs.addrs().is_empty() {
            return Err(format!("[network.hosts] `{name}` has no address"));
        }
    }
    for (name, c) in &n.credentials {
        let at = format!("[network.credentials.{name}]");
        if c.env.is_empty()
            || !c
                .env
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
        {
            return Err(format!(
                "{at} env = \"{}\" is not a variable name; it names the variable that holds the secret, not the secret",
                c.env
            ));
        }
        if c.hosts.is_empty() {
            return Err(format!(
                "{at} hosts is empty: name the hosts the secret is for"
            ));
        }
        for pattern in &c.hosts {
            let bare = pattern.strip_prefix("*.").unwrap_or(pattern);
            if bare.is_empty() || bare.contains(['*', '/', ':', ' ']) {
                return Err(format!(
                    "{at} host pattern `{pattern}`: use a host name or `*.` and a domain"
                ));
            }
        }
        if c.basic.is_none() && c.format.matches("{}").count() != 1 {
            return Err(format!(
                "{at} format = \"{}\" must hold `{{}}` once, where the secret goes",
                c.format
            ));
        }
        if c.header.is_empty()
            || !c
                .header
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '-')
        {
            return Err(format!(
                "{at} header = \"{}\" is not a header name",
                c.header
            ));
        }
    }
    if n.idle_timeout_s == 0 || n.max_connections == 0 {
        return Err("[network] idle_timeout_s and max_connections must be at least 1".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_ask_for_new_domains_on_web_ports() {
        let n = NetworkSection::default();
        assert_eq!(n.on_new_domain, OnNewDomain::Ask);
        assert_eq!(n.ports, vec![80, 443]);
        assert!(n.on());
        check(&n).unwrap();
    }

    #[test]
    fn bad_patterns_hosts_and_ports_are_refused() {
        let bad = |f: fn(&mut NetworkSection)| {
            let mut n = NetworkSection::default();
            f(&mut n);
            check(&n).unwrap_err()
        };
        assert!(bad(|n| n.allow_domains = vec!["https://x.org".into()]).contains("pattern"));
        assert!(bad(|n| n.ports = vec![0]).contains("port"));
        assert!(bad(|n| n.allow_private = vec!["nonsense".into()]).contains("nonsense"));
        assert!(
            bad(|n| {
                n.hosts
                    .insert("127.0.0.1".into(), HostAddrs::One([127, 0, 0, 1].into()));
            })
            .contains("host name")
        );
        assert!(
            bad(|n| {
                n.hosts.insert("a.test".into(), HostAddrs::Many(vec![]));
            })
            .contains("no address")
        );
    }

    #[test]
    fn every_preset_names_its_registry() {
        for p in [
            Preset::Rust,
            Preset::Node,
            Preset::Python,
            Preset::Go,
            Preset::Nix,
        ] {
            assert!(!preset_hosts(p).is_empty());
        }
    }
}
