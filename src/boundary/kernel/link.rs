//! The gate's two conversations, both in the decision server's framing (a 4-byte
//! big-endian length, then JSON):
//!
//! - [`Server`]: the gate's one connection to the decision server, kept for the whole
//!   task. Requests carry an `id` and answers come back with it, in any order (an `ask`
//!   may wait for a person while other execs are decided).
//! - [`Proxy`]: the socket zsh's in-process gate is pointed at instead of the server.
//!   It forwards each question and remembers what was allowed, for which process (by
//!   the kernel's SO_PEERCRED, not by what the request claims), so that when that
//!   process then makes the exec the kernel gate recognizes it and does not decide it a
//!   second time.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

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

/// The connection to the decision server.
pub struct Server {
    stream: Option<UnixStream>,
    frames: Frames,
    /// Why there is no server to ask (never connected, or it went away).
    pub gone: Option<String>,
}

impl Server {
    pub fn connect(socket: Option<&Path>) -> Server {
        let attempt = socket
            .ok_or_else(|| "no decision server was given".to_string())
            .and_then(|s| {
                UnixStream::connect(s)
                    .map_err(|e| format!("no decision server at {}: {e}", s.display()))
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

struct Conn {
    stream: UnixStream,
    frames: Frames,
    /// The connecting process, as the kernel reports it.
    pid: i32,
}

/// The socket zsh's gate asks through.
pub struct Proxy {
    dir: PathBuf,
    pub socket: PathBuf,
    listener: UnixListener,
    conns: HashMap<u64, Conn>,
    next: u64,
}

/// A question a process asked through the proxy.
pub struct Asked {
    pub conn: u64,
    pub pid: i32,
    pub request: Value,
}

impl Proxy {
    /// A fresh private directory under `tmp` (0700) with the socket in it.
    pub fn bind(tmp: &Path) -> std::io::Result<Proxy> {
        let dir = tempfile::Builder::new()
            .prefix("whalebox-gate-")
            .tempdir_in(tmp)?
            .keep();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        let socket = dir.join("gate.sock");
        let listener = UnixListener::bind(&socket)?;
        listener.set_nonblocking(true)?;
        Ok(Proxy {
            dir,
            socket,
            listener,
            conns: HashMap::new(),
            next: 0,
        })
    }

    pub fn listener_fd(&self) -> BorrowedFd<'_> {
        self.listener.as_fd()
    }

    pub fn conn_fds(&self) -> Vec<(u64, BorrowedFd<'_>)> {
        self.conns
            .iter()
            .map(|(k, c)| (*k, c.stream.as_fd()))
            .collect()
    }

    pub fn accept(&mut self) {
        while let Ok((stream, _)) = self.listener.accept() {
            let pid =
                nix::sys::socket::getsockopt(&stream, nix::sys::socket::sockopt::PeerCredentials)
                    .map(|c| c.pid())
                    .unwrap_or(0);
            if pid <= 0 || stream.set_nonblocking(true).is_err() {
                continue;
            }
            self.next += 1;
            self.conns.insert(
                self.next,
                Conn {
                    stream,
                    frames: Frames::default(),
                    pid,
                },
            );
        }
    }

    /// Read from one connection; a complete question comes back (one per connection).
    pub fn read(&mut self, key: u64) -> Option<Asked> {
        let conn = self.conns.get_mut(&key)?;
        let open = conn.frames.fill(&mut conn.stream).unwrap_or(false);
        match conn.frames.next() {
            Ok(Some(body)) => match serde_json::from_slice::<Value>(&body) {
                Ok(request) => Some(Asked {
                    conn: key,
                    pid: conn.pid,
                    request,
                }),
                Err(_) => {
                    self.conns.remove(&key);
                    None
                }
            },
            Ok(None) if open => None,
            _ => {
                self.conns.remove(&key);
                None
            }
        }
    }

    /// Answer a question and hang up.
    pub fn answer(&mut self, key: u64, reply: &Value) {
        if let Some(mut conn) = self.conns.remove(&key) {
            let _ = send_all(&mut conn.stream, &frame(reply));
        }
    }

    pub fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
