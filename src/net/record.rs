//! One record per connection the proxy accepted, handed to a [`Sink`] when the connection
//! ends: the audit log and a shell result's `data.network` are built from these.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

/// What the client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `CONNECT host:port`, a tunnel (HTTPS, or any TCP protocol).
    Connect,
    /// A plain-HTTP request in absolute form, forwarded to the origin.
    Forward,
    /// No request the proxy understood (garbage, too large, too slow, over the limit).
    Unknown,
}

/// How the connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Allowed, connected to `address`, bytes relayed until either side closed (or the
    /// idle timeout, or the proxy stopped: see `note`).
    Allowed,
    /// Refused by the decision or by the address guard: the 403's rule and advice.
    Denied { rule: String, how_to_allow: String },
    /// Allowed, but the host did not resolve or no address answered (502/504).
    Failed { why: String },
    /// Not a request the proxy serves (`status` answered, or 0 when the client closed
    /// before sending one).
    Rejected { status: u16, why: String },
}

#[derive(Debug, Clone)]
pub struct ConnectionRecord {
    /// Unique within one proxy.
    pub id: u64,
    /// The door's label: the task the connection came from.
    pub task: Option<String>,
    pub client: SocketAddr,
    pub kind: Kind,
    /// As the proxy judged it (lower case, punycode, canonical address text).
    pub host: Option<String>,
    pub port: Option<u16>,
    /// The checked address the proxy connected to.
    pub address: Option<SocketAddr>,
    pub outcome: Outcome,
    /// Client to origin (the rewritten request head included), and origin to client;
    /// for a credential host whose TLS the proxy ended, the bytes to and from the origin
    /// (its TLS included).
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub start: SystemTime,
    pub end: SystemTime,
    /// Why an allowed relay ended early (idle timeout, proxy stopped, an I/O error).
    pub note: Option<String>,
    /// The credentials (their names, never the secrets) the proxy swapped into the
    /// requests on this connection.
    pub credential: Option<String>,
    /// The programs from the task's first one to the one that connected
    /// (`["zsh", "make", "curl"]`), when they could be found.
    pub programs: Option<Vec<String>>,
}

impl ConnectionRecord {
    /// The rule that refused it, if one did.
    pub fn rule(&self) -> Option<&str> {
        match &self.outcome {
            Outcome::Denied { rule, .. } => Some(rule),
            _ => None,
        }
    }
}

/// Where records go; called once per connection, from the connection's task.
pub type Sink = Arc<dyn Fn(ConnectionRecord) + Send + Sync>;

/// A sink that sends into an unbounded channel (records are small and one per
/// connection, which the connection limit already bounds in flight).
pub fn channel_sink() -> (Sink, tokio::sync::mpsc::UnboundedReceiver<ConnectionRecord>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let sink: Sink = Arc::new(move |r| {
        let _ = tx.send(r);
    });
    (sink, rx)
}

/// A sink that drops every record.
pub fn null_sink() -> Sink {
    Arc::new(|_| {})
}
