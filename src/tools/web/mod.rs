//! Group `web` (opt-in): `web_fetch` (a page as Markdown of its main content, or any
//! text as it is), `fetch` (plain GET/HEAD for APIs: status, headers, body verbatim) and
//! `web_search` (the configured backend). Every request and redirect hop passes the
//! guard of [`crate::web`]; converted documents are cached per session so `start_index`
//! pages through them without fetching again. No summarizing model: the model gets the
//! page.
//!
//! This module registers the tools and owns their shared state (`Web`: the guard,
//! the cache, the hosts approved for the session). `send` makes a request and asks
//! about new hosts, `response` turns a response into a result, and each tool has its
//! submodule.

mod fetch;
mod response;
mod send;
mod web_fetch;
mod web_search;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use url::Url;

use crate::core::{Registry, RegistryError, ToolError};
use crate::profile::WebSection;
use crate::web::cache::Cache;
use crate::web::guard::Guard;

use super::Env;
use fetch::Fetch;
use web_fetch::WebFetch;
use web_search::WebSearch;

pub(crate) fn register(env: &Arc<Env>, registry: &mut Registry) -> Result<(), RegistryError> {
    let cfg = &env.profile.web;
    let guard = Guard::new(cfg).expect("[web] allow_private was checked when the profile loaded");
    let state = Arc::new(Web {
        env: Arc::clone(env),
        guard,
        user_agent: cfg.user_agent.clone().unwrap_or_else(|| {
            format!(
                "whalebox/{} (+https://github.com/whalebox/whalebox)",
                env!("CARGO_PKG_VERSION")
            )
        }),
        cache: Cache::default(),
        approved: Mutex::default(),
    });
    registry.register("web", Arc::new(WebFetch(Arc::clone(&state))))?;
    registry.register("web", Arc::new(Fetch(Arc::clone(&state))))?;
    registry.register("web", Arc::new(WebSearch(state)))
}

struct Web {
    env: Arc<Env>,
    guard: Guard,
    user_agent: String,
    cache: Cache,
    /// Hosts the person allowed for the session (`on_new_host = "ask"`).
    approved: Mutex<HashSet<String>>,
}

fn url_of(raw: &str) -> Result<Url, ToolError> {
    let raw = raw.trim();
    Url::parse(raw).map_err(|e| {
        let hint = if !raw.contains("://") && raw.contains('.') {
            format!("give the whole URL, for example https://{raw}")
        } else {
            "give an absolute http or https URL".to_string()
        };
        ToolError::invalid_input(format!("`{raw}` is not a URL: {e}"), hint)
    })
}

impl Web {
    fn cfg(&self) -> &WebSection {
        &self.env.profile.web
    }

    fn ttl(&self) -> Duration {
        Duration::from_secs(self.cfg().cache_ttl_s)
    }

    fn default_length(&self) -> usize {
        self.env
            .limits
            .max_chars()
            .saturating_sub(1000)
            .clamp(500, 20_000)
    }
}
