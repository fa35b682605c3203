//! Names to addresses, for the proxy only: the proxy resolves every name itself (a task
//! never gets to pick the address) and checks each address before it connects. Tests and
//! a documented static host map use [`StaticResolver`], so no test asks real DNS.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;

pub type ResolveFuture<'a> = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'a>>;

pub trait Resolve: Send + Sync {
    /// Every address `host` (a name, never an address literal) resolves to.
    fn resolve<'a>(&'a self, host: &'a str) -> ResolveFuture<'a>;
}

/// The system's resolver (getaddrinfo on tokio's blocking pool).
#[derive(Debug, Clone, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> ResolveFuture<'a> {
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host, 0)).await?;
            let mut ips: Vec<IpAddr> = Vec::new();
            for a in addrs {
                if !ips.contains(&a.ip()) {
                    ips.push(a.ip());
                }
            }
            Ok(ips)
        })
    }
}

/// A fixed map of names (exact, lower case) to addresses; any other name does not resolve.
#[derive(Debug, Clone, Default)]
pub struct StaticResolver(HashMap<String, Vec<IpAddr>>);

impl StaticResolver {
    pub fn new() -> StaticResolver {
        StaticResolver::default()
    }

    pub fn with(mut self, host: &str, ips: &[IpAddr]) -> StaticResolver {
        self.0.insert(host.to_ascii_lowercase(), ips.to_vec());
        self
    }
}

impl Resolve for StaticResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> ResolveFuture<'a> {
        let found = self.0.get(host).cloned().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("{host} is not in the static host map"),
            )
        });
        Box::pin(std::future::ready(found))
    }
}
