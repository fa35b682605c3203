//! What a tool's call comes to: [`ToolOutput`] or [`ToolError`], and the boxed future
//! that carries it (apart from the [`Tool`](super::Tool) trait, so the person-asking
//! side can return errors without knowing about tools).

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use super::envelope::Code;
use super::repair::Repair;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
pub type ToolResult = Result<ToolOutput, ToolError>;

/// A successful result: `text` for the model, `data` for programs, and the repairs the
/// tool itself made (fuzzy edit levels), which join the registry's in the envelope.
#[derive(Debug, Clone)]
pub struct ToolOutput {
    pub text: String,
    pub data: Value,
    pub repairs: Vec<Repair>,
}

impl ToolOutput {
    pub fn new(text: impl Into<String>, data: Value) -> Self {
        ToolOutput {
            text: text.into(),
            data,
            repairs: Vec::new(),
        }
    }

    pub fn with_repairs(mut self, repairs: Vec<Repair>) -> Self {
        self.repairs = repairs;
        self
    }
}

/// A failed result. `next_step` is mandatory in spirit: an error without one is a bug.
#[derive(Debug, Clone)]
pub struct ToolError {
    pub code: Code,
    pub message: String,
    pub next_step: String,
    pub data: Value,
}

impl ToolError {
    pub fn new(code: Code, message: impl Into<String>, next_step: impl Into<String>) -> Self {
        ToolError {
            code,
            message: message.into(),
            next_step: next_step.into(),
            data: Value::Null,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = data;
        self
    }

    pub fn invalid_input(message: impl Into<String>, next_step: impl Into<String>) -> Self {
        Self::new(Code::InvalidInput, message, next_step)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            Code::Internal,
            message,
            "this is a whalebox bug or an unexpected system failure; retry once, then report it",
        )
    }
}

/// A failure that is the machine's state, not a bug: a full disk or quota, a failing
/// device, a read-only file system, no process, memory or descriptor left. Each has its own code and a next step the person
/// can take.
#[derive(Debug, Clone, Copy)]
pub struct MachineFault {
    pub code: Code,
    pub cause: &'static str,
    pub next_step: &'static str,
}

impl MachineFault {
    pub fn of(err: &std::io::Error) -> Option<MachineFault> {
        use nix::libc::{EAGAIN, EDQUOT, EIO, EMFILE, ENFILE, ENOMEM, ENOSPC, EROFS};
        use std::io::ErrorKind;
        let errno = os_errno(err);
        let (code, cause, next_step) = match (err.kind(), errno) {
            (ErrorKind::StorageFull, _) | (_, Some(ENOSPC)) => (
                Code::DiskFull,
                "the disk is full",
                "free space on that disk (build output, caches), or ask the user to; then call again",
            ),
            (ErrorKind::QuotaExceeded, _) | (_, Some(EDQUOT)) => (
                Code::DiskFull,
                "the disk quota is used up",
                "free space within the quota, or ask the user to raise it; then call again",
            ),
            (ErrorKind::ReadOnlyFilesystem, _) | (_, Some(EROFS)) => (
                Code::IoError,
                "the file system is read-only",
                "write somewhere else, or ask the user to make that file system writable",
            ),
            (_, Some(EIO)) => (
                Code::IoError,
                "the device or file system failed (an I/O error)",
                "tell the user the disk or file system is failing; call again once at most",
            ),
            (_, Some(EMFILE)) => (
                Code::OutOfResources,
                "whalebox has as many files open as its limit allows",
                "stop tasks that are no longer needed (shell_cancel), then call again; if it persists, ask the user to raise whalebox's open-file limit (ulimit -n)",
            ),
            (_, Some(ENFILE)) => (
                Code::OutOfResources,
                "the system's table of open files is full",
                "stop tasks that are no longer needed (shell_cancel), then call again",
            ),
            (ErrorKind::OutOfMemory, _) | (_, Some(ENOMEM)) => (
                Code::OutOfResources,
                "the machine is out of memory",
                "stop tasks that are no longer needed (shell_cancel), then call again",
            ),
            // Only fork and clone answer EAGAIN where this is asked (no file whalebox
            // writes is non-blocking).
            (_, Some(EAGAIN)) => (
                Code::OutOfResources,
                "no process or thread can be started (the user's or the machine's limit)",
                "stop tasks that are no longer needed (shell_cancel), then call again",
            ),
            _ => return None,
        };
        Some(MachineFault {
            code,
            cause,
            next_step,
        })
    }
}

/// The errno behind `err`, also when a library wrapped it. tempfile adds the path to
/// an error in a type of its own that hides the original as its source, so the last
/// resort is std's own "(os error N)" in the message.
fn os_errno(err: &std::io::Error) -> Option<i32> {
    if let Some(errno) = err.raw_os_error() {
        return Some(errno);
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = err.get_ref().map(|e| e as _);
    while let Some(e) = source {
        if let Some(errno) = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.raw_os_error())
        {
            return Some(errno);
        }
        source = e.source();
    }
    let text = err.to_string();
    let (_, tail) = text.rsplit_once("(os error ")?;
    tail.split_once(')')?.0.parse().ok()
}

impl ToolError {
    /// An I/O failure of `what` (a path, "the todo file"), with `outcome` saying what was
    /// left (e.g. "nothing was changed"): a [`MachineFault`] gets its own code, anything
    /// else is `internal`.
    pub fn io(what: impl std::fmt::Display, err: &std::io::Error, outcome: &str) -> Self {
        match MachineFault::of(err) {
            Some(fault) => Self::new(
                fault.code,
                format!("{what}: {} ({err}); {outcome}", fault.cause),
                fault.next_step,
            ),
            None => Self::internal(format!("{what}: {err}; {outcome}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[test]
    fn a_full_disk_a_quota_and_a_failing_device_are_not_bugs() {
        let full = ToolError::io(
            "f.txt",
            &io::Error::from_raw_os_error(28),
            "nothing was changed",
        );
        assert_eq!(full.code, Code::DiskFull);
        assert!(
            full.message.contains("the disk is full"),
            "{}",
            full.message
        );
        assert!(full.message.ends_with("nothing was changed"));
        let quota = MachineFault::of(&io::Error::from_raw_os_error(nix::libc::EDQUOT)).unwrap();
        assert_eq!(quota.code, Code::DiskFull);
        let eio = MachineFault::of(&io::Error::from_raw_os_error(nix::libc::EIO)).unwrap();
        assert_eq!(eio.code, Code::IoError);
        let erofs = MachineFault::of(&io::Error::from_raw_os_error(nix::libc::EROFS)).unwrap();
        assert_eq!(erofs.code, Code::IoError);
        let fds = MachineFault::of(&io::Error::from_raw_os_error(nix::libc::EMFILE)).unwrap();
        assert_eq!(fds.code, Code::OutOfResources);
        let other = ToolError::io("f.txt", &io::Error::other("odd"), "nothing was changed");
        assert_eq!(other.code, Code::Internal);
    }

    /// Found by tests/faults: tempfile wraps a failed create in an error of its own,
    /// which hid EIO, so a failing disk was answered `internal`.
    #[test]
    fn an_errno_wrapped_by_tempfile_is_still_seen() {
        let eio = io::Error::from_raw_os_error(nix::libc::EIO);
        let wrapped = io::Error::new(eio.kind(), format!("{eio} at path \"/w/.f.txt.x.tmp\""));
        assert_eq!(MachineFault::of(&wrapped).unwrap().code, Code::IoError);
        let nested = io::Error::other(io::Error::from_raw_os_error(nix::libc::ENOSPC));
        assert_eq!(MachineFault::of(&nested).unwrap().code, Code::DiskFull);
        // The network fence's set-up reports in text (session/network.rs).
        let fence = io::Error::other(format!(
            "cannot open the proxy's port: {}",
            io::Error::from_raw_os_error(nix::libc::EMFILE)
        ));
        assert_eq!(MachineFault::of(&fence).unwrap().code, Code::OutOfResources);
    }
}
