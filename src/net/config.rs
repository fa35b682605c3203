//! The proxy's settings ([`ProxyConfig`]), apart from the proxy so that the TLS
//! interception it hands credential hosts to can read them without a circle.

use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::CertificateDer;

use super::credential::Credentials;
use crate::web::address::AllowList;

/// The proxy's limits and its address exemptions.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Addresses and CIDR blocks reachable although loopback/private/link-local.
    pub allow_private: AllowList,
    /// Client connections served at once; one more is answered 503 and closed.
    pub max_connections: usize,
    /// A request head (request line and headers) past this is answered 431.
    pub max_header_bytes: usize,
    /// A connection with no byte either way for this long is closed.
    pub idle_timeout: Duration,
    /// The whole request head must arrive within this.
    pub head_timeout: Duration,
    /// Resolving the name, and then connecting to each address.
    pub connect_timeout: Duration,
    /// Credentials the task never sees ([`super::credential`]): their placeholders are
    /// swapped in requests to their hosts (whose TLS the proxy then ends) and refused
    /// elsewhere.
    pub credentials: Option<Arc<Credentials>>,
    /// Roots trusted for credential hosts' certificates besides Mozilla's and the
    /// system's (a test's CA, a corporate one).
    pub upstream_roots: Vec<CertificateDer<'static>>,
}

impl Default for ProxyConfig {
    fn default() -> ProxyConfig {
        ProxyConfig {
            allow_private: AllowList::default(),
            max_connections: 256,
            max_header_bytes: 64 * 1024,
            idle_timeout: Duration::from_secs(300),
            head_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            credentials: None,
            upstream_roots: Vec::new(),
        }
    }
}
