//! Network rules in a policy file (`[[network]]`): which hosts a repository's commands
//! may reach, versioned with the repository, each rule checked against its `match` and
//! `not_match` examples when the file loads. The network fence combines them with the
//! profile's `[network]` lists: the strictest decision wins (deny > ask > allow).

use serde::{Deserialize, Serialize};

use super::{Decision, PolicyError};

/// `[[network]]` as written.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NetworkRuleFile {
    /// Host names, exact or "*.domain" (the domain and its subdomains).
    #[schemars(with = "Vec<String>", length(min = 1))]
    pub hosts: toml::Spanned<Vec<String>>,
    /// Ports the rule is about (empty or absent: any).
    #[serde(default)]
    pub ports: Vec<u16>,
    pub decision: Decision,
    /// Why: shown with every refusal and question.
    pub justification: Option<String>,
    /// Hosts (`host` or `host:port`) this rule must match, checked when the file loads.
    #[serde(default, rename = "match")]
    pub matches: Vec<String>,
    /// Hosts this rule must not match, checked when the file loads.
    #[serde(default)]
    pub not_match: Vec<String>,
}

/// One network rule, with where it was written.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NetworkRule {
    pub hosts: Vec<String>,
    pub ports: Vec<u16>,
    pub decision: Decision,
    pub justification: Option<String>,
    /// `file:line` of the rule's hosts.
    pub source: String,
}

impl NetworkRule {
    pub fn matches(&self, host: &str, port: u16) -> bool {
        (self.ports.is_empty() || self.ports.contains(&port))
            && self.hosts.iter().any(|p| host_matches(p, host))
    }

    /// "file:line (decision: justification)", for refusals and questions.
    pub fn describe(&self) -> String {
        match &self.justification {
            Some(j) => format!("{} ({}: {j})", self.source, self.decision.as_str()),
            None => format!("{} ({})", self.source, self.decision.as_str()),
        }
    }
}

/// The strictest rule of `rules` that matches, if any.
pub fn judge<'a>(rules: &'a [NetworkRule], host: &str, port: u16) -> Option<&'a NetworkRule> {
    let rank = |d: Decision| match d {
        Decision::Deny => 2,
        Decision::Ask => 1,
        Decision::Allow => 0,
    };
    rules
        .iter()
        .filter(|r| r.matches(host, port))
        .max_by_key(|r| rank(r.decision))
}

/// Check one rule as written and turn it into a [`NetworkRule`].
pub(super) fn load(r: NetworkRuleFile, source: String) -> Result<NetworkRule, PolicyError> {
    let hosts = r.hosts.into_inner();
    if hosts.is_empty() {
        return Err(PolicyError(format!(
            "{source}: a network rule needs at least one host"
        )));
    }
    for pattern in &hosts {
        let bare = pattern.strip_prefix("*.").unwrap_or(pattern);
        if bare.is_empty() || bare.contains(['*', '/', ':', ' ']) {
            return Err(PolicyError(format!(
                "{source}: host pattern `{pattern}`: use a host name (`crates.io`) or `*.` and a domain (`*.github.com`)"
            )));
        }
    }
    let rule = NetworkRule {
        hosts: hosts.iter().map(|h| h.to_ascii_lowercase()).collect(),
        ports: r.ports,
        decision: r.decision,
        justification: r.justification,
        source: source.clone(),
    };
    let example = |e: &str| -> (String, u16) {
        match e.rsplit_once(':') {
            Some((h, p)) if p.parse::<u16>().is_ok() => {
                (h.to_ascii_lowercase(), p.parse().unwrap_or(443))
            }
            _ => (
                e.to_ascii_lowercase(),
                rule.ports.first().copied().unwrap_or(443),
            ),
        }
    };
    for e in &r.matches {
        let (h, p) = example(e);
        if !rule.matches(&h, p) {
            return Err(PolicyError(format!(
                "{source}: the network rule does not match its example `{e}`"
            )));
        }
    }
    for e in &r.not_match {
        let (h, p) = example(e);
        if rule.matches(&h, p) {
            return Err(PolicyError(format!(
                "{source}: the network rule matches `{e}`, listed in not_match"
            )));
        }
    }
    Ok(rule)
}

/// Does `host` match `pattern` (exact, or `*.domain` for the domain and its subdomains)?
/// The pattern is lower-cased and its trailing dot dropped; hosts come lower-cased.
pub fn host_matches(pattern: &str, host: &str) -> bool {
    let pattern = pattern.trim().trim_end_matches('.').to_ascii_lowercase();
    match pattern
        .strip_prefix("*.")
        .or_else(|| pattern.strip_prefix('.'))
    {
        Some(domain) => host == domain || host.ends_with(&format!(".{domain}")),
        None => host == pattern,
    }
}
