//! The routes: `/mcp` (the caller authenticated, the body read within its limits, then
//! handed to the [`Endpoint`]), `/healthz`, `/readyz`, `/metrics`, and the OAuth
//! protected-resource metadata.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use serde_json::{Value, json};

use crate::auth::{Authenticator, oauth};
use crate::metrics::Metrics;
use crate::settings::HttpSettings;

/// A response body (rmcp's own type, so its responses pass through unchanged).
pub type Body = BoxBody<Bytes, Infallible>;

/// What serves `/mcp` once the caller is known: the [`Principal`](crate::Principal) is
/// in the request's extensions, the body already read.
pub trait Endpoint: Send + Sync + 'static {
    fn handle(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Pin<Box<dyn Future<Output = Response<Body>> + Send>>;
}

/// What `/readyz` says: ready or not, and the details (which fences hold).
#[derive(Debug, Clone)]
pub struct Ready {
    pub ok: bool,
    pub detail: Value,
}

type Readiness = Box<dyn Fn() -> Ready + Send + Sync>;
type Scrape = Box<dyn Fn(&Metrics) + Send + Sync>;

pub struct Front {
    auth: Authenticator,
    metrics: Arc<Metrics>,
    endpoint: Arc<dyn Endpoint>,
    readiness: Readiness,
    before_scrape: Option<Scrape>,
    metadata: Option<Value>,
    max_body_bytes: usize,
    request_timeout: Duration,
    draining: AtomicBool,
    /// POSTs to `/mcp` whose answer is not yet sent whole (see [`Front::answers_unsent`]).
    answers: Arc<AtomicUsize>,
}

impl Front {
    pub fn new(
        settings: &HttpSettings,
        auth: Authenticator,
        metrics: Arc<Metrics>,
        endpoint: Arc<dyn Endpoint>,
        readiness: impl Fn() -> Ready + Send + Sync + 'static,
    ) -> Front {
        Front {
            auth,
            metrics,
            endpoint,
            readiness: Box::new(readiness),
            before_scrape: None,
            metadata: settings.oauth.as_ref().map(oauth::metadata),
            max_body_bytes: settings.max_body_bytes,
            request_timeout: settings.request_timeout,
            draining: AtomicBool::new(false),
            answers: Arc::default(),
        }
    }

    /// Run `f` before each `/metrics` answer (to set gauges read from elsewhere).
    pub fn before_scrape(mut self, f: impl Fn(&Metrics) + Send + Sync + 'static) -> Front {
        self.before_scrape = Some(Box::new(f));
        self
    }

    /// The server is stopping: `/readyz` says so, so load balancers send no more.
    pub fn drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// POSTs to `/mcp` whose response body has not been sent to its end. A call's
    /// result reaches its stream after the call ends, so a stopping server waits for
    /// these too before it closes the sessions (and with them the streams).
    pub fn answers_unsent(&self) -> usize {
        self.answers.load(Ordering::SeqCst)
    }

    pub async fn handle<B>(&self, request: Request<B>) -> Response<Body>
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: std::error::Error + Send + Sync + 'static,
    {
        if let Some(refusal) = ambiguous_host(&request) {
            self.metrics.request("other", refusal.status().as_u16());
            return closing(refusal);
        }
        let path = request.uri().path().to_string();
        let (route, response) = match path.as_str() {
            "/mcp" => ("/mcp", self.mcp(request).await),
            "/healthz" => (
                "/healthz",
                only_get(&request).unwrap_or_else(|| text_body(StatusCode::OK, "ok\n")),
            ),
            "/readyz" => (
                "/readyz",
                only_get(&request).unwrap_or_else(|| self.ready()),
            ),
            "/metrics" => (
                "/metrics",
                only_get(&request).unwrap_or_else(|| self.scrape()),
            ),
            "/.well-known/oauth-protected-resource"
            | "/.well-known/oauth-protected-resource/mcp" => (
                "/.well-known/oauth-protected-resource",
                only_get(&request).unwrap_or_else(|| match &self.metadata {
                    Some(m) => json_body(StatusCode::OK, m),
                    None => text_body(StatusCode::NOT_FOUND, "no OAuth configured\n"),
                }),
            ),
            _ => ("other", text_body(StatusCode::NOT_FOUND, "not found\n")),
        };
        self.metrics.request(route, response.status().as_u16());
        response
    }

    async fn mcp<B>(&self, request: Request<B>) -> Response<Body>
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: std::error::Error + Send + Sync + 'static,
    {
        let principal = match self.auth.check(request.headers()).await {
            Ok(p) => p,
            Err(refusal) => {
                if let crate::auth::Refusal::Invalid(why)
                | crate::auth::Refusal::InsufficientScope(why) = &refusal
                {
                    tracing::info!(reason = refusal.label(), "request refused: {why}");
                }
                self.metrics.auth_refused(refusal.label());
                return closing(self.auth.refuse(&refusal));
            }
        };
        let (mut parts, body) = request.into_parts();
        let body = Limited::new(body, self.max_body_bytes);
        let bytes = match tokio::time::timeout(self.request_timeout, body.collect()).await {
            Ok(Ok(collected)) => collected.to_bytes(),
            Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
                return closing(text_body(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("the body is over {} bytes\n", self.max_body_bytes),
                ));
            }
            Ok(Err(e)) => {
                return closing(text_body(StatusCode::BAD_REQUEST, &format!("body: {e}\n")));
            }
            Err(_) => {
                return closing(text_body(
                    StatusCode::REQUEST_TIMEOUT,
                    "the body did not arrive in time\n",
                ));
            }
        };
        parts.extensions.insert(principal);
        let unsent = (parts.method == Method::POST).then(|| Unsent::count(&self.answers));
        let response = self
            .endpoint
            .handle(Request::from_parts(parts, Full::new(bytes)))
            .await;
        match unsent {
            // The count drops with the body: sent to its end, or the client gone.
            Some(unsent) => response.map(|body| {
                body.map_frame(move |frame| {
                    let _ = &unsent;
                    frame
                })
                .boxed()
            }),
            None => response,
        }
    }

    fn ready(&self) -> Response<Body> {
        let mut ready = (self.readiness)();
        let mut problems = Vec::new();
        if self.draining.load(Ordering::SeqCst) {
            problems.push("the server is stopping".to_string());
        }
        if let Err(e) = self.auth.ready() {
            problems.push(format!("authentication: {e}"));
        }
        if !problems.is_empty() {
            ready.ok = false;
            if let Value::Object(map) = &mut ready.detail {
                map.insert("server".into(), json!(problems));
            }
        }
        let status = if ready.ok {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        json_body(status, &json!({"ready": ready.ok, "detail": ready.detail}))
    }

    fn scrape(&self) -> Response<Body> {
        if let Some(f) = &self.before_scrape {
            f(&self.metrics);
        }
        let mut response = Response::new(full(self.metrics.encode()));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        );
        response
    }
}

/// One answer counted in [`Front::answers_unsent`] until dropped.
struct Unsent(Arc<AtomicUsize>);

impl Unsent {
    fn count(answers: &Arc<AtomicUsize>) -> Unsent {
        answers.fetch_add(1, Ordering::SeqCst);
        Unsent(Arc::clone(answers))
    }
}

impl Drop for Unsent {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An answer given before the request's body was read whole: the connection cannot
/// carry another request, and the client is told so.
fn closing(mut response: Response<Body>) -> Response<Body> {
    response.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    response
}

/// A 400 for a request whose target host is ambiguous (RFC 9112 §3.2): more than one
/// `Host` header, or a `Host` that disagrees with an absolute-form target's authority.
/// Whoever checks `Host` later (DNS rebinding, routing) reads one value; a second one or
/// a different authority would let a request be judged by one and served by the other.
fn ambiguous_host<B>(request: &Request<B>) -> Option<Response<Body>> {
    let hosts: Vec<_> = request.headers().get_all(header::HOST).iter().collect();
    if hosts.len() > 1 {
        return Some(text_body(
            StatusCode::BAD_REQUEST,
            "the request has more than one Host header (RFC 9112 §3.2): send exactly one\n",
        ));
    }
    if let (Some(authority), Some(host)) = (request.uri().authority(), hosts.first()) {
        let same = host
            .to_str()
            .is_ok_and(|h| h.eq_ignore_ascii_case(authority.as_str()));
        if !same {
            return Some(text_body(
                StatusCode::BAD_REQUEST,
                "the Host header disagrees with the request target's authority \
                 (RFC 9112 §3.2): send the same host in both, or an origin-form target\n",
            ));
        }
    }
    None
}

/// None for a GET or HEAD; else 405.
fn only_get<B>(request: &Request<B>) -> Option<Response<Body>> {
    if request.method() == Method::GET || request.method() == Method::HEAD {
        return None;
    }
    let mut response = text_body(StatusCode::METHOD_NOT_ALLOWED, "only GET\n");
    response
        .headers_mut()
        .insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
    Some(response)
}

fn full(text: impl Into<Bytes>) -> Body {
    Full::new(text.into()).boxed()
}

pub(crate) fn text_body(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(full(text.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn json_body(status: StatusCode, value: &Value) -> Response<Body> {
    let mut response = Response::new(full(value.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo;

    impl Endpoint for Echo {
        fn handle(
            &self,
            _request: Request<Full<Bytes>>,
        ) -> Pin<Box<dyn Future<Output = Response<Body>> + Send>> {
            Box::pin(async { Response::new(full("{\"result\":{}}")) })
        }
    }

    async fn front() -> Front {
        let settings = HttpSettings::default();
        let auth = Authenticator::load(&settings).await.unwrap();
        Front::new(
            &settings,
            auth,
            Arc::new(Metrics::new()),
            Arc::new(Echo),
            || Ready {
                ok: true,
                detail: json!({}),
            },
        )
    }

    fn request(method: Method) -> Request<Full<Bytes>> {
        Request::builder()
            .method(method)
            .uri("/mcp")
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap()
    }

    #[tokio::test]
    async fn a_post_is_unsent_until_its_body_is_read_to_the_end_or_dropped() {
        let front = front().await;
        let read = front.handle(request(Method::POST)).await;
        let dropped = front.handle(request(Method::POST)).await;
        assert_eq!(front.answers_unsent(), 2);
        let body = read.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            &body[..],
            b"{\"result\":{}}",
            "the body passes through unchanged"
        );
        assert_eq!(front.answers_unsent(), 1);
        drop(dropped);
        assert_eq!(front.answers_unsent(), 0);
    }

    #[tokio::test]
    async fn two_host_headers_are_refused_with_400_before_any_route() {
        let front = front().await;
        let mut req = request(Method::POST);
        let headers = req.headers_mut();
        headers.append(header::HOST, "localhost".parse().unwrap());
        headers.append(header::HOST, "evil.example".parse().unwrap());
        let response = front.handle(req).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        assert_eq!(front.answers_unsent(), 0, "the endpoint never saw it");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert!(String::from_utf8_lossy(&body).contains("more than one Host"));
    }

    #[tokio::test]
    async fn a_host_that_disagrees_with_the_absolute_target_is_refused() {
        let front = front().await;
        let mut req = request(Method::GET);
        *req.uri_mut() = "http://localhost:8080/healthz".parse().unwrap();
        req.headers_mut()
            .insert(header::HOST, "evil.example".parse().unwrap());
        assert_eq!(front.handle(req).await.status(), StatusCode::BAD_REQUEST);

        let mut req = request(Method::GET);
        *req.uri_mut() = "http://localhost:8080/healthz".parse().unwrap();
        req.headers_mut()
            .insert(header::HOST, "LOCALHOST:8080".parse().unwrap());
        assert_eq!(front.handle(req).await.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn one_host_header_is_served() {
        let front = front().await;
        let mut req = request(Method::GET);
        *req.uri_mut() = "/healthz".parse().unwrap();
        req.headers_mut()
            .insert(header::HOST, "localhost".parse().unwrap());
        assert_eq!(front.handle(req).await.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn an_event_stream_opened_by_get_is_not_waited_for() {
        let front = front().await;
        let _stream = front.handle(request(Method::GET)).await;
        assert_eq!(front.answers_unsent(), 0);
    }
}
