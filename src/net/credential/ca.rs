//! The session's certificate authority: made per [`Credentials`](super::Credentials),
//! name-constrained to the credential hosts, and the variables and system roots that
//! make a task's tools trust it beside the usual ones.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    GeneralSubtree, IsCa, KeyPair, KeyUsagePurpose, NameConstraints,
};

use super::{Entry, random_hex};

/// The variables that make common tools trust the bundle [`super::Credentials::write_ca_bundle`]
/// wrote (OpenSSL, Python requests, curl, cargo, git, pip, Nix; Node adds it to its own).
pub fn trust_env(bundle: &Path) -> Vec<(String, String)> {
    let path = bundle.display().to_string();
    [
        "SSL_CERT_FILE",
        "NODE_EXTRA_CA_CERTS",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "CARGO_HTTP_CAINFO",
        "GIT_SSL_CAINFO",
        "PIP_CERT",
        "NIX_SSL_CERT_FILE",
    ]
    .iter()
    .map(|v| (v.to_string(), path.clone()))
    .collect()
}

/// The system's root bundle, PEM: `SSL_CERT_FILE` if set, else the first usual path found.
pub(super) fn system_bundle() -> Option<String> {
    let mut paths: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("SSL_CERT_FILE").filter(|p| !p.is_empty()) {
        paths.push(p.into());
    }
    for p in [
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/pki/tls/certs/ca-bundle.crt",
        "/etc/ssl/cert.pem",
        "/etc/ssl/certs/ca-bundle.crt",
    ] {
        paths.push(p.into());
    }
    paths
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok().filter(|s| !s.is_empty()))
}

/// From a day ago (clocks differ) to `days` from now.
pub(super) fn validity(days: i64) -> (time::OffsetDateTime, time::OffsetDateTime) {
    let now = time::OffsetDateTime::now_utc();
    (
        now - time::Duration::days(1),
        now + time::Duration::days(days),
    )
}

/// The session CA: may sign only leaf certificates (path length 0), and only for the
/// credential hosts (name constraints), so the key could vouch for nothing else.
pub(super) fn make_ca(entries: &[Entry]) -> Result<CertifiedIssuer<'static, KeyPair>, String> {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "whalebox");
    dn.push(
        DnType::CommonName,
        format!("whalebox session CA {}", random_hex(4)?),
    );
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let (from, until) = validity(400);
    params.not_before = from;
    params.not_after = until;
    let mut permitted: Vec<GeneralSubtree> = Vec::new();
    let mut names_only = true;
    for e in entries {
        for h in &e.hosts {
            let domain = h
                .strip_prefix("*.")
                .or_else(|| h.strip_prefix('.'))
                .unwrap_or(h);
            if domain.parse::<std::net::IpAddr>().is_ok() || domain.starts_with('[') {
                names_only = false;
            }
            permitted.push(GeneralSubtree::DnsName(domain.to_string()));
        }
    }
    if names_only && !permitted.is_empty() {
        params.name_constraints = Some(NameConstraints {
            permitted_subtrees: permitted,
            excluded_subtrees: vec![],
        });
    }
    let key = KeyPair::generate().map_err(|e| format!("making the session CA's key: {e}"))?;
    CertifiedIssuer::self_signed(params, key).map_err(|e| format!("making the session CA: {e}"))
}
