//! whalebox's front door over HTTP, in front of any MCP Streamable HTTP endpoint.
//!
//! - [`settings`]: the profile's `[http]` section (where to listen, tokens, OAuth, TLS,
//!   limits) as written and as resolved;
//! - [`auth`]: who is calling: bearer tokens from a file (compared in constant time)
//!   and OAuth 2.1 resource-server mode (JWTs checked against a JWKS, RFC 9728
//!   metadata);
//! - [`metrics`]: the Prometheus metrics the server keeps;
//! - [`front`]: the routes (`/mcp` handed to the [`Endpoint`] once the caller is known,
//!   `/healthz`, `/readyz`, `/metrics`, the protected-resource metadata) and the request
//!   limits (body size and time);
//! - [`listen`]: the listener (TCP, or TLS from certificate files), bounded
//!   connections, slow-header timeouts, and the graceful stop.
//!
//! The MCP protocol itself (sessions, the 2026-07-28 stateless requests, `Host` and
//! `Origin` checks) is the endpoint's: whalebox mounts rmcp's Streamable HTTP service.

pub mod auth;
pub mod front;
pub mod listen;
pub mod metrics;
pub mod settings;

pub use auth::{Authenticator, Principal, Scheme};
pub use front::{Body, Endpoint, Front, Ready};
pub use listen::{Listener, serve};
pub use metrics::Metrics;
pub use settings::{HttpFile, HttpSettings, KeySource, OAuthSettings, TlsFiles};
