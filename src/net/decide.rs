//! Whether a host may be reached: the [`Decide`] trait the proxy asks once per connection,
//! before it resolves the name, and [`Rules`], a plain allow/deny/ports decider that knows
//! nothing of profiles (the `[network]` section will build one, and an `ask` will wrap it).

use std::future::Future;
use std::pin::Pin;

use crate::web::guard::host_matches;

/// The answer for one host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Refused: `rule` says which rule refused (shown to the task and recorded),
    /// `how_to_allow` what a person would change to allow it.
    Deny {
        rule: String,
        how_to_allow: String,
    },
}

impl Decision {
    pub fn deny(rule: impl Into<String>, how_to_allow: impl Into<String>) -> Decision {
        Decision::Deny {
            rule: rule.into(),
            how_to_allow: how_to_allow.into(),
        }
    }
}

pub type DecisionFuture<'a> = Pin<Box<dyn Future<Output = Decision> + Send + 'a>>;

/// Decides a host (lower case, no trailing dot, IDNs in punycode; an address literal as
/// its canonical text, `127.0.0.1`, `::1`) and port. Asynchronous, so an `ask` can wait
/// for a person; a plain closure `Fn(&str, u16) -> Decision` is a `Decide` too.
pub trait Decide: Send + Sync {
    fn decide<'a>(&'a self, host: &'a str, port: u16) -> DecisionFuture<'a>;
}

impl<F> Decide for F
where
    F: Fn(&str, u16) -> Decision + Send + Sync,
{
    fn decide<'a>(&'a self, host: &'a str, port: u16) -> DecisionFuture<'a> {
        Box::pin(std::future::ready(self(host, port)))
    }
}

/// Exact names and `*.domain` patterns (the web group's syntax), a port list, and what
/// happens to a host no list names.
#[derive(Debug, Clone)]
pub struct Rules {
    pub allow_domains: Vec<String>,
    pub deny_domains: Vec<String>,
    /// Empty: every port.
    pub ports: Vec<u16>,
    /// Whether a host in neither list is allowed.
    pub allow_unlisted: bool,
}

/// What the lists say of a host, before anyone is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    Denied(Decision),
    /// In neither list, on an allowed port.
    Unlisted,
}

impl Rules {
    pub fn decide_now(&self, host: &str, port: u16) -> Decision {
        match self.verdict(host, port) {
            Verdict::Allowed => Decision::Allow,
            Verdict::Denied(d) => d,
            Verdict::Unlisted if self.allow_unlisted => Decision::Allow,
            Verdict::Unlisted => Decision::deny(
                format!("{host} is not in allow_domains"),
                format!("add \"{host}\" (or \"*.{host}\" with its subdomains) to allow_domains"),
            ),
        }
    }

    pub fn verdict(&self, host: &str, port: u16) -> Verdict {
        if !self.ports.is_empty() && !self.ports.contains(&port) {
            return Verdict::Denied(Decision::deny(
                format!("port {port} is not in the allowed ports {:?}", self.ports),
                format!(
                    "add {port} to the network ports if {host}:{port} is meant to be reachable"
                ),
            ));
        }
        if let Some(p) = self.deny_domains.iter().find(|p| host_matches(p, host)) {
            return Verdict::Denied(Decision::deny(
                format!("{host} is in deny_domains (`{p}`)"),
                format!("remove `{p}` from deny_domains"),
            ));
        }
        if self.allow_domains.iter().any(|p| host_matches(p, host)) {
            return Verdict::Allowed;
        }
        Verdict::Unlisted
    }
}

impl Decide for Rules {
    fn decide<'a>(&'a self, host: &'a str, port: u16) -> DecisionFuture<'a> {
        Box::pin(std::future::ready(self.decide_now(host, port)))
    }
}
