//! The address guards: the web group's (`web::guard::Guard::url`, every URL and redirect
//! a fetch follows) and the egress proxy's (`net::head::parse_authority`, the host of a
//! command's `CONNECT` or absolute-form request, which `net::decide::Rules` judges).
//!
//! An address (biased towards loopback, private, link-local and metadata ranges) is
//! written in one of its many spellings: IPv4 as one number or two, three or four parts,
//! each in decimal, octal (leading zero) or hex (0x, 0X), with a trailing dot, full-width
//! digits and dots, percent-encoded characters; IPv6 compressed or not, with leading
//! zeros, in upper case, with its last 32 bits dotted, IPv4-mapped (`::ffff:a.b.c.d` and
//! `::ffff:XXXX:YYYY`); zone ids; and the address's IPv4-compatible, NAT64 and 6to4 forms.
//!
//! Oracle: a spelling that names the same address gets exactly the decision its canonical
//! form gets (the same target, the same refusal), under guards with random
//! `allow_private`, `deny_hosts` and ports; a spelling a parser refuses is refused (never
//! a different address); an IPv6 address that carries a private IPv4 address (mapped,
//! compatible, NAT64, 6to4) is refused unless `allow_private` names it; the proxy's target
//! for a spelling is the canonical host and address, and `Rules` decide it the same.

#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use url::Url;
use whalebox::net::decide::Rules;
use whalebox::net::head::parse_authority;
use whalebox::web::address::{AllowList, private_kind};
use whalebox::web::guard::Guard;
use whalebox::web::settings::WebSection;

fn v4(u: &mut Unstructured) -> Result<Ipv4Addr> {
    let known: &[[u8; 4]] = &[
        [127, 0, 0, 1],
        [169, 254, 169, 254],
        [10, 0, 0, 1],
        [192, 168, 1, 1],
        [172, 16, 0, 1],
        [0, 0, 0, 0],
        [100, 64, 0, 1],
        [255, 255, 255, 255],
        [8, 8, 8, 8],
        [1, 2, 3, 4],
        [224, 0, 0, 1],
    ];
    let mut o = *u.choose(known)?;
    if u.ratio(1, 2)? {
        // Keep the first octet or two (the range), vary the rest.
        let keep = u.int_in_range(0..=3)?;
        for b in o.iter_mut().skip(keep) {
            *b = u.arbitrary()?;
        }
    }
    Ok(Ipv4Addr::from(o))
}

fn number(u: &mut Unstructured, n: u64) -> Result<String> {
    Ok(match u.int_in_range(0..=5)? {
        0 => format!("0x{n:x}"),
        1 => format!("0X{n:X}"),
        2 if n > 0 => format!("0{n:o}"),
        3 => format!("0x{n:08x}"),
        4 => format!("00{n:o}"),
        _ => n.to_string(),
    })
}

/// A WHATWG spelling of `ip` (the URL parser must read it as `ip`).
fn spell_v4(u: &mut Unstructured, ip: Ipv4Addr) -> Result<String> {
    let o = ip.octets();
    let parts = u.int_in_range(1..=4usize)?;
    let mut out = Vec::new();
    for &byte in &o[..parts - 1] {
        out.push(number(u, u64::from(byte))?);
    }
    let last = o[parts - 1..]
        .iter()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    out.push(number(u, last)?);
    let mut s = out.join(".");
    if u.ratio(1, 5)? {
        s.push('.');
    }
    Ok(s)
}

/// Full-width digits, letters and dots, percent-encoding: still the same host to the
/// URL parser (UTS 46 mapping, percent-decoding), refused by the proxy's stricter one.
fn disguise(u: &mut Unstructured, s: &str) -> Result<String> {
    let mut out = String::new();
    for c in s.chars() {
        match u.int_in_range(0..=9)? {
            0 if c.is_ascii_digit() => {
                out.push(char::from_u32(0xFF10 + (c as u32 - '0' as u32)).unwrap_or(c))
            }
            1 if c == '.' => out.push(*u.choose(&['\u{FF0E}', '\u{3002}', '\u{FF61}'])?),
            2 if c.is_ascii_alphanumeric() || c == '.' => {
                out.push_str(&format!("%{:02X}", c as u32))
            }
            3 if c.is_ascii_alphabetic() => out.push(
                char::from_u32(0xFF21 + (c.to_ascii_uppercase() as u32 - 'A' as u32)).unwrap_or(c),
            ),
            _ => out.push(c),
        }
    }
    Ok(out)
}

fn spell_v6(u: &mut Unstructured, ip: Ipv6Addr) -> Result<String> {
    let s = ip.segments();
    Ok(match u.int_in_range(0..=5)? {
        0 => s
            .iter()
            .map(|g| format!("{g:04x}"))
            .collect::<Vec<_>>()
            .join(":"),
        1 => ip.to_string().to_uppercase(),
        2 => {
            let o = ip.octets();
            let head: Vec<String> = s[..6].iter().map(|g| format!("{g:x}")).collect();
            format!("{}:{}.{}.{}.{}", head.join(":"), o[12], o[13], o[14], o[15])
        }
        3 => s
            .iter()
            .map(|g| format!("{g:X}"))
            .collect::<Vec<_>>()
            .join(":"),
        _ => ip.to_string(),
    })
}

enum Addr {
    /// The same address, spelt differently.
    Same(IpAddr, String),
    /// Another address that carries an IPv4 one.
    Carries(Ipv4Addr, Ipv6Addr),
}

fn address(u: &mut Unstructured) -> Result<Addr> {
    Ok(match u.int_in_range(0..=9)? {
        0..=3 => {
            let ip = v4(u)?;
            let s = spell_v4(u, ip)?;
            let s = if u.ratio(1, 4)? { disguise(u, &s)? } else { s };
            Addr::Same(IpAddr::V4(ip), s)
        }
        4 => {
            let ip = v4(u)?;
            let mapped = ip.to_ipv6_mapped();
            let s = if u.arbitrary()? {
                format!("[::ffff:{ip}]")
            } else {
                format!("[{}]", spell_v6(u, mapped)?)
            };
            Addr::Same(IpAddr::V6(mapped), s)
        }
        5 => {
            let ip = v4(u)?;
            let o = ip.octets();
            let carrier = match u.int_in_range(0..=2)? {
                0 => Ipv6Addr::from(u128::from(u32::from(ip))),
                1 => Ipv6Addr::new(
                    0x64,
                    0xff9b,
                    0,
                    0,
                    0,
                    0,
                    u16::from_be_bytes([o[0], o[1]]),
                    u16::from_be_bytes([o[2], o[3]]),
                ),
                _ => Ipv6Addr::new(
                    0x2002,
                    u16::from_be_bytes([o[0], o[1]]),
                    u16::from_be_bytes([o[2], o[3]]),
                    0,
                    0,
                    0,
                    0,
                    1,
                ),
            };
            Addr::Carries(ip, carrier)
        }
        _ => {
            let known: &[u128] = &[
                1,
                0,
                0xfe80 << 112 | 1,
                0xfc00 << 112 | 5,
                0x2606_4700 << 96 | 0x1111,
            ];
            let mut v: u128 = *u.choose(known)?;
            if u.ratio(1, 2)? {
                v ^= u128::from(u.arbitrary::<u64>()?);
            }
            let ip = Ipv6Addr::from(v);
            let mut s = format!("[{}]", spell_v6(u, ip)?);
            if u.ratio(1, 10)? {
                s = format!("[{}%25eth0]", spell_v6(u, ip)?);
            }
            Addr::Same(IpAddr::V6(ip), s)
        }
    })
}

fn canonical_host(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

fn guard(u: &mut Unstructured, ip: IpAddr) -> Result<(Guard, WebSection)> {
    let canon = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    let mut cfg = WebSection::default();
    if u.ratio(1, 3)? {
        cfg.allow_private.push(
            u.choose(&[
                canon.to_string(),
                "127.0.0.0/8".into(),
                "10.0.0.0/8".into(),
                "::1".into(),
                "169.254.0.0/16".into(),
                "fe80::/10".into(),
            ])?
            .clone(),
        );
    }
    if u.ratio(1, 4)? {
        cfg.deny_hosts.push(canon.to_string());
    }
    if u.ratio(1, 4)? {
        cfg.allow_hosts.push(
            u.choose(&[canon.to_string(), "example.org".into()])?
                .clone(),
        );
    }
    if u.ratio(1, 4)? {
        cfg.ports = vec![8080];
    }
    Ok((Guard::new(&cfg).expect("the guard's settings parse"), cfg))
}

fn check(u: &mut Unstructured) -> Result<()> {
    let addr = address(u)?;
    let port = *u.choose(&["", ":80", ":0080", ":8080", ":443"])?;
    let path = *u.choose(&["/", "/x?y#z", "", "/%2e%2e/"])?;
    match addr {
        Addr::Same(ip, spelt) => {
            let (g, _) = guard(u, ip)?;
            let canon = Url::parse(&format!("http://{}{port}{path}", canonical_host(ip)))
                .expect("the canonical URL parses");
            let want = g.url(&canon, false);
            let disguised = spelt.contains('%') || !spelt.is_ascii();
            match Url::parse(&format!("http://{spelt}{port}{path}")) {
                Ok(url) => assert_eq!(
                    g.url(&url, false),
                    want,
                    "http://{spelt}{port}{path} decided otherwise than {canon}"
                ),
                Err(e) => assert!(
                    spelt.contains("%25"),
                    "the URL parser refused http://{spelt}{port}{path}: {e}"
                ),
            }
            // The proxy: the canonical host and address, or a refusal.
            let default_port = port.trim_start_matches(':').parse::<u16>().ok();
            let auth = format!("{spelt}{port}");
            let canon_auth = format!("{}{port}", canonical_host(ip));
            let want = parse_authority(&canon_auth, Some(80)).expect("the canonical authority");
            match parse_authority(&auth, Some(80)) {
                Ok(target) => {
                    assert_eq!(target, want, "CONNECT {auth}");
                    let rules = Rules {
                        allow_domains: vec![],
                        deny_domains: vec![want.host.clone()],
                        ports: vec![],
                        allow_unlisted: true,
                    };
                    assert_eq!(
                        rules.decide_now(&target.host, target.port),
                        rules.decide_now(&want.host, want.port)
                    );
                }
                Err(_) => assert!(
                    disguised,
                    "the proxy refused a plain spelling {auth} (port {default_port:?})"
                ),
            }
        }
        Addr::Carries(v4, v6) => {
            let (g, cfg) = guard(u, IpAddr::V4(v4))?;
            let url = Url::parse(&format!("http://[{}]{port}/", spell_v6(u, v6)?)).expect("parses");
            if private_kind(IpAddr::V4(v4)).is_some() {
                assert!(
                    private_kind(IpAddr::V6(v6)).is_some(),
                    "{v6} carries {v4} but is public"
                );
                let allowed = AllowList::parse(&cfg.allow_private)
                    .expect("parses")
                    .allows(IpAddr::V6(v6));
                assert!(
                    allowed || g.url(&url, false).is_err(),
                    "{url} carries the private {v4} and was allowed"
                );
            }
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = check(&mut Unstructured::new(data));
});
