//! The byte streams around an intercepted connection: the client's side (what came with
//! the `CONNECT` head first, then the socket) and the origin's (counted for the record),
//! both marking activity for the idle timeout.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::{Activity, Totals};

/// The client's side: the bytes that came with the `CONNECT` head first, then the socket.
pub(super) struct Prefixed<'a> {
    pub(super) early: Vec<u8>,
    pub(super) pos: usize,
    pub(super) inner: &'a mut TcpStream,
    pub(super) activity: Arc<Activity>,
}

impl AsyncRead for Prefixed<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.pos < self.early.len() {
            let n = (self.early.len() - self.pos).min(buf.remaining());
            let from = self.pos;
            buf.put_slice(&self.early[from..from + n]);
            self.pos += n;
            self.activity.touch();
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let r = Pin::new(&mut *self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl AsyncWrite for Prefixed<'_> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut *self.inner).poll_write(cx, data);
        if let Poll::Ready(Ok(n)) = &r
            && *n > 0
        {
            self.activity.touch();
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.inner).poll_shutdown(cx)
    }
}

/// The origin's side: bytes counted (up: to the origin, TLS included; down: from it).
pub(super) struct Counted {
    pub(super) inner: TcpStream,
    pub(super) totals: Arc<Totals>,
    pub(super) activity: Arc<Activity>,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        if n > 0 {
            self.totals.down.fetch_add(n as u64, Ordering::Relaxed);
            self.activity.touch();
        }
        r
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, data);
        if let Poll::Ready(Ok(n)) = &r
            && *n > 0
        {
            self.totals.up.fetch_add(*n as u64, Ordering::Relaxed);
            self.activity.touch();
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
