//! `[web]`: the fences of web_fetch, fetch and web_search, and the search backends,
//! with the checks a profile's values must pass (the profile loads them).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[web]`: the fences of web_fetch, fetch and web_search.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct WebSection {
    /// If non-empty, only these hosts (exact, or "*.example.com" for it and its subdomains).
    pub allow_hosts: Vec<String>,
    /// Hosts never fetched (same patterns).
    pub deny_hosts: Vec<String>,
    /// Addresses (IPs or CIDR blocks) reachable although loopback, private or link-local.
    pub allow_private: Vec<String>,
    /// Ports a URL may use.
    pub ports: Vec<u16>,
    /// The whole request, redirects and body included, at most this long.
    pub timeout_ms: u64,
    /// Body bytes read (after decompression); the rest is cut, and the result says so.
    pub max_bytes: u64,
    pub max_redirects: u32,
    /// How long a fetched page stays in the session's cache (paging reads it from there).
    pub cache_ttl_s: u64,
    /// The User-Agent header (default: whalebox/VERSION and the repository URL).
    pub user_agent: Option<String>,
    /// The first request to a host: allow, ask (the person, as exec approvals), or deny.
    pub on_new_host: OnNewHost,
    pub search: WebSearchSection,
}

impl Default for WebSection {
    fn default() -> Self {
        WebSection {
            allow_hosts: Vec::new(),
            deny_hosts: Vec::new(),
            allow_private: Vec::new(),
            ports: vec![80, 443],
            timeout_ms: 15_000,
            max_bytes: 10 * 1024 * 1024,
            max_redirects: 5,
            cache_ttl_s: 900,
            user_agent: None,
            on_new_host: OnNewHost::Allow,
            search: WebSearchSection::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OnNewHost {
    #[default]
    Allow,
    Ask,
    Deny,
}

/// `[web.search]`: the search backend (none by default: web_search says how to set one).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct WebSearchSection {
    /// searxng | brave | tavily | duckduckgo
    pub backend: Option<SearchBackend>,
    /// The backend's base URL (default: the public endpoint of brave, tavily and
    /// duckduckgo; required for searxng). Exempt from allow_private: the operator chose it.
    pub url: Option<String>,
    /// The name of the variable holding the API key (never the key itself).
    pub api_key_env: Option<String>,
    /// Backends tried in order when this one is rate-limited, blocked or down: a name
    /// (its public endpoint), or `{ backend, url, api_key_env }`.
    pub fallback: Vec<Fallback>,
}

/// One fallback search backend.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(untagged)]
pub enum Fallback {
    Named(SearchBackend),
    Endpoint {
        backend: SearchBackend,
        url: Option<String>,
        api_key_env: Option<String>,
    },
}

/// A search backend and where it answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub backend: SearchBackend,
    pub url: Option<String>,
    pub api_key_env: Option<String>,
}

impl WebSearchSection {
    /// The configured backend, then the fallbacks, in order.
    pub fn endpoints(&self) -> Vec<Endpoint> {
        let mut out = Vec::new();
        if let Some(backend) = self.backend {
            out.push(Endpoint {
                backend,
                url: self.url.clone(),
                api_key_env: self.api_key_env.clone(),
            });
        }
        for f in &self.fallback {
            out.push(match f {
                Fallback::Named(backend) => Endpoint {
                    backend: *backend,
                    url: None,
                    api_key_env: self.api_key_env.clone(),
                },
                Fallback::Endpoint {
                    backend,
                    url,
                    api_key_env,
                } => Endpoint {
                    backend: *backend,
                    url: url.clone(),
                    api_key_env: api_key_env.clone().or_else(|| self.api_key_env.clone()),
                },
            });
        }
        out
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchBackend {
    Searxng,
    Brave,
    Tavily,
    Duckduckgo,
}

impl WebSection {
    /// Values that cannot work.
    pub fn check(&self) -> Result<(), String> {
        let w = self;
        crate::web::address::AllowList::parse(&w.allow_private)?;
        if w.ports.is_empty() {
            return Err("[web] ports is empty: no URL could be fetched; use [80, 443]".into());
        }
        if w.timeout_ms == 0 || w.max_bytes == 0 {
            return Err("[web] timeout_ms and max_bytes must be at least 1".into());
        }
        for pattern in w.allow_hosts.iter().chain(&w.deny_hosts) {
            let bare = pattern.strip_prefix("*.").unwrap_or(pattern);
            if bare.is_empty() || bare.contains(['*', '/', ':', ' ']) {
                return Err(format!(
                    "[web] host pattern `{pattern}`: use a host name (`docs.rs`) or `*.` and a domain (`*.rust-lang.org`)"
                ));
            }
        }
        if w.search.backend == Some(SearchBackend::Searxng) && w.search.url.is_none() {
            return Err(
                "[web.search] backend = \"searxng\" needs `url`, your instance's base URL".into(),
            );
        }
        if let Some(var) = &w.search.api_key_env
            && (var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            return Err(format!(
                "[web.search] api_key_env = \"{var}\" is not a variable name; it names the variable that holds the key, not the key"
            ));
        }
        Ok(())
    }
}
