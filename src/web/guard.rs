//! The checks every request and every redirect hop passes before a connection is made:
//! the scheme, the host against `allow_hosts` / `deny_hosts`, the port against `ports`,
//! and each address the host resolves to (or the literal address) against the private
//! ranges and `allow_private`. URLs are parsed by the WHATWG rules first, so an address
//! written in decimal, hex, octal or short form is judged as the address it means.

use std::net::IpAddr;

use url::{Host, Url};

use super::address::{AllowList, canonical, private_kind};
use super::settings::WebSection;

/// A refusal: what was refused and how the profile could allow it.
#[derive(Debug, Clone, PartialEq)]
pub struct Denied {
    pub why: String,
    pub how: String,
}

/// Where a checked URL goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The host as the URL names it (lower case; IPv6 without brackets).
    pub host: String,
    pub port: u16,
    /// The address, when the URL names one instead of a host name.
    pub literal: Option<IpAddr>,
}

#[derive(Debug, Clone)]
pub struct Guard {
    allow_hosts: Vec<String>,
    deny_hosts: Vec<String>,
    allow_private: AllowList,
    ports: Vec<u16>,
}

/// (Kept here for the web group; the rule lives with the policies.)
pub use whalebox_policy::network::host_matches;

impl Guard {
    pub fn new(cfg: &WebSection) -> Result<Guard, String> {
        Ok(Guard {
            allow_hosts: cfg.allow_hosts.clone(),
            deny_hosts: cfg.deny_hosts.clone(),
            allow_private: AllowList::parse(&cfg.allow_private)?,
            ports: cfg.ports.clone(),
        })
    }

    /// The scheme, host and port of `url`; `exempt` (the operator's own search
    /// endpoint) skips the host, port and address rules.
    pub fn url(&self, url: &Url, exempt: bool) -> Result<Target, Denied> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Denied {
                why: format!("the scheme `{}:` is not fetched", url.scheme()),
                how: "only http and https URLs can be fetched".into(),
            });
        }
        let (host, literal) = match url.host() {
            Some(Host::Domain(d)) => (d.trim_end_matches('.').to_ascii_lowercase(), None),
            Some(Host::Ipv4(ip)) => (ip.to_string(), Some(IpAddr::V4(ip))),
            Some(Host::Ipv6(ip)) => (ip.to_string(), Some(IpAddr::V6(ip))),
            None => {
                return Err(Denied {
                    why: "the URL has no host".into(),
                    how: "give a full URL such as https://example.org/page".into(),
                });
            }
        };
        let port = url.port_or_known_default().unwrap_or(0);
        let target = Target {
            host,
            port,
            literal,
        };
        if exempt {
            return Ok(target);
        }
        if let Some(ip) = literal {
            self.address(&target.host, ip)?;
        }
        if !self.ports.contains(&port) {
            return Err(Denied {
                why: format!("port {port} is not in [web] ports {:?}", self.ports),
                how: format!(
                    "add {port} to [web] ports in the profile if this service is meant to be reachable"
                ),
            });
        }
        if let Some(p) = self
            .deny_hosts
            .iter()
            .find(|p| host_matches(p, &target.host))
        {
            return Err(Denied {
                why: format!("{} is in [web] deny_hosts (`{p}`)", target.host),
                how: "remove it from deny_hosts in the profile, or fetch another host".into(),
            });
        }
        if !self.allow_hosts.is_empty()
            && !self
                .allow_hosts
                .iter()
                .any(|p| host_matches(p, &target.host))
        {
            return Err(Denied {
                why: format!(
                    "{} is not in [web] allow_hosts ({})",
                    target.host,
                    self.allow_hosts.join(", ")
                ),
                how: format!("add \"{}\" to allow_hosts in the profile", target.host),
            });
        }
        Ok(target)
    }

    /// One address `host` resolved to (or is).
    pub fn address(&self, host: &str, ip: IpAddr) -> Result<(), Denied> {
        let ip = canonical(ip);
        match private_kind(ip) {
            Some(kind) if !self.allow_private.allows(ip) => Err(Denied {
                why: if host == ip.to_string() {
                    format!("{ip} is a {kind} address")
                } else {
                    format!("{host} resolves to {ip}, a {kind} address")
                },
                how: format!(
                    "private, loopback and link-local addresses are refused so a page cannot \
                     make whalebox reach this machine or its network; if {ip} is meant to be \
                     reachable, add \"{ip}\" to [web] allow_private in the profile"
                ),
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(allow_private: &[&str]) -> Guard {
        let cfg = WebSection {
            allow_private: allow_private.iter().map(|s| s.to_string()).collect(),
            deny_hosts: vec!["*.evil.example".into()],
            ..WebSection::default()
        };
        Guard::new(&cfg).unwrap()
    }

    fn check(g: &Guard, url: &str) -> Result<Target, Denied> {
        g.url(&Url::parse(url).unwrap(), false)
    }

    #[test]
    fn every_spelling_of_loopback_and_metadata_is_refused() {
        let g = guard(&[]);
        for url in [
            "http://127.0.0.1/",
            "http://localhost./x",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
            "http://0x7f.1/",
            "http://127.1/",
            "http://017700000001/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://169.254.169.254/latest/meta-data/",
            "http://2852039166/",
            "http://0xa9fea9fe/",
            "http://0251.0376.0251.0376/",
            "http://[::ffff:169.254.169.254]/",
            "http://0/",
            "http://0.0.0.0/",
            "http://[::]/",
            "http://10.1.2.3/",
            "http://[fd00::1]/",
            "http://[fe80::1%25eth0]/",
            "http://100.100.100.200/",
            "http://192.168.0.1:80/",
        ] {
            let Ok(parsed) = Url::parse(url) else {
                continue; // not a URL at all: refused before any guard
            };
            let r = g.url(&parsed, false);
            if parsed.host_str() == Some("localhost.") {
                // A name: judged by what it resolves to (below), not here.
                assert!(r.is_ok());
                continue;
            }
            assert!(r.is_err(), "{url} ({:?}) must be refused", parsed.host());
        }
        let d = check(&g, "http://0x7f.1/").unwrap_err();
        assert!(d.why.contains("127.0.0.1 is a loopback address"), "{d:?}");
        assert!(d.how.contains("allow_private"), "{d:?}");
    }

    #[test]
    fn hosts_ports_and_schemes() {
        let g = guard(&["127.0.0.1"]);
        assert!(check(&g, "http://127.0.0.1/").is_ok());
        assert!(check(&g, "http://127.0.0.2/").is_err());
        assert!(
            check(&g, "http://127.0.0.1:8080/")
                .unwrap_err()
                .why
                .contains("port 8080")
        );
        assert!(check(&g, "ftp://example.org/").is_err());
        assert!(check(&g, "file:///etc/passwd").is_err());
        assert!(
            check(&g, "https://a.evil.example/")
                .unwrap_err()
                .why
                .contains("deny_hosts")
        );
        assert!(check(&g, "https://evil.example/").is_err());
        assert!(check(&g, "https://notevil.example/").is_ok());
        let only = Guard::new(&WebSection {
            allow_hosts: vec!["docs.rs".into()],
            ..WebSection::default()
        })
        .unwrap();
        assert!(check(&only, "https://docs.rs/x").is_ok());
        assert!(
            check(&only, "https://crates.io/")
                .unwrap_err()
                .how
                .contains("allow_hosts")
        );
        assert!(
            g.address("rebind.example", "10.0.0.1".parse().unwrap())
                .is_err()
        );
        assert!(
            g.address("ok.example", "93.184.215.14".parse().unwrap())
                .is_ok()
        );
    }
}
