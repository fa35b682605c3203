//! The namespace hand-over: a task's supervisor passes the listener of its door (bound
//! inside the task's network namespace) back to the server, which serves it.

use std::sync::Arc;

use super::Inner;
use super::ask::TaskDecide;
use crate::net::netns;
use crate::net::proxy::{DoorConfig, Egress};
use crate::net::record::Sink;

/// The hand-over thread's state.
pub(super) struct Handoff {
    pub(super) inner: Arc<Inner>,
    pub(super) egress: Egress,
    pub(super) runtime: tokio::runtime::Handle,
}

impl Handoff {
    pub(super) fn serve(&self, conn: &mut std::os::unix::net::UnixStream) {
        let served = match netns::receive(conn) {
            Ok((token, listener)) => self.open(&token, listener),
            Err(e) => Err(e),
        };
        if let Err(e) = &served {
            tracing::warn!("network hand-over refused: {e}");
        }
        netns::acknowledge(conn, served.is_ok());
    }

    fn open(&self, token: &str, listener: std::net::TcpListener) -> Result<(), String> {
        let mut entries = self.inner.entries.lock().map_err(|_| "poisoned")?;
        let entry = entries
            .get_mut(token)
            .ok_or("an unknown token (not a task this session started)")?;
        if entry.door.is_some() {
            return Err("this task already has its door".into());
        }
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("nonblocking: {e}"))?;
        let _entered = self.runtime.enter();
        let listener = tokio::net::TcpListener::from_std(listener)
            .map_err(|e| format!("cannot serve the handed-over port: {e}"))?;
        let inner = self.inner.clone();
        let tok = token.to_string();
        let sink: Sink = Arc::new(move |r| inner.record(&tok, r));
        let door = self
            .egress
            .open(
                listener,
                DoorConfig {
                    decide: Arc::new(TaskDecide {
                        inner: self.inner.clone(),
                        token: token.to_string(),
                    }),
                    sink,
                    label: Some(token.to_string()),
                    identify: Some(self.inner.identify(token)),
                },
            )
            .map_err(|e| format!("cannot serve the handed-over port: {e}"))?;
        entry.door = Some(door);
        Ok(())
    }
}
