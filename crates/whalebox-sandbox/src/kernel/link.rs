//! The gate's connection to the decision server, kept for the whole task, in the
//! server's framing (a 4-byte big-endian length, then JSON). Questions carry an `id`
//! and answers come back with it, in any order (an `ask` may wait for a person while
//! other execs are decided); records of execs allowed in the gate go without an answer.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;

use serde_json::Value;

/// Above ARG_MAX plus JSON escaping, as the server's own limit.
const MAX_FRAME: usize = 16 << 20;

/// Bytes received so far on one stream, cut into frames.
#[derive(Default)]
struct Frames {
    buf: Vec<u8>,
}

impl Frames {
    fn next(&mut self) -> Result<Option<Vec<u8>>, String> {
        if self.buf.len() < 4 {
            return Ok(None);
        }
        let len = u32::from_be_bytes(self.buf[..4].try_into().expect("4 bytes")) as usize;
        if len > MAX_FRAME {
            return Err(format!("a frame of {len} bytes"));
        }
        if self.buf.len() < 4 + len {
            return Ok(None);
        }
        let body = self.buf[4..4 + len].to_vec();
        self.buf.drain(..4 + len);
        Ok(Some(body))
    }

    /// Read what is there without blocking; Ok(false) at end of stream.
    fn fill(&mut self, stream: &mut UnixStream) -> std::io::Result<bool> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) => return Ok(false),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

pub fn frame(body: &Value) -> Vec<u8> {
    let text = body.to_string();
    let mut out = (text.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(text.as_bytes());
    out
}

/// Write all of `data` to a non-blocking stream, waiting for room when it is full.
fn send_all(stream: &mut UnixStream, mut data: &[u8]) -> std::io::Result<()> {
    while !data.is_empty() {
        match stream.write(data) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                let mut fds = [nix::poll::PollFd::new(
                    stream.as_fd(),
                    nix::poll::PollFlags::POLLOUT,
                )];
                let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(1000u16));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Connect to the decision server on `socket`, only when the process listening there is
/// `expect`, and ask for its policy (`hello`), for a gate that will run where that
/// process cannot be named: a supervisor's child in the session's PID namespace, in
/// which `SO_PEERCRED` reads the server's pid as 0. The answer waits in the socket.
pub fn connect_ahead(socket: &Path, expect: i32, hello: &Value) -> Result<UnixStream, String> {
    let mut stream = UnixStream::connect(socket)
        .map_err(|e| format!("no decision server at {}: {e}", socket.display()))?;
    verify_peer(&stream, expect)?;
    stream
        .write_all(&frame(hello))
        .map_err(|e| format!("the decision server went away: {e}"))?;
    stream.set_nonblocking(true).map_err(|e| e.to_string())?;
    Ok(stream)
}

/// Whether the process answering on `stream` is `pid` (`SO_PEERCRED`, taken by the
/// kernel when the listener was made: a relay cannot claim another process's pid).
fn verify_peer(stream: &UnixStream, pid: i32) -> Result<(), String> {
    let peer = nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials)
        .map_err(|e| format!("who answers on the decision socket: {e}"))?;
    if peer.pid() == pid {
        Ok(())
    } else {
        Err(format!(
            "the decision socket is answered by process {}, not the server ({pid}): something \
             replaced it, so every exec that needs an answer is refused; start a new session",
            peer.pid()
        ))
    }
}

/// The connection to the decision server.
pub struct Server {
    stream: Option<UnixStream>,
    frames: Frames,
    /// Why there is no server to ask (never connected, or it went away).
    pub gone: Option<String>,
}

impl Server {
    /// Connect to the decision server on `socket`; with `expect`, only when the process
    /// listening there is that pid (a task that could replace the socket file, if a
    /// fence failed, gets its relay refused: every exec that needs an answer is denied).
    pub fn connect(socket: Option<&Path>, expect: Option<i32>) -> Server {
        let attempt = socket
            .ok_or_else(|| "no decision server was given".to_string())
            .and_then(|s| {
                UnixStream::connect(s)
                    .map_err(|e| format!("no decision server at {}: {e}", s.display()))
            })
            .and_then(|s| match expect {
                Some(pid) => verify_peer(&s, pid).map(|()| s),
                None => Ok(s),
            })
            .and_then(|s| {
                s.set_nonblocking(true).map_err(|e| e.to_string())?;
                Ok(s)
            });
        match attempt {
            Ok(stream) => Server {
                stream: Some(stream),
                frames: Frames::default(),
                gone: None,
            },
            Err(why) => Server {
                stream: None,
                frames: Frames::default(),
                gone: Some(why),
            },
        }
    }

    /// A connection [`connect_ahead`] made.
    pub fn from_stream(stream: UnixStream) -> Server {
        Server {
            stream: Some(stream),
            frames: Frames::default(),
            gone: None,
        }
    }

    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.stream.as_ref().map(|s| s.as_fd())
    }

    /// Send a request; Err says why it cannot be asked (the caller denies).
    pub fn send(&mut self, request: &Value) -> Result<(), String> {
        if let Some(why) = &self.gone {
            return Err(why.clone());
        }
        let stream = self.stream.as_mut().expect("connected while not gone");
        if let Err(e) = send_all(stream, &frame(request)) {
            self.lose(format!("the decision server went away: {e}"));
            return Err(self.gone.clone().unwrap_or_default());
        }
        Ok(())
    }

    /// Send frames already made (records, batched).
    pub fn send_frames(&mut self, frames: &[u8]) -> Result<(), String> {
        if let Some(why) = &self.gone {
            return Err(why.clone());
        }
        let stream = self.stream.as_mut().expect("connected while not gone");
        if let Err(e) = send_all(stream, frames) {
            self.lose(format!("the decision server went away: {e}"));
            return Err(self.gone.clone().unwrap_or_default());
        }
        Ok(())
    }

    /// The answers that have arrived.
    pub fn answers(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        let Some(stream) = self.stream.as_mut() else {
            return out;
        };
        let open = match self.frames.fill(stream) {
            Ok(open) => open,
            Err(e) => {
                self.lose(format!("the decision server went away: {e}"));
                return out;
            }
        };
        loop {
            match self.frames.next() {
                Ok(Some(body)) => match serde_json::from_slice(&body) {
                    Ok(v) => out.push(v),
                    Err(e) => {
                        self.lose(format!("a bad answer from the decision server: {e}"));
                        return out;
                    }
                },
                Ok(None) => break,
                Err(e) => {
                    self.lose(format!("a bad answer from the decision server: {e}"));
                    return out;
                }
            }
        }
        if !open {
            self.lose("the decision server closed the connection".into());
        }
        out
    }

    fn lose(&mut self, why: String) {
        self.stream = None;
        self.gone.get_or_insert(why);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_answered_by_another_process_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gate.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let me = std::process::id() as i32;
        assert!(Server::connect(Some(&path), Some(me)).gone.is_none());
        let relay = Server::connect(Some(&path), Some(me + 1));
        assert!(
            relay
                .gone
                .as_deref()
                .unwrap_or("")
                .contains("not the server"),
            "{:?}",
            relay.gone
        );
    }
}
