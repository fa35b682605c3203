//! Credentials the task never sees (issue 24, item 4). The task's environment holds a
//! per-session placeholder (`whalebox-placeholder-NAME-<32 hex>`) where the secret would
//! be; the proxy swaps the placeholder for the secret in requests to that credential's
//! hosts only, and refuses any request that carries a placeholder anywhere else where it
//! can see it (the host name, the URL, the headers, Basic credentials decoded, and a
//! bounded prefix of a plain-HTTP body).
//!
//! For HTTPS the proxy ends TLS for credential hosts only (`net::intercept`), with a
//! per-session certificate authority made here (rcgen): one CA per [`Credentials`],
//! name-constrained to the credential hosts, and one leaf certificate per host, cached.
//! The task trusts the CA through [`Credentials::write_ca_bundle`] and [`trust_env`].
//!
//! The secret is never logged, never put in a record, an error or an answer: only the
//! credential's name, its variable and its hosts are.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use memchr::memmem;
use rcgen::{
    CertificateParams, CertifiedIssuer, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::head::Head;

mod ca;
mod mask;
use crate::web::guard::host_matches;
pub use ca::trust_env;
use ca::{make_ca, system_bundle, validity};
pub(crate) use mask::{Masked, Masker};

/// How the secret is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sending {
    /// In `header`, as `format` with `{}` the secret (`Authorization`, `Bearer {}`).
    Header { header: String, format: String },
    /// HTTP Basic authentication with this user and the secret as the password.
    Basic { user: String },
}

impl Default for Sending {
    fn default() -> Sending {
        Sending::Header {
            header: "Authorization".into(),
            format: "Bearer {}".into(),
        }
    }
}

/// One credential as the profile names it, with its secret (read by the caller from the
/// server's own environment). Its `Debug` never shows the secret.
#[derive(Clone)]
pub struct Credential {
    /// The profile's name (`[network.credentials.NAME]`): letters, digits, `-`, `_`.
    pub name: String,
    /// The variable the task gets the placeholder in (`GITHUB_TOKEN`).
    pub env: String,
    /// Exact names or `*.domain` patterns (the web group's syntax).
    pub hosts: Vec<String>,
    pub sending: Sending,
    pub secret: String,
    /// Sent over plain HTTP too (the profile's `plain_http`); else such a request is
    /// refused, since the secret would cross the wire in clear.
    pub plain_http: bool,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("name", &self.name)
            .field("env", &self.env)
            .field("hosts", &self.hosts)
            .field("sending", &self.sending)
            .field("secret", &"<hidden>")
            .finish()
    }
}

struct Entry {
    name: String,
    env: String,
    hosts: Vec<String>,
    sending: Sending,
    secret: String,
    plain_http: bool,
    placeholder: String,
    /// The placeholder's random part: what a leak scan looks for (it survives a
    /// rewritten prefix).
    token: String,
    /// The Basic payloads the proxy has sent the secret in, as (base64 with the secret,
    /// base64 with the placeholder): the user is the task's to choose, and the secret's
    /// base64 inside a longer payload's is at any alignment, so each is masked whole.
    sent_basic: Mutex<Vec<(Vec<u8>, Vec<u8>)>>,
}

/// How many distinct Basic payloads one credential is swapped into (and so masked in
/// answers) per session, and how long one may be; past either, a payload is sent as the
/// task wrote it. Every answer from the credential's hosts is searched for each, and the
/// masker holds back as many bytes as the longest: a task must not make that large.
const MAX_BASIC_PAYLOADS: usize = 64;
const MAX_BASIC_PAYLOAD_BYTES: usize = 512;

impl Entry {
    fn covers(&self, host: &str) -> bool {
        self.hosts.iter().any(|p| host_matches(p, host))
    }

    /// The configured header's whole value for the secret.
    fn formatted(&self) -> (String, String) {
        match &self.sending {
            Sending::Header { header, format } => {
                (header.clone(), format.replace("{}", &self.secret))
            }
            Sending::Basic { user } => (
                "Authorization".into(),
                format!("Basic {}", B64.encode(format!("{user}:{}", self.secret))),
            ),
        }
    }

    /// Each encoding the proxy itself sends the secret in, paired with the same encoding
    /// of the placeholder: what a response is masked for. An echo of `Authorization:
    /// Basic` hands back base64 of `user:secret`, not the secret's own bytes, so masking
    /// the raw secret alone would let it through.
    fn forms(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut forms = vec![(
            self.secret.clone().into_bytes(),
            self.placeholder.clone().into_bytes(),
        )];
        let mut encoded = |secret: String, placeholder: String| {
            let pair = (
                B64.encode(secret).into_bytes(),
                B64.encode(placeholder).into_bytes(),
            );
            if !forms.contains(&pair) {
                forms.push(pair);
            }
        };
        encoded(self.secret.clone(), self.placeholder.clone());
        if let Sending::Basic { user } = &self.sending {
            encoded(
                format!("{user}:{}", self.secret),
                format!("{user}:{}", self.placeholder),
            );
        }
        for pair in self.sent_basic.lock().unwrap().iter() {
            if !forms.contains(pair) {
                forms.push(pair.clone());
            }
        }
        forms
    }

    /// Records a Basic payload about to carry the secret (`with_secret`; `as_sent` is
    /// the task's, with the placeholder), for masking; false when the session's bound
    /// on such payloads is reached (then the payload is not swapped).
    fn note_basic(&self, with_secret: &[u8], as_sent: &[u8]) -> bool {
        let pair = (
            B64.encode(with_secret).into_bytes(),
            B64.encode(as_sent).into_bytes(),
        );
        let mut sent = self.sent_basic.lock().unwrap();
        if sent.contains(&pair) {
            return true;
        }
        if sent.len() >= MAX_BASIC_PAYLOADS || with_secret.len() > MAX_BASIC_PAYLOAD_BYTES {
            return false;
        }
        sent.push(pair);
        true
    }
}

/// The refusal of a request that carries a placeholder to a host outside its credential:
/// the rule and how to allow it, for the 403 and the record. Never holds the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leak {
    pub credential: String,
    pub rule: String,
    pub how_to_allow: String,
}

/// A session's credentials: the placeholders, the hosts each covers, and the session's
/// certificate authority for the hosts whose TLS the proxy ends.
pub struct Credentials {
    entries: Vec<Entry>,
    ca: CertifiedIssuer<'static, KeyPair>,
    leaves: Mutex<HashMap<String, Arc<rustls::ServerConfig>>>,
    /// The upstream TLS client configuration (roots read once, on first use).
    pub(crate) upstream: OnceLock<Result<Arc<rustls::ClientConfig>, String>>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<(&str, &str, &[String])> = self
            .entries
            .iter()
            .map(|e| (e.name.as_str(), e.env.as_str(), e.hosts.as_slice()))
            .collect();
        f.debug_struct("Credentials")
            .field("credentials", &names)
            .finish_non_exhaustive()
    }
}

pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn random_hex(bytes: usize) -> Result<String, String> {
    let mut buf = vec![0u8; bytes];
    rustls::crypto::ring::default_provider()
        .secure_random
        .fill(&mut buf)
        .map_err(|_| "the system's random source failed".to_string())?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

impl Credentials {
    /// Checks each credential, makes its placeholder, and makes the session's CA.
    pub fn new(list: Vec<Credential>) -> Result<Credentials, String> {
        let mut entries: Vec<Entry> = Vec::with_capacity(list.len());
        for c in list {
            let name = c.name.trim().to_string();
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(format!(
                    "credential `{name}`: a name holds letters, digits, `-` and `_` only"
                ));
            }
            let what = format!("credential `{name}`");
            if c.env.is_empty()
                || c.env.as_bytes()[0].is_ascii_digit()
                || !c
                    .env
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return Err(format!("{what}: `{}` is not a variable name", c.env));
            }
            if entries.iter().any(|e| e.name == name) {
                return Err(format!("{what} is named twice"));
            }
            if let Some(e) = entries.iter().find(|e| e.env == c.env) {
                return Err(format!(
                    "{what} and credential `{}` both use the variable {}",
                    e.name, c.env
                ));
            }
            let hosts: Vec<String> = c
                .hosts
                .iter()
                .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
                .collect();
            if hosts.is_empty() || hosts.iter().any(|h| h.is_empty() || h == "*.") {
                return Err(format!("{what} names no hosts (or an empty one)"));
            }
            if c.secret.is_empty() {
                return Err(format!(
                    "{what}: the variable {} is empty or not set on the server",
                    c.env
                ));
            }
            match &c.sending {
                Sending::Header { header, format } => {
                    if http::HeaderName::from_bytes(header.as_bytes()).is_err() {
                        return Err(format!("{what}: `{header}` is not a header name"));
                    }
                    if !format.contains("{}") {
                        return Err(format!(
                            "{what}: the format `{format}` has no `{{}}` for the secret"
                        ));
                    }
                }
                Sending::Basic { user } => {
                    if user.contains(':') || user.bytes().any(|b| b.is_ascii_control()) {
                        return Err(format!("{what}: a Basic user holds no `:`"));
                    }
                }
            }
            if c.secret.bytes().any(|b| b.is_ascii_control()) {
                // Never the value itself: it is the secret.
                return Err(format!(
                    "{what}: the value of {} holds control characters (a line break?), \
                     which cannot go in a header",
                    c.env
                ));
            }
            let token = random_hex(16)?;
            let placeholder = format!(
                "whalebox-placeholder-{}-{token}",
                name.to_ascii_lowercase().replace('_', "-")
            );
            let entry = Entry {
                name,
                env: c.env,
                hosts,
                sending: c.sending,
                secret: c.secret,
                plain_http: c.plain_http,
                placeholder,
                token,
                sent_basic: Mutex::new(Vec::new()),
            };
            let (header, value) = entry.formatted();
            if http::HeaderValue::from_str(&value).is_err() {
                return Err(format!(
                    "{what}: the value of {} does not fit in the {header} header",
                    entry.env
                ));
            }
            entries.push(entry);
        }
        let ca = make_ca(&entries)?;
        Ok(Credentials {
            entries,
            ca,
            leaves: Mutex::new(HashMap::new()),
            upstream: OnceLock::new(),
        })
    }

    /// Whether some credential is sent to `host` (as the proxy reads it: lower case, no
    /// trailing dot): the proxy ends TLS for such hosts.
    pub fn covers(&self, host: &str) -> bool {
        self.entries.iter().any(|e| e.covers(host))
    }

    /// The task's variables: each credential's variable holding its placeholder.
    pub fn task_env(&self) -> Vec<(String, String)> {
        self.entries
            .iter()
            .map(|e| (e.env.clone(), e.placeholder.clone()))
            .collect()
    }

    /// The credential names, in order.
    pub fn names(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.name.clone()).collect()
    }

    /// The session CA's certificate, PEM.
    pub fn ca_pem(&self) -> String {
        self.ca.pem()
    }

    /// The session CA's certificate, DER.
    pub fn ca_der(&self) -> CertificateDer<'static> {
        self.ca.der().clone()
    }

    /// Writes `whalebox-ca-bundle.pem` into `dir` (mode 0600): the system's roots (the
    /// file `SSL_CERT_FILE` names if set, else the first of the usual bundle paths) and
    /// the session CA. Returns its path, for [`trust_env`].
    pub fn write_ca_bundle(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let mut pem = system_bundle().unwrap_or_default();
        if !pem.is_empty() && !pem.ends_with('\n') {
            pem.push('\n');
        }
        pem.push_str("# whalebox session CA (credential hosts only)\n");
        pem.push_str(&self.ca_pem());
        let path = dir.join("whalebox-ca-bundle.pem");
        crate::mutation::write_private(&path, pem.as_bytes())?;
        Ok(path)
    }

    /// The TLS server configuration for `host`: a leaf certificate for it signed by the
    /// session CA (made once per host), HTTP/1.1 only by ALPN.
    pub(crate) fn server_config(&self, host: &str) -> Result<Arc<rustls::ServerConfig>, String> {
        if let Some(c) = self.leaves.lock().unwrap().get(host) {
            return Ok(c.clone());
        }
        let key = KeyPair::generate().map_err(|e| format!("making a key for {host}: {e}"))?;
        let mut params = CertificateParams::new(vec![host.to_string()])
            .map_err(|e| format!("a certificate for {host}: {e}"))?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, host);
        params.distinguished_name = dn;
        params.is_ca = IsCa::NoCa;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.use_authority_key_identifier_extension = true;
        let (from, until) = validity(30);
        params.not_before = from;
        params.not_after = until;
        let cert = params
            .signed_by(&key, &self.ca)
            .map_err(|e| format!("signing a certificate for {host}: {e}"))?;
        let chain = vec![cert.der().clone(), self.ca.der().clone()];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| format!("the certificate for {host}: {e}"))?;
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        let cfg = Arc::new(cfg);
        self.leaves
            .lock()
            .unwrap()
            .insert(host.to_string(), cfg.clone());
        Ok(cfg)
    }

    fn leak_in(&self, host: &str, bytes: &[u8]) -> Option<&Entry> {
        self.entries
            .iter()
            .filter(|e| !e.covers(host))
            .find(|e| memmem::find(bytes, e.token.as_bytes()).is_some())
    }

    /// A placeholder bound for another host in `bytes` (a URL, a header value — Basic
    /// credentials decoded too — or body bytes) of a request to `host`.
    pub fn leak(&self, host: &str, port: u16, bytes: &[u8]) -> Option<Leak> {
        let found = self.leak_in(host, bytes).or_else(|| {
            let decoded = basic_payload(bytes)?;
            self.leak_in(host, &decoded)
        })?;
        Some(self.leak_for(found, host, port))
    }

    fn leak_for(&self, e: &Entry, host: &str, port: u16) -> Leak {
        Leak {
            credential: e.name.clone(),
            rule: format!(
                "the request to {host}:{port} carries the placeholder of credential `{}` \
                 (variable {}), which is sent only to {}",
                e.name,
                e.env,
                e.hosts.join(", ")
            ),
            how_to_allow: format!(
                "a credential's placeholder is swapped for the secret only in requests to its \
                 own hosts and refused everywhere else; send ${} only to {}, or, if {host} is \
                 meant to get this credential, add \"{host}\" to the hosts of \
                 [network.credentials.{}]",
                e.env,
                e.hosts.join(", "),
                e.name
            ),
        }
    }

    /// The placeholders in one header value of a request to `host`, swapped: a Basic
    /// value is decoded and re-encoded (`user:PLACEHOLDER` becomes `user:SECRET`); the
    /// configured header holding the bare placeholder gets the configured form; any other
    /// occurrence of the placeholder becomes the secret itself. None: nothing to swap.
    /// The second item names the credentials swapped in.
    pub(crate) fn swap_value(
        &self,
        host: &str,
        name: &str,
        value: &[u8],
    ) -> Option<(Vec<u8>, Vec<String>)> {
        let mut out = value.to_vec();
        let mut used = Vec::new();
        for e in self.entries.iter().filter(|e| e.covers(host)) {
            let p = e.placeholder.as_bytes();
            if let Some(decoded) = basic_payload(&out)
                && memmem::find(&decoded, p).is_some()
            {
                let swapped = replace_all(&decoded, p, e.secret.as_bytes());
                if !e.note_basic(&swapped, &decoded) {
                    continue;
                }
                out = format!("Basic {}", B64.encode(swapped)).into_bytes();
                used.push(e.name.clone());
                continue;
            }
            if memmem::find(&out, p).is_none() {
                continue;
            }
            let (header, formatted) = e.formatted();
            out = if name.eq_ignore_ascii_case(&header) && out.trim_ascii() == p {
                formatted.into_bytes()
            } else {
                replace_all(&out, p, e.secret.as_bytes())
            };
            used.push(e.name.clone());
        }
        (!used.is_empty()).then_some((out, used))
    }

    /// The secrets in a response header value from `host`, put back as placeholders (an
    /// origin that echoes the request's headers does not hand the task the secret).
    pub(crate) fn mask_value(&self, host: &str, value: &[u8]) -> Option<Vec<u8>> {
        let mut out: Option<Vec<u8>> = None;
        for e in self.entries.iter().filter(|e| e.covers(host)) {
            // Longest first: the Basic pair's base64 is not a superstring of the
            // secret's, but the raw secret may sit inside a longer form's text.
            let mut forms = e.forms();
            forms.sort_by_key(|(secret, _)| std::cmp::Reverse(secret.len()));
            for (secret, placeholder) in forms {
                let cur = out.as_deref().unwrap_or(value);
                if memmem::find(cur, &secret).is_some() {
                    out = Some(replace_all(cur, &secret, &placeholder));
                }
            }
        }
        out
    }

    /// Whether a response header's name (lower case, as hyper reads it) from `host`
    /// holds a form of a secret sent there: such a header is dropped, not masked.
    pub(crate) fn in_name(&self, host: &str, name: &str) -> bool {
        self.entries
            .iter()
            .filter(|e| e.covers(host))
            .flat_map(|e| e.forms())
            .any(|(secret, _)| {
                memmem::find(name.as_bytes(), &secret.to_ascii_lowercase()).is_some()
            })
    }

    /// Refuses a plain-HTTP request to `host` that carries the credentials `names` (as
    /// [`Credentials::screen`] lists them) when one is not marked `plain_http`.
    pub(crate) fn in_clear(&self, host: &str, names: &str) -> Result<(), Leak> {
        let swapped: Vec<&str> = names.split(", ").collect();
        match self
            .entries
            .iter()
            .find(|e| swapped.contains(&e.name.as_str()) && !e.plain_http)
        {
            None => Ok(()),
            Some(e) => Err(Leak {
                credential: e.name.clone(),
                rule: format!(
                    "credential {} is sent only over HTTPS: this plain-HTTP request to {host} \
                     would carry it in clear",
                    e.name
                ),
                how_to_allow: format!(
                    "use https://{host}, or set plain_http = true in [network.credentials.{}] \
                     (the secret then crosses the wire in clear)",
                    e.name
                ),
            }),
        }
    }

    /// A masker for a response body from `host`: every form of every covering
    /// credential's secret (None: no credential covers `host`).
    pub(crate) fn masker(&self, host: &str) -> Option<Masker> {
        let forms: Vec<_> = self
            .entries
            .iter()
            .filter(|e| e.covers(host))
            .flat_map(|e| e.forms())
            .collect();
        (!forms.is_empty()).then(|| Masker::new(forms))
    }

    /// Screens a plain-HTTP request (or a CONNECT's host) before it is forwarded: a
    /// placeholder of a credential that does not cover the host anywhere in the host
    /// name, the URL, the headers or `body` (what of the body the proxy has) is a
    /// [`Leak`]; to a covered host, the placeholders in the headers are swapped in `head`.
    /// Ok: the credentials swapped in (None: none).
    pub fn screen(
        &self,
        host: &str,
        port: u16,
        head: &mut Head,
        body: &[u8],
    ) -> Result<Option<String>, Leak> {
        for part in [host.as_bytes(), head.target.as_bytes(), body] {
            if let Some(l) = self.leak(host, port, part) {
                return Err(l);
            }
        }
        let mut used: Vec<String> = Vec::new();
        for (name, value) in head.headers.iter_mut() {
            if let Some(l) = self.leak(host, port, value) {
                return Err(l);
            }
            if let Some((swapped, names)) = self.swap_value(host, name, value) {
                *value = swapped;
                for n in names {
                    if !used.contains(&n) {
                        used.push(n);
                    }
                }
            }
        }
        Ok((!used.is_empty()).then(|| used.join(", ")))
    }
}

/// How much of a plain-HTTP body the proxy reads before forwarding, to look for
/// placeholders in it (the rest is relayed unread).
pub const BODY_SCAN: usize = 64 * 1024;

/// [`Credentials::screen`] for a request the proxy just read: for a plain-HTTP request
/// with a body, first reads up to [`BODY_SCAN`] bytes of it into `buf` (after the head,
/// so they are forwarded as they are), within `wait`. A client that waits for `100
/// Continue` gets it from the proxy, whose `Expect` is then dropped from the head: a
/// body must be screened before anything of it is forwarded. A plain-HTTP request that
/// would carry a credential not marked `plain_http` is a [`Leak`] (in clear on the wire).
pub(crate) async fn screen_request<R: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    creds: &Credentials,
    stream: &mut R,
    buf: &mut Vec<u8>,
    head: &mut Head,
    target: &super::head::Target,
    connect: bool,
    wait: std::time::Duration,
) -> Result<Option<String>, Leak> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let expects = head
        .header("expect")
        .is_some_and(|v| v.trim_ascii().eq_ignore_ascii_case(b"100-continue"));
    let length: Option<usize> = head
        .header("content-length")
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(|v| v.trim().parse().ok());
    let chunked = head.header("transfer-encoding").is_some_and(|v| {
        String::from_utf8_lossy(v)
            .to_ascii_lowercase()
            .contains("chunked")
    });
    if expects && !connect {
        head.headers
            .retain(|(name, _)| !name.eq_ignore_ascii_case("expect"));
        // The client sends its body only once told to; if it cannot be told, nothing
        // is screened and nothing forwarded.
        if stream
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await
            .is_err()
        {
            return Err(Leak {
                credential: String::new(),
                rule: "the client went away before its body could be screened".into(),
                how_to_allow: "send the request again".into(),
            });
        }
    }
    let want = match (connect, length, chunked) {
        (true, ..) => 0,
        (_, Some(n), _) => n.min(BODY_SCAN),
        (_, None, true) => BODY_SCAN,
        _ => 0,
    };
    let deadline = tokio::time::Instant::now() + wait;
    let mut chunk = [0u8; 8192];
    while buf.len() - head.len < want && !(chunked && buf[head.len..].ends_with(b"0\r\n\r\n")) {
        let room = (want - (buf.len() - head.len)).min(chunk.len());
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk[..room])).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => break,
        }
    }
    let used = creds.screen(&target.host, target.port, head, &buf[head.len..])?;
    if !connect && let Some(names) = &used {
        creds.in_clear(&target.host, names)?;
    }
    Ok(used)
}

/// `Basic xxx` decoded (the payload, `user:password`), if `value` is one.
fn basic_payload(value: &[u8]) -> Option<Vec<u8>> {
    let v = value.trim_ascii();
    if v.len() < 6 || !v[..6].eq_ignore_ascii_case(b"basic ") {
        return None;
    }
    let b = v[6..].trim_ascii();
    B64.decode(b).ok().or_else(|| {
        base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(b)
            .ok()
    })
}

fn replace_all(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len() + to.len());
    let mut rest = hay;
    while let Some(i) = memmem::find(rest, from) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(to);
        rest = &rest[i + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests;
