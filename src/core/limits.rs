//! The session's effective limits: how much text one result may show and how long a
//! call may wait. They start as the profile's and may be lowered once, when the MCP
//! adapter learns which client connected (a client that cuts results at 10,000
//! characters or times calls out at 60 s gets limits below those). The registry caps
//! results with them and the tools size their pages and waits by them, so both agree.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

#[derive(Debug)]
pub struct SessionLimits {
    max_chars: AtomicUsize,
    max_yield_ms: AtomicU64,
    default_yield_ms: AtomicU64,
}

impl SessionLimits {
    pub fn new(max_chars: usize, max_yield_ms: u64, default_yield_ms: u64) -> Self {
        SessionLimits {
            max_chars: AtomicUsize::new(max_chars),
            max_yield_ms: AtomicU64::new(max_yield_ms),
            default_yield_ms: AtomicU64::new(default_yield_ms.min(max_yield_ms)),
        }
    }

    /// Characters of `text` one result may show.
    pub fn max_chars(&self) -> usize {
        self.max_chars.load(Ordering::Relaxed)
    }

    /// The longest a shell call may wait before answering.
    pub fn max_yield_ms(&self) -> u64 {
        self.max_yield_ms.load(Ordering::Relaxed)
    }

    /// How long shell_run waits when the call does not say.
    pub fn default_yield_ms(&self) -> u64 {
        self.default_yield_ms.load(Ordering::Relaxed)
    }

    /// Replace the limits (the client is known). The default wait never exceeds the
    /// maximum.
    pub fn set(&self, max_chars: usize, max_yield_ms: u64) {
        self.max_chars.store(max_chars, Ordering::Relaxed);
        self.max_yield_ms.store(max_yield_ms, Ordering::Relaxed);
        self.default_yield_ms
            .fetch_min(max_yield_ms, Ordering::Relaxed);
    }
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits::new(30_000, 50_000, 15_000)
    }
}
