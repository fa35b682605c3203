//! Plain HTTP to a credential host (`plain_http = true`, or a request that carries no
//! secret): served by the same per-request path as inside TLS, so the answer is masked.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use tokio::net::TcpStream;
use tokio::time::Instant;

use super::streams::Prefixed;
use super::{Activity, Flush, State, Tally, finish, serve};
use crate::net::config::ProxyConfig;
use crate::net::credential::Credentials;
use crate::net::head::Target;
use crate::net::record::Outcome;

/// Serves one plain-HTTP request to a credential host (the proxy read its head and
/// screened it, and made `first`: the head as the origin gets it, then the body bytes
/// that came with it) the way [`intercept`](super::intercept) serves each request inside TLS: to the
/// origin on the connection the proxy made, and the answer's headers and body masked
/// ([`Masked`](crate::net::credential::Masked)), so an origin that echoes what it got over plain HTTP (`plain_http =
/// true`) hands the task no secret either. One request per connection, as every
/// forwarded request: the next one is read, screened and decided anew.
pub(crate) async fn forward_plain(
    client: &mut TcpStream,
    first: Vec<u8>,
    origin: (TcpStream, SocketAddr),
    target: &Target,
    creds: &Arc<Credentials>,
    cfg: &ProxyConfig,
    tally: &mut Tally<'_>,
) -> Outcome {
    let activity = Arc::new(Activity {
        base: Instant::now(),
        last_ms: AtomicU64::new(0),
    });
    let io = Prefixed {
        early: first,
        pos: 0,
        inner: client,
        activity: activity.clone(),
    };
    let state = State::new(creds, target, origin, None, cfg, activity);
    let flush = Flush {
        state: state.clone(),
        tally,
    };
    let outcome = serve(io, &state, cfg, false, flush.tally.note).await;
    finish(client, state, flush, outcome).await
}
