//! The listener: TCP, or TLS from PEM files (handshakes off the accept loop, with a
//! deadline), at most `max_connections` open at once, request headers within
//! `request_timeout` (slow clients do not hold connections), and a graceful stop: no
//! new connections, each open one finishes the request under way and closes.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use crate::front::Front;
use crate::settings::{HttpSettings, TlsFiles};

/// A bound socket, with TLS when the settings name certificate files.
pub struct Listener {
    tcp: TcpListener,
    tls: Option<TlsAcceptor>,
    max_connections: usize,
    request_timeout: Duration,
}

impl Listener {
    pub async fn bind(settings: &HttpSettings) -> Result<Listener, String> {
        let tls = match &settings.tls {
            Some(files) => Some(acceptor(files)?),
            None => None,
        };
        let tcp = TcpListener::bind(settings.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", settings.listen))?;
        Ok(Listener {
            tcp,
            tls,
            max_connections: settings.max_connections,
            request_timeout: settings.request_timeout,
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.tcp.local_addr()
    }

    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }
}

fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor, String> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("TLS certificate {}: {e}", files.cert.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "TLS certificate {}: no certificate in it",
            files.cert.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| format!("TLS key {}: {e}", files.key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("TLS certificate and key: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Serve until `stop` completes, then let every open connection finish the request
/// under way (an event stream ends when its session does) and return once all closed.
pub async fn serve(front: Arc<Front>, listener: Listener, stop: impl Future<Output = ()>) {
    let Listener {
        tcp,
        tls,
        max_connections,
        request_timeout,
    } = listener;
    let slots = Arc::new(Semaphore::new(max_connections));
    let (stopping_tx, stopping) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = tcp.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of descriptors and the like: wait a little, not spin.
                        tracing::warn!("accept: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                    tracing::warn!(%peer, "connection closed: {max_connections} are open (max_connections)");
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let (front, tls, stopping) = (Arc::clone(&front), tls.clone(), stopping.clone());
                connections.spawn(async move {
                    let _slot = slot;
                    connection(front, stream, tls, request_timeout, stopping).await;
                });
            }
        }
    }
    drop(tcp);
    let _ = stopping_tx.send(true);
    while connections.join_next().await.is_some() {}
}

async fn connection(
    front: Arc<Front>,
    stream: TcpStream,
    tls: Option<TlsAcceptor>,
    request_timeout: Duration,
    stopping: watch::Receiver<bool>,
) {
    match tls {
        None => http(front, stream, request_timeout, stopping).await,
        Some(acceptor) => {
            match tokio::time::timeout(request_timeout, acceptor.accept(stream)).await {
                Ok(Ok(stream)) => http(front, stream, request_timeout, stopping).await,
                Ok(Err(e)) => tracing::debug!("TLS handshake: {e}"),
                Err(_) => tracing::debug!("TLS handshake: too slow"),
            }
        }
    }
}

async fn http<S>(
    front: Arc<Front>,
    stream: S,
    request_timeout: Duration,
    mut stopping: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request: hyper::Request<Incoming>| {
        let front = Arc::clone(&front);
        async move { Ok::<_, Infallible>(front.handle(request).await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(request_timeout)
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(e) = result {
                tracing::debug!("connection: {e}");
            }
            return;
        }
        _ = stopping.wait_for(|s| *s) => {}
    }
    conn.as_mut().graceful_shutdown();
    if let Err(e) = conn.await {
        tracing::debug!("connection: {e}");
    }
}
