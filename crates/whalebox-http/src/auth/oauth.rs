//! OAuth 2.1 resource-server mode: a JWT from the authorization server, checked against
//! its JWKS (a file, or a URL fetched at start and again for a key id not seen yet):
//! signature with a public-key algorithm from a fixed list (never the token's say, never
//! HMAC, never `none`), issuer, audience (this server's resource URL, RFC 8707), expiry,
//! and the scopes the profile requires. The metadata clients discover it from is
//! [`metadata`] (RFC 9728).

use std::sync::RwLock;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet};
use jsonwebtoken::{DecodingKey, Validation, decode, decode_header};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Principal, Refusal, Scheme};
use crate::settings::{KeySource, OAuthSettings};

/// A JWKS URL is fetched again for an unknown key id at most this often.
const REFETCH_EVERY: Duration = Duration::from_secs(30);
/// Clock skew allowed on `exp` and `nbf`.
const LEEWAY_S: u64 = 30;

pub struct Verifier {
    settings: OAuthSettings,
    keys: RwLock<Keys>,
    client: reqwest::Client,
}

#[derive(Default)]
struct Keys {
    set: Option<JwkSet>,
    fetched: Option<Instant>,
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Claims {
    sub: Option<String>,
    client_id: Option<String>,
    azp: Option<String>,
    /// Space-separated (RFC 8693, RFC 9068).
    scope: Option<String>,
    /// A list (as some servers write it).
    scp: Option<Value>,
}

impl Verifier {
    pub async fn load(settings: &OAuthSettings) -> Result<Verifier, String> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| format!("[http.oauth]: cannot build the JWKS client: {e}"))?;
        let verifier = Verifier {
            settings: settings.clone(),
            keys: RwLock::new(Keys::default()),
            client,
        };
        match (&settings.jwks, verifier.fetch().await) {
            (KeySource::File(_), Err(e)) => return Err(e),
            (KeySource::Url(url), Err(e)) => {
                tracing::warn!("[http.oauth] JWKS {url}: {e}; fetched again on the first token")
            }
            (_, Ok(())) => {}
        }
        Ok(verifier)
    }

    pub fn ready(&self) -> Result<(), String> {
        let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
        match (&keys.set, &keys.error) {
            (Some(_), _) => Ok(()),
            (None, Some(e)) => Err(format!("no JWKS yet: {e}")),
            (None, None) => Err("no JWKS yet".into()),
        }
    }

    /// Read or fetch the key set.
    async fn fetch(&self) -> Result<(), String> {
        let result = match &self.settings.jwks {
            KeySource::File(path) => std::fs::read(path)
                .map_err(|e| format!("JWKS file {}: {e}", path.display()))
                .and_then(|b| {
                    serde_json::from_slice::<JwkSet>(&b)
                        .map_err(|e| format!("JWKS file {}: {e}", path.display()))
                }),
            KeySource::Url(url) => self.fetch_url(url).await,
        };
        let mut keys = self.keys.write().unwrap_or_else(|p| p.into_inner());
        keys.fetched = Some(Instant::now());
        match result {
            Ok(set) => {
                keys.set = Some(set);
                keys.error = None;
                Ok(())
            }
            Err(e) => {
                keys.error = Some(e.clone());
                Err(e)
            }
        }
    }

    async fn fetch_url(&self, url: &str) -> Result<JwkSet, String> {
        let response = self
            .client
            .get(url)
            .send()
            .await
            .map_err(|e| format!("JWKS {url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("JWKS {url}: HTTP {}", response.status()));
        }
        let body = response
            .bytes()
            .await
            .map_err(|e| format!("JWKS {url}: {e}"))?;
        serde_json::from_slice(&body).map_err(|e| format!("JWKS {url}: {e}"))
    }

    /// The key for `kid` (the only key, when the token names none and the set has one).
    fn key(&self, kid: Option<&str>) -> Option<Jwk> {
        let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
        let set = keys.set.as_ref()?;
        match kid {
            Some(kid) => set.find(kid).cloned(),
            None if set.keys.len() == 1 => set.keys.first().cloned(),
            None => None,
        }
    }

    fn may_refetch(&self) -> bool {
        let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
        matches!(self.settings.jwks, KeySource::Url(_))
            && keys.fetched.is_none_or(|t| t.elapsed() >= REFETCH_EVERY)
    }

    pub async fn check(&self, token: &str) -> Result<Principal, Refusal> {
        let invalid = |why: String| Refusal::Invalid(why);
        let header = decode_header(token).map_err(|e| invalid(format!("JWT header: {e}")))?;
        if !self.settings.algorithms.contains(&header.alg) {
            return Err(invalid(format!(
                "algorithm {:?} is not accepted",
                header.alg
            )));
        }
        let kid = header.kid.as_deref();
        let jwk = match self.key(kid) {
            Some(k) => k,
            None if self.may_refetch() => {
                // A rotated key: the authorization server's set may have it by now.
                let _ = self.fetch().await;
                self.key(kid)
                    .ok_or_else(|| invalid(format!("no key {kid:?} in the JWKS")))?
            }
            None => return Err(invalid(format!("no key {kid:?} in the JWKS"))),
        };
        if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
            return Err(invalid("the JWKS key is a shared secret".into()));
        }
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| invalid(format!("JWKS key: {e}")))?;
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.leeway = LEEWAY_S;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[&self.settings.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data =
            decode::<Claims>(token, &key, &validation).map_err(|e| invalid(format!("JWT: {e}")))?;
        let claims = data.claims;
        let mut scopes: Vec<String> = claims
            .scope
            .as_deref()
            .unwrap_or_default()
            .split_whitespace()
            .map(String::from)
            .collect();
        if let Some(Value::Array(list)) = &claims.scp {
            scopes.extend(list.iter().filter_map(|v| v.as_str().map(String::from)));
        } else if let Some(Value::String(s)) = &claims.scp {
            scopes.extend(s.split_whitespace().map(String::from));
        }
        let missing: Vec<&String> = self
            .settings
            .scopes
            .iter()
            .filter(|s| !scopes.contains(s))
            .collect();
        if !missing.is_empty() {
            return Err(Refusal::InsufficientScope(format!(
                "missing scopes {missing:?}"
            )));
        }
        let name = claims
            .sub
            .or(claims.client_id)
            .or(claims.azp)
            .unwrap_or_else(|| "oauth".into());
        Ok(Principal {
            name,
            scheme: Scheme::OAuth,
            scopes,
        })
    }
}

/// The protected-resource metadata (RFC 9728) served at
/// `/.well-known/oauth-protected-resource` (and with `/mcp` after it).
pub fn metadata(settings: &OAuthSettings) -> Value {
    json!({
        "resource": settings.resource,
        "authorization_servers": settings.authorization_servers,
        "scopes_supported": settings.scopes,
        "bearer_methods_supported": ["header"],
        "resource_name": "whalebox",
    })
}
