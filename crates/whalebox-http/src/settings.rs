//! `[http]`: how `whalebox serve --http` listens and whom it lets in.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[http]` as written.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct HttpFile {
    /// The address `whalebox serve --http` listens on when the command line names none
    /// (`--http` alone). A non-loopback address needs `tokens_file` or `[http.oauth]`.
    listen: String,
    /// This server's URL as its clients reach it (`https://whalebox.example.com`): the
    /// OAuth audience is this URL with `/mcp`, and the protected-resource metadata
    /// names it. Needed with `[http.oauth]`.
    public_url: Option<String>,
    /// Bearer tokens, one `NAME:TOKEN` per line (`#` starts a comment). NAME is who
    /// called, in the logs; the file is read again when it changes.
    tokens_file: Option<String>,
    /// Another header that may carry the token (`X-Whalebox-Token: TOKEN`), for proxies
    /// that drop `Authorization` (the agent-sandbox router does). `Authorization` is
    /// still read first.
    token_header: Option<String>,
    /// OAuth 2.1 resource-server mode: JWTs from an authorization server.
    oauth: Option<OAuthFile>,
    /// TLS from PEM files; without it, plain HTTP (behind a proxy that terminates TLS).
    tls: Option<TlsFile>,
    /// `Host` names (or `host:port`) accepted (DNS rebinding). Default: the loopback
    /// names on a loopback address; any host on another address (which needs
    /// authentication anyway).
    allowed_hosts: Option<Vec<String>>,
    /// Browser origins accepted (`https://app.example.com:443`, `http://localhost:*`):
    /// once set, a request with another `Origin` gets 403. Default: empty, and `Origin`
    /// is not checked (non-browser clients send none; authentication still applies).
    allowed_origins: Vec<String>,
    /// Sessions open at once; one more `initialize` gets 503.
    max_sessions: usize,
    /// A session with no request for this long is closed (its tasks stopped).
    idle_timeout_s: u64,
    /// On SIGTERM: how long calls under way may take to finish before they are
    /// cancelled.
    grace_period_s: u64,
    /// The largest request body (413 beyond).
    max_body_bytes: usize,
    /// Connections open at once; more are closed as they come.
    max_connections: usize,
    /// How long a client may take to send a request's headers, and its body.
    request_timeout_s: u64,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct OAuthFile {
    /// The issuer (`iss`) tokens must carry.
    issuer: String,
    /// The authorization servers the metadata names (default: the issuer).
    #[serde(default)]
    authorization_servers: Vec<String>,
    /// The JWKS as a file (JSON).
    jwks_file: Option<String>,
    /// The JWKS as a URL (https), fetched at start and again for an unknown key id.
    jwks_url: Option<String>,
    /// The audience (`aud`) tokens must carry; default: `public_url` + `/mcp`.
    audience: Option<String>,
    /// Scopes every token must have (`scope` or `scp`).
    #[serde(default)]
    scopes: Vec<String>,
    /// Signature algorithms accepted (default: RS256, RS384, RS512, PS256, PS384, PS512,
    /// ES256, ES384, EdDSA). HMAC is never accepted.
    algorithms: Option<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TlsFile {
    /// The certificate chain (PEM).
    cert: String,
    /// The private key (PEM).
    key: String,
}

impl Default for HttpFile {
    fn default() -> Self {
        HttpFile {
            listen: "127.0.0.1:8080".into(),
            public_url: None,
            tokens_file: None,
            token_header: None,
            oauth: None,
            tls: None,
            allowed_hosts: None,
            allowed_origins: Vec::new(),
            max_sessions: 256,
            idle_timeout_s: 30 * 60,
            grace_period_s: 20,
            max_body_bytes: 4 << 20,
            max_connections: 1024,
            request_timeout_s: 30,
        }
    }
}

/// `[http]`, resolved.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HttpSettings {
    pub listen: SocketAddr,
    pub public_url: Option<String>,
    pub tokens_file: Option<PathBuf>,
    /// Lower case, checked to be a header name.
    pub token_header: Option<String>,
    pub oauth: Option<OAuthSettings>,
    pub tls: Option<TlsFiles>,
    /// None: the default for the address (see [`HttpSettings::hosts_for`]).
    pub allowed_hosts: Option<Vec<String>>,
    pub allowed_origins: Vec<String>,
    pub max_sessions: usize,
    pub idle_timeout: Duration,
    pub grace_period: Duration,
    pub max_body_bytes: usize,
    pub max_connections: usize,
    pub request_timeout: Duration,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OAuthSettings {
    pub issuer: String,
    pub authorization_servers: Vec<String>,
    pub jwks: KeySource,
    pub audience: String,
    /// The protected resource, as the metadata names it.
    pub resource: String,
    pub scopes: Vec<String>,
    pub algorithms: Vec<jsonwebtoken::Algorithm>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub enum KeySource {
    File(PathBuf),
    Url(String),
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

const DEFAULT_ALGORITHMS: [&str; 9] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

impl HttpFile {
    /// Check and resolve (`path`: a path as the profile means it).
    pub fn resolve(
        self,
        path: impl Fn(&str) -> Result<PathBuf, String>,
    ) -> Result<HttpSettings, String> {
        let listen = parse_listen(&self.listen)?;
        let public_url = match self.public_url {
            Some(u) => Some(
                check_url(&u, "public_url")?
                    .trim_end_matches('/')
                    .to_string(),
            ),
            None => None,
        };
        let oauth = match self.oauth {
            None => None,
            Some(o) => {
                let Some(base) = &public_url else {
                    return Err(
                        "[http.oauth] needs [http] public_url (the audience and the \
                                protected-resource metadata name it)"
                            .into(),
                    );
                };
                let jwks = match (o.jwks_file, o.jwks_url) {
                    (Some(f), None) => KeySource::File(path(&f)?),
                    (None, Some(u)) => KeySource::Url(check_url(&u, "jwks_url")?),
                    _ => {
                        return Err(
                            "[http.oauth] needs exactly one of jwks_file and jwks_url".into()
                        );
                    }
                };
                let algorithms = o
                    .algorithms
                    .unwrap_or_else(|| DEFAULT_ALGORITHMS.iter().map(|a| a.to_string()).collect())
                    .iter()
                    .map(|a| parse_algorithm(a))
                    .collect::<Result<Vec<_>, _>>()?;
                let resource = format!("{base}/mcp");
                Some(OAuthSettings {
                    authorization_servers: if o.authorization_servers.is_empty() {
                        vec![o.issuer.clone()]
                    } else {
                        o.authorization_servers
                    },
                    issuer: o.issuer,
                    jwks,
                    audience: o.audience.unwrap_or_else(|| resource.clone()),
                    resource,
                    scopes: o.scopes,
                    algorithms,
                })
            }
        };
        for (name, value) in [
            ("max_sessions", self.max_sessions as u64),
            ("idle_timeout_s", self.idle_timeout_s),
            ("max_body_bytes", self.max_body_bytes as u64),
            ("max_connections", self.max_connections as u64),
            ("request_timeout_s", self.request_timeout_s),
        ] {
            if value == 0 {
                return Err(format!("[http] {name} must be at least 1"));
            }
        }
        let token_header = match self.token_header {
            Some(h) => {
                let name = http::HeaderName::from_bytes(h.as_bytes())
                    .map_err(|_| format!("[http] token_header {h:?} is not a header name"))?;
                (name != http::header::AUTHORIZATION).then(|| name.as_str().to_string())
            }
            None => None,
        };
        Ok(HttpSettings {
            listen,
            token_header,
            public_url,
            tokens_file: self.tokens_file.map(|f| path(&f)).transpose()?,
            oauth,
            tls: match self.tls {
                Some(t) => Some(TlsFiles {
                    cert: path(&t.cert)?,
                    key: path(&t.key)?,
                }),
                None => None,
            },
            allowed_hosts: self.allowed_hosts,
            allowed_origins: self.allowed_origins,
            max_sessions: self.max_sessions,
            idle_timeout: Duration::from_secs(self.idle_timeout_s),
            grace_period: Duration::from_secs(self.grace_period_s),
            max_body_bytes: self.max_body_bytes,
            max_connections: self.max_connections,
            request_timeout: Duration::from_secs(self.request_timeout_s),
        })
    }
}

/// `127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:8080`, or `localhost:8080`.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    if let Some(port) = text.strip_prefix("localhost:") {
        let port: u16 = port
            .parse()
            .map_err(|_| format!("listen address {text:?}: the port is not a number"))?;
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse().map_err(|_| {
        format!("listen address {text:?}: expected IP:PORT (as 127.0.0.1:8080 or [::]:8080)")
    })
}

fn check_url(url: &str, what: &str) -> Result<String, String> {
    if url.starts_with("https://") || url.starts_with("http://") {
        Ok(url.to_string())
    } else {
        Err(format!("[http] {what} {url:?} is not an http(s) URL"))
    }
}

fn parse_algorithm(name: &str) -> Result<jsonwebtoken::Algorithm, String> {
    use jsonwebtoken::Algorithm;
    let alg: Algorithm = name
        .parse()
        .map_err(|_| format!("[http.oauth] algorithms: unknown algorithm {name:?}"))?;
    if matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) {
        return Err(format!(
            "[http.oauth] algorithms: {name} is a shared-secret algorithm; a resource server \
             takes only public-key signatures"
        ));
    }
    Ok(alg)
}

impl HttpSettings {
    /// The files holding secrets the server reads: the tokens file, the TLS certificate
    /// and key, the JWKS file.
    pub fn secret_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = self.tokens_file.iter().cloned().collect();
        if let Some(tls) = &self.tls {
            files.push(tls.cert.clone());
            files.push(tls.key.clone());
        }
        if let Some(OAuthSettings {
            jwks: KeySource::File(f),
            ..
        }) = &self.oauth
        {
            files.push(f.clone());
        }
        files
    }

    /// Whether callers must authenticate.
    pub fn authenticated(&self) -> bool {
        self.tokens_file.is_some() || self.oauth.is_some()
    }

    /// The `Host` values accepted: as configured, else the loopback names on a loopback
    /// address and None (any) on another (where callers must authenticate).
    pub fn hosts_for(&self) -> Option<Vec<String>> {
        match &self.allowed_hosts {
            Some(h) => Some(h.clone()),
            None if self.listen.ip().is_loopback() => Some(
                ["localhost", "127.0.0.1", "::1", "[::1]"]
                    .into_iter()
                    .map(String::from)
                    .collect(),
            ),
            None => None,
        }
    }

    /// Refuse what must not be served: a non-loopback address without authentication.
    pub fn check_exposure(&self) -> Result<(), String> {
        if !self.listen.ip().is_loopback() && !self.authenticated() {
            return Err(format!(
                "refusing to listen on {} without authentication: set [http] tokens_file or \
                 [http.oauth] in the profile, or listen on 127.0.0.1",
                self.listen
            ));
        }
        Ok(())
    }
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpFile::default()
            .resolve(|p: &str| Ok(PathBuf::from(p)))
            .expect("the defaults resolve")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<HttpSettings, String> {
        let file: HttpFile = toml_like(text);
        file.resolve(|p: &str| Ok(PathBuf::from(p)))
    }

    fn toml_like(json: &str) -> HttpFile {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn defaults_are_loopback_and_unauthenticated() {
        let s = HttpSettings::default();
        assert!(s.listen.ip().is_loopback());
        assert!(!s.authenticated());
        assert!(s.check_exposure().is_ok());
        assert!(s.hosts_for().unwrap().contains(&"localhost".to_string()));
    }

    #[test]
    fn a_public_address_needs_authentication() {
        let s = parse(r#"{"listen": "0.0.0.0:8080"}"#).unwrap();
        assert!(
            s.check_exposure()
                .unwrap_err()
                .contains("without authentication")
        );
        assert_eq!(s.hosts_for(), None);
        let s = parse(r#"{"listen": "0.0.0.0:8080", "tokens_file": "t"}"#).unwrap();
        assert!(s.check_exposure().is_ok());
    }

    #[test]
    fn oauth_needs_a_public_url_and_one_key_source() {
        let e = parse(r#"{"oauth": {"issuer": "https://as", "jwks_file": "k"}}"#).unwrap_err();
        assert!(e.contains("public_url"), "{e}");
        let e =
            parse(r#"{"public_url": "https://h", "oauth": {"issuer": "https://as"}}"#).unwrap_err();
        assert!(e.contains("exactly one"), "{e}");
        let s = parse(
            r#"{"public_url": "https://h/", "oauth": {"issuer": "https://as", "jwks_file": "k"}}"#,
        )
        .unwrap();
        let o = s.oauth.unwrap();
        assert_eq!(o.audience, "https://h/mcp");
        assert_eq!(o.authorization_servers, vec!["https://as".to_string()]);
        assert!(!o.algorithms.contains(&jsonwebtoken::Algorithm::HS256));
    }

    #[test]
    fn hmac_is_refused() {
        let e = parse(
            r#"{"public_url": "https://h", "oauth": {"issuer": "i", "jwks_file": "k", "algorithms": ["HS256"]}}"#,
        )
        .unwrap_err();
        assert!(e.contains("shared-secret"), "{e}");
    }

    #[test]
    fn listen_addresses() {
        assert_eq!(parse_listen("localhost:9").unwrap().port(), 9);
        assert!(parse_listen("[::]:80").is_ok());
        assert!(parse_listen("example.com:80").is_err());
    }
}
