//! The session's loopback bridges, for the namespace fence: the machine's loopback
//! services a task may reach (`[network] host_ports`: a listener on the namespace's
//! 127.0.0.1:PORT, relayed to the machine's, each connection decided by the policy's
//! `[[network]]` rules and recorded as any other), and the task's servers the machine
//! may reach (`publish`: a listener on the machine's 127.0.0.1:PORT, relayed into the
//! namespace).

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::time::SystemTime;

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::Inner;
use crate::guard::spaces::Spaces;
use crate::net::record::{ConnectionRecord, Kind, Outcome};
use crate::policy::Decision as PolicyDecision;
use crate::policy::network::judge;

/// The name a host port is decided and recorded under.
const HOST: &str = "localhost";

/// Start every bridge; what could not be started, one line each.
pub(super) fn start(
    runtime: &tokio::runtime::Handle,
    inner: &Arc<Inner>,
    spaces: &Arc<Spaces>,
    host_ports: &[u16],
    publish: &[u16],
    stop: &CancellationToken,
) -> Vec<String> {
    let _entered = runtime.enter();
    let mut problems = Vec::new();
    for &port in host_ports {
        let listener = spaces
            .listen(&[port])
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .and_then(TcpListener::from_std);
        match listener {
            Ok(l) => {
                tokio::spawn(host_port(inner.clone(), l, port, stop.clone()));
            }
            Err(e) => problems.push(format!(
                "network: host_ports {port}: cannot listen on the session's 127.0.0.1:{port} ({e}); a task's own server holds it?"
            )),
        }
    }
    for &port in publish {
        let listener = std::net::TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .and_then(TcpListener::from_std);
        match listener {
            Ok(l) => {
                tokio::spawn(published(spaces.clone(), l, port, stop.clone()));
            }
            Err(e) => problems.push(format!(
                "network: publish {port}: cannot listen on this machine's 127.0.0.1:{port} ({e}): another program or session holds it, so the task's server there is not reachable from the machine"
            )),
        }
    }
    problems
}

/// Relay each connection to a host port to the machine's 127.0.0.1:`port`.
async fn host_port(inner: Arc<Inner>, listener: TcpListener, port: u16, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            a = listener.accept() => a,
        };
        let Ok((stream, peer)) = accepted else {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        };
        let inner = inner.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let local = stream.local_addr().ok();
            // Which task connected, and its programs: looked up while it waits.
            let lookup = inner.clone();
            let found = tokio::task::spawn_blocking(move || lookup.owner_of(peer, local))
                .await
                .ok()
                .flatten();
            let (token, programs) = match found {
                Some((t, p)) => (t, Some(p)),
                None => (String::new(), None),
            };
            let mut record = ConnectionRecord {
                id: 0,
                task: None,
                client: peer,
                kind: Kind::Connect,
                host: Some(HOST.into()),
                port: Some(port),
                address: Some(SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))),
                outcome: Outcome::Allowed,
                bytes_up: 0,
                bytes_down: 0,
                start: SystemTime::now(),
                end: SystemTime::now(),
                note: None,
                credential: None,
                programs,
            };
            if let Some(rule) = judge(&inner.policy_rules, HOST, port)
                .filter(|r| r.decision != PolicyDecision::Allow)
            {
                record.outcome = Outcome::Denied {
                    rule: format!(
                        "{HOST}:{port} (host_ports) is refused by the policy rule {}",
                        rule.describe()
                    ),
                    how_to_allow: format!(
                        "change the rule at {} (the policy file is versioned with the repository)",
                        rule.source
                    ),
                };
            } else {
                match TcpStream::connect(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)).await {
                    Ok(upstream) => {
                        let (up, down) = relay(stream, upstream, &stop).await;
                        record.bytes_up = up;
                        record.bytes_down = down;
                    }
                    Err(e) => {
                        record.outcome = Outcome::Failed {
                            why: format!("nothing answers on this machine's 127.0.0.1:{port}: {e}"),
                        };
                    }
                }
            }
            record.end = SystemTime::now();
            inner.record(&token, record);
        });
    }
}

/// Relay each connection from the machine to the session's 127.0.0.1:`port`.
async fn published(spaces: Arc<Spaces>, listener: TcpListener, port: u16, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            a = listener.accept() => a,
        };
        let Ok((stream, _)) = accepted else {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        };
        let spaces = spaces.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let inside = tokio::task::spawn_blocking(move || spaces.connect(port))
                .await
                .map_err(std::io::Error::other)
                .and_then(|r| r)
                .and_then(|s| s.set_nonblocking(true).map(|()| s))
                .and_then(TcpStream::from_std);
            // Nothing listens there yet: the machine's client sees the connection close.
            if let Ok(inside) = inside {
                relay(stream, inside, &stop).await;
            }
        });
    }
}

/// Copy both ways until either side closes (or the session ends); bytes each way.
async fn relay(mut a: TcpStream, mut b: TcpStream, stop: &CancellationToken) -> (u64, u64) {
    let _ = a.set_nodelay(true);
    let _ = b.set_nodelay(true);
    tokio::select! {
        r = tokio::io::copy_bidirectional(&mut a, &mut b) => r.unwrap_or((0, 0)),
        _ = stop.cancelled() => (0, 0),
    }
}

impl Inner {
    /// The task (its token) whose processes hold the client end `peer` of a connection,
    /// and the programs from its shell to the one that connected.
    pub(super) fn owner_of(
        &self,
        peer: SocketAddr,
        local: Option<SocketAddr>,
    ) -> Option<(String, Vec<String>)> {
        let local = local?;
        let candidates: Vec<(String, i32)> = self
            .entries
            .lock()
            .ok()?
            .iter()
            .filter(|(_, e)| e.door.is_some())
            .filter_map(|(t, e)| Some((t.clone(), e.pid?)))
            .collect();
        candidates.into_iter().find_map(|(token, pid)| {
            crate::net::programs::chain(pid, peer, local).map(|c| (token, c))
        })
    }
}
