//! Who is calling: a bearer token from the tokens file ([`tokens`]), or a JWT from the
//! authorization server ([`oauth`]). Tokens only ever come in the `Authorization`
//! header (never the query string), and are never passed on: upstream MCP servers get
//! their own credentials.

pub mod oauth;
pub mod tokens;

use http::{HeaderMap, HeaderValue, Response, StatusCode};
use serde::Serialize;

use crate::front::{Body, text_body};
use crate::settings::HttpSettings;

/// How a caller proved who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// No authentication configured (loopback only).
    None,
    /// A token from the tokens file.
    Token,
    /// A JWT from the authorization server.
    OAuth,
}

/// The caller of a request, put in the request's extensions for the endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Principal {
    /// The token's name, or the JWT's `sub` (`client_id` when it has none); "local"
    /// without authentication.
    pub name: String,
    pub scheme: Scheme,
    pub scopes: Vec<String>,
}

impl Principal {
    fn local() -> Principal {
        Principal {
            name: "local".into(),
            scheme: Scheme::None,
            scopes: Vec::new(),
        }
    }
}

/// Why a request was not let in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No `Authorization: Bearer` header.
    Missing,
    /// A token that is not one of ours, or a JWT that fails a check (said in the log,
    /// never to the caller beyond `invalid_token`).
    Invalid(String),
    /// A valid JWT without the scopes this server needs.
    InsufficientScope(String),
}

impl Refusal {
    /// A short label for the metrics.
    pub fn label(&self) -> &'static str {
        match self {
            Refusal::Missing => "missing",
            Refusal::Invalid(_) => "invalid",
            Refusal::InsufficientScope(_) => "insufficient_scope",
        }
    }
}

/// The configured ways in; none: everyone is "local" (a loopback listener only).
pub struct Authenticator {
    tokens: Option<tokens::TokenFile>,
    oauth: Option<oauth::Verifier>,
    /// Where the protected-resource metadata is, for `WWW-Authenticate`.
    metadata_url: Option<String>,
    scopes: Vec<String>,
    /// Another header the token may come in (`[http] token_header`).
    token_header: Option<String>,
}

impl Authenticator {
    /// Read the tokens file and the JWKS (a JWKS URL that cannot be fetched yet is
    /// fetched again on the first token; the server is not ready until it is).
    pub async fn load(settings: &HttpSettings) -> Result<Authenticator, String> {
        let tokens = match &settings.tokens_file {
            Some(path) => Some(tokens::TokenFile::open(path)?),
            None => None,
        };
        let oauth = match &settings.oauth {
            Some(o) => Some(oauth::Verifier::load(o).await?),
            None => None,
        };
        let metadata_url = settings
            .oauth
            .as_ref()
            .and(settings.public_url.as_ref())
            .map(|u| format!("{u}/.well-known/oauth-protected-resource/mcp"));
        Ok(Authenticator {
            tokens,
            oauth,
            metadata_url,
            scopes: settings
                .oauth
                .as_ref()
                .map(|o| o.scopes.clone())
                .unwrap_or_default(),
            token_header: settings.token_header.clone(),
        })
    }

    pub fn required(&self) -> bool {
        self.tokens.is_some() || self.oauth.is_some()
    }

    /// Whether the keys are at hand (a JWKS URL fetched).
    pub fn ready(&self) -> Result<(), String> {
        match &self.oauth {
            Some(o) => o.ready(),
            None => Ok(()),
        }
    }

    /// Who sent these headers, or why they are refused.
    pub async fn check(&self, headers: &HeaderMap) -> Result<Principal, Refusal> {
        if !self.required() {
            return Ok(Principal::local());
        }
        let token = bearer(headers)
            .or_else(|| {
                let other = headers.get(self.token_header.as_deref()?)?.to_str().ok()?;
                let other = other.trim();
                // `Bearer TOKEN` or the token alone.
                let token = match other.split_once(' ') {
                    Some((scheme, t)) if scheme.eq_ignore_ascii_case("bearer") => t.trim(),
                    _ => other,
                };
                (!token.is_empty()).then_some(token)
            })
            .ok_or(Refusal::Missing)?;
        if let Some(t) = &self.tokens
            && let Some(name) = t.find(token)
        {
            return Ok(Principal {
                name,
                scheme: Scheme::Token,
                scopes: Vec::new(),
            });
        }
        match &self.oauth {
            Some(o) if token.matches('.').count() == 2 => o.check(token).await,
            _ => Err(Refusal::Invalid("not a known token".into())),
        }
    }

    /// The answer to a refused request: 401 with a `WWW-Authenticate` challenge (naming
    /// the metadata under OAuth), or 403 for too few scopes.
    pub fn refuse(&self, refusal: &Refusal) -> Response<Body> {
        let mut challenge = String::from("Bearer realm=\"whalebox\"");
        if let Some(url) = &self.metadata_url {
            challenge.push_str(&format!(", resource_metadata=\"{url}\""));
        }
        if !self.scopes.is_empty() {
            challenge.push_str(&format!(", scope=\"{}\"", self.scopes.join(" ")));
        }
        let (status, text) = match refusal {
            Refusal::Missing => (StatusCode::UNAUTHORIZED, "authentication required"),
            Refusal::Invalid(_) => {
                challenge.push_str(", error=\"invalid_token\"");
                (StatusCode::UNAUTHORIZED, "invalid token")
            }
            Refusal::InsufficientScope(_) => {
                challenge.push_str(", error=\"insufficient_scope\"");
                (StatusCode::FORBIDDEN, "insufficient scope")
            }
        };
        let mut response = text_body(status, text);
        if let Ok(v) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(http::header::WWW_AUTHENTICATE, v);
        }
        response
    }
}

/// The token of `Authorization: Bearer TOKEN` (the scheme in any case).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn tokens_in_authorization_or_the_other_header() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens");
        std::fs::write(&file, "harness:0123456789abcdef0123\n").unwrap();
        let settings = crate::HttpFile::default();
        let mut settings = settings.resolve(|p| Ok(p.into())).unwrap();
        settings.tokens_file = Some(file);
        settings.token_header = Some("x-whalebox-token".into());
        let auth = Authenticator::load(&settings).await.unwrap();
        let mut h = HeaderMap::new();
        assert_eq!(auth.check(&h).await, Err(Refusal::Missing));
        h.insert(
            "x-whalebox-token",
            HeaderValue::from_static("0123456789abcdef0123"),
        );
        assert_eq!(auth.check(&h).await.unwrap().name, "harness");
        h.insert(
            "x-whalebox-token",
            HeaderValue::from_static("Bearer 0123456789abcdef0123"),
        );
        assert_eq!(auth.check(&h).await.unwrap().scheme, Scheme::Token);
        h.insert(
            "authorization",
            HeaderValue::from_static("Bearer wrong-token-wrong-token"),
        );
        assert!(matches!(auth.check(&h).await, Err(Refusal::Invalid(_))));
        let refused = auth.refuse(&Refusal::Invalid(String::new()));
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
        let challenge = refused.headers()["www-authenticate"].to_str().unwrap();
        assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    }

    #[test]
    fn bearer_header_forms() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), None);
        h.insert("authorization", HeaderValue::from_static("Bearer abc"));
        assert_eq!(bearer(&h), Some("abc"));
        h.insert("authorization", HeaderValue::from_static("bearer  abc "));
        assert_eq!(bearer(&h), Some("abc"));
        h.insert("authorization", HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&h), None);
        h.insert("authorization", HeaderValue::from_static("Bearer "));
        assert_eq!(bearer(&h), None);
    }
}
