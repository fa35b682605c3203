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
