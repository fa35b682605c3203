//! The web group's machinery: which URLs and addresses may be reached ([`guard`],
//! [`address`]), the HTTP client that resolves each host once and connects to the
//! checked address ([`client`]), pages as Markdown ([`html`]), the session's cache of
//! converted pages ([`cache`]) and the search backends ([`search`]).

pub mod address;
pub mod body;
pub mod cache;
pub mod client;
pub mod guard;
pub mod html;
pub mod search;
pub mod settings;

use url::Url;

use settings::WebSection;

/// The ports the server itself must reach for this profile's web group.
pub fn server_ports(cfg: &WebSection) -> Vec<u16> {
    let mut ports = cfg.ports.clone();
    for e in cfg.search.endpoints() {
        ports.push(
            e.url
                .as_deref()
                .and_then(|u| Url::parse(u).ok())
                .and_then(|u| u.port_or_known_default())
                .unwrap_or(443),
        );
    }
    ports.sort_unstable();
    ports.dedup();
    ports
}
