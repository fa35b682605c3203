//! Bytes both ways between a client and the origin after the decision, counted as they
//! pass, until both sides have closed, one fails, or neither has sent anything for the
//! idle timeout. A side that closes its write half (EOF) has that passed on (shutdown),
//! and the other direction keeps flowing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

const BUF: usize = 64 * 1024;

/// Byte counts and the time of the last byte, shared with whoever records the connection.
#[derive(Debug)]
pub struct Counters {
    pub up: AtomicU64,
    pub down: AtomicU64,
    base: Instant,
    last_ms: AtomicU64,
}

impl Default for Counters {
    fn default() -> Counters {
        Counters {
            up: AtomicU64::new(0),
            down: AtomicU64::new(0),
            base: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }
}

impl Counters {
    fn touch(&self) {
        let ms = self.base.elapsed().as_millis() as u64;
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.base + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }
}

/// How a relay ended.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// Both sides closed.
    Closed,
    Idle,
    Error(String),
}

/// Relays until the end (see the module doc); counts into `c`.
pub async fn relay(
    client: &mut TcpStream,
    origin: &mut TcpStream,
    c: &Counters,
    idle: Duration,
) -> End {
    c.touch();
    let (mut cr, mut cw) = client.split();
    let (mut or, mut ow) = origin.split();
    let both = async {
        tokio::try_join!(
            pump(&mut cr, &mut ow, &c.up, c),
            pump(&mut or, &mut cw, &c.down, c)
        )
    };
    let watch = async {
        loop {
            let deadline = c.last() + idle;
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep_until(deadline).await;
        }
    };
    tokio::select! {
        r = both => match r {
            Ok(_) => End::Closed,
            Err(e) => End::Error(e.to_string()),
        },
        _ = watch => End::Idle,
    }
}

async fn pump<R, W>(r: &mut R, w: &mut W, count: &AtomicU64, c: &Counters) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; BUF];
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            // Pass the half-close on; the peer may already be gone.
            let _ = w.shutdown().await;
            return Ok(());
        }
        w.write_all(&buf[..n]).await?;
        count.fetch_add(n as u64, Ordering::Relaxed);
        c.touch();
    }
}
