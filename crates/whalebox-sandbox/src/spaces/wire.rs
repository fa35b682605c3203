//! One message with descriptors attached (SCM_RIGHTS), the way the factory, the holders
//! and the server talk.

use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::errno::Errno;
use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};

/// The largest message any of them sends (a request with a path, an error's text).
pub const MAX_MESSAGE: usize = 8192;

/// Send `body` with `fds`.
pub fn send(socket: &impl AsFd, body: &[u8], fds: &[BorrowedFd<'_>]) -> std::io::Result<()> {
    let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
    let cmsgs = if raw.is_empty() {
        Vec::new()
    } else {
        vec![ControlMessage::ScmRights(&raw)]
    };
    loop {
        match sendmsg::<()>(
            socket.as_fd().as_raw_fd(),
            &[IoSlice::new(body)],
            &cmsgs,
            MsgFlags::MSG_NOSIGNAL,
            None,
        ) {
            Ok(_) => return Ok(()),
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Receive one message and at most `max_fds` descriptors (more are closed). An empty
/// body: the other end closed.
pub fn receive(socket: &impl AsFd, max_fds: usize) -> std::io::Result<(Vec<u8>, Vec<OwnedFd>)> {
    let mut buf = vec![0u8; MAX_MESSAGE];
    let mut space = nix::cmsg_space!([RawFd; 8]);
    loop {
        let mut iov = [IoSliceMut::new(&mut buf)];
        match recvmsg::<()>(
            socket.as_fd().as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(msg) => {
                let mut fds = Vec::new();
                if let Ok(cmsgs) = msg.cmsgs() {
                    for c in cmsgs {
                        if let ControlMessageOwned::ScmRights(list) = c {
                            for f in list {
                                // SAFETY: the kernel just installed this descriptor for us.
                                fds.push(unsafe { OwnedFd::from_raw_fd(f) });
                            }
                        }
                    }
                }
                let n = msg.bytes;
                fds.truncate(max_fds);
                buf.truncate(n);
                return Ok((buf, fds));
            }
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// A bounded wait for an answer (a holder that hangs must not hang a call).
pub fn set_timeout(socket: &impl AsFd, seconds: u64) {
    use nix::sys::socket::{setsockopt, sockopt};
    let tv = nix::sys::time::TimeVal::new(seconds as i64, 0);
    let _ = setsockopt(socket, sockopt::ReceiveTimeout, &tv);
    let _ = setsockopt(socket, sockopt::SendTimeout, &tv);
}
