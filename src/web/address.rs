//! Which addresses a fetch may connect to. Everything that is not a public unicast
//! address is "private" here: loopback, RFC 1918, carrier-grade NAT, link-local (the
//! cloud metadata address 169.254.169.254 among them), multicast, broadcast, unspecified,
//! reserved and documentation ranges, IPv6 unique-local and site-local, and IPv6
//! addresses that embed one of those IPv4 addresses (IPv4-mapped, IPv4-compatible,
//! NAT64, 6to4). A private address is reachable only when `[web] allow_private` names it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// Why an address is not public, or None when it is.
pub fn private_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_kind(v4),
        IpAddr::V6(v6) => v6_kind(v6),
    }
}

fn v4_kind(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    Some(match o {
        [0, ..] => "unspecified (0.0.0.0/8)",
        [127, ..] => "loopback",
        [10, ..] => "private (10.0.0.0/8)",
        [172, b, ..] if (16..32).contains(&b) => "private (172.16.0.0/12)",
        [192, 168, ..] => "private (192.168.0.0/16)",
        [100, b, ..] if (64..128).contains(&b) => "carrier-grade NAT (100.64.0.0/10)",
        [169, 254, 169, 254] => "link-local (the cloud metadata address)",
        [169, 254, ..] => "link-local (169.254.0.0/16)",
        [192, 0, 0, _] => "IETF protocol assignments (192.0.0.0/24)",
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => "documentation",
        [198, b, ..] if b == 18 || b == 19 => "benchmarking (198.18.0.0/15)",
        [a, ..] if (224..240).contains(&a) => "multicast",
        [255, 255, 255, 255] => "broadcast",
        [a, ..] if a >= 240 => "reserved (240.0.0.0/4)",
        _ => return None,
    })
}

fn v6_kind(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some("unspecified (::)");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    let s = ip.segments();
    // IPv4 inside IPv6: judged as the IPv4 address it carries.
    let embedded = if let Some(v4) = ip.to_ipv4_mapped() {
        Some(v4)
    } else if s[..6] == [0; 6] {
        // IPv4-compatible (deprecated), ::a.b.c.d
        Some(Ipv4Addr::new(
            (s[6] >> 8) as u8,
            s[6] as u8,
            (s[7] >> 8) as u8,
            s[7] as u8,
        ))
    } else if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] || s[..2] == [0x64, 0xff9b] {
        // NAT64 (64:ff9b::/96 and the local-use 64:ff9b:1::/48)
        Some(Ipv4Addr::new(
            (s[6] >> 8) as u8,
            s[6] as u8,
            (s[7] >> 8) as u8,
            s[7] as u8,
        ))
    } else if s[0] == 0x2002 {
        // 6to4: 2002:AABB:CCDD::/48 carries AA.BB.CC.DD
        Some(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ))
    } else {
        None
    };
    if let Some(kind) = embedded.and_then(v4_kind) {
        return Some(kind);
    }
    Some(match s[0] {
        x if x & 0xfe00 == 0xfc00 => "unique-local (fc00::/7)",
        x if x & 0xffc0 == 0xfe80 => "link-local (fe80::/10)",
        x if x & 0xffc0 == 0xfec0 => "site-local (fec0::/10)",
        x if x & 0xff00 == 0xff00 => "multicast",
        0x2001 if s[1] == 0x0db8 => "documentation (2001:db8::/32)",
        0x0100 if s[1..4] == [0, 0, 0] => "discard-only (100::/64)",
        _ => return None,
    })
}

/// The parsed `allow_private` entries: addresses or CIDR blocks.
#[derive(Debug, Clone, Default)]
pub struct AllowList(Vec<IpNet>);

impl AllowList {
    pub fn parse(entries: &[String]) -> Result<AllowList, String> {
        entries
            .iter()
            .map(|e| {
                e.parse::<IpNet>()
                    .or_else(|_| e.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| {
                        format!("[web] allow_private: `{e}` is not an IP address or a CIDR block")
                    })
            })
            .collect::<Result<_, _>>()
            .map(AllowList)
    }

    pub fn allows(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.0.iter().any(|net| net.contains(&ip))
    }
}

/// IPv4-mapped IPv6 as the IPv4 address it is (so `allow_private = ["127.0.0.1"]` also
/// covers `[::ffff:127.0.0.1]`).
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(s: &str) -> Option<&'static str> {
        private_kind(s.parse().unwrap())
    }

    #[test]
    fn private_ranges_and_their_edges() {
        for ip in [
            "127.0.0.1",
            "127.255.255.254",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.255",
            "169.254.169.254",
            "169.254.0.1",
            "0.0.0.0",
            "0.1.2.3",
            "224.0.0.1",
            "239.255.255.255",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "::",
            "::1",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "ff02::1",
            "fec0::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "2001:db8::1",
        ] {
            assert!(kind(ip).is_some(), "{ip} must be private");
        }
        assert_eq!(
            kind("169.254.169.254"),
            Some("link-local (the cloud metadata address)")
        );
        assert_eq!(
            kind("::ffff:169.254.169.254"),
            Some("link-local (the cloud metadata address)")
        );
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "192.169.0.1",
            "169.253.255.255",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
            "2002:0808:0808::",
        ] {
            assert_eq!(kind(ip), None, "{ip} is public");
        }
    }

    #[test]
    fn allow_list_takes_addresses_and_blocks() {
        let list = AllowList::parse(&["127.0.0.1".into(), "10.1.0.0/16".into()]).unwrap();
        assert!(list.allows("127.0.0.1".parse().unwrap()));
        assert!(list.allows("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!list.allows("127.0.0.2".parse().unwrap()));
        assert!(list.allows("10.1.200.3".parse().unwrap()));
        assert!(!list.allows("10.2.0.1".parse().unwrap()));
        assert!(AllowList::parse(&["localhost".into()]).is_err());
    }
}
