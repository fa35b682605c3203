//! The kernel exec gate: every `execve` and `execveat` made by any process of a task,
//! whatever program makes it, is put to the decision server, not only the execs of the
//! gated zsh. A seccomp filter hands exactly those two calls to the task's supervisor
//! ([`filter`]), which decides them and then checks, at the exec event, that the image
//! the kernel loaded is the one it allowed, so a thread that rewrites the path after it
//! was checked gains nothing. Two methods:
//!
//! - [`Method::Notify`] (the default): seccomp user notification; no process is traced
//!   but for the moment of its exec ([`notify`]).
//! - [`Method::Ptrace`] (the fallback where user notification is missing, or when the
//!   profile asks for it): every process of the task is traced from its fork ([`tracer`]).
//!
//! Consequences a user can see: a denied exec fails with EACCES in the calling program,
//! plus a `whalebox: denied …` line on its stderr; an image that only turned out to be
//! denied once loaded is killed, and the task's result says so. The filter refuses
//! `ptrace()` inside a task, so `strace`, `gdb` and `ptrace(PTRACE_TRACEME)` fail with
//! EPERM there.

mod decide;
pub mod filter;
pub mod identity;
mod link;
pub mod notify;
mod start;
pub mod tracee;
pub mod tracer;

use std::ffi::{OsStr, OsString};

pub use filter::Method;

/// Connect to the decision server before the gate is installed, where the gate will not
/// be able to check who answers (see `link::connect_ahead`): for [`tracer::Options::ahead`].
pub fn connect_ahead(
    socket: &std::path::Path,
    expect: i32,
) -> Result<std::os::unix::net::UnixStream, String> {
    link::connect_ahead(socket, expect, &decide::hello())
}
use tracer::{End, Options};

/// Why the kernel gate cannot work on this build (None: it can be tried; whether the
/// kernel allows it is found out by starting it, see whalebox's `session::Env::kernel_gate`).
pub fn unsupported() -> Option<String> {
    filter::target_arch().err()
}

/// The method that runs here when none is asked for: notification where the kernel has
/// it, else ptrace (whether ptrace is allowed is found out by starting the gate).
pub fn method_here() -> Method {
    match filter::notify_available() {
        Ok(()) => Method::Notify,
        Err(_) => Method::Ptrace,
    }
}

/// Start `program args` as the root of a task under the gate and serve its execs until
/// it ends. `method` None: notification, falling back to ptrace where the kernel has no
/// user notification. Err: the gate could not be installed (nothing ran).
pub fn run(
    program: &OsStr,
    args: &[OsString],
    method: Option<Method>,
    options: &Options,
    hung_up: &dyn Fn() -> bool,
) -> Result<End, String> {
    match method {
        Some(Method::Ptrace) => tracer::run(program, args, options, hung_up),
        Some(Method::Notify) => match notify::run(program, args, options, hung_up) {
            Ok(end) => Ok(end),
            Err(notify::Refusal::NoNotify(why) | notify::Refusal::Failed(why)) => Err(why),
        },
        None => match notify::run(program, args, options, hung_up) {
            Ok(end) => Ok(end),
            Err(notify::Refusal::NoNotify(_)) => tracer::run(program, args, options, hung_up),
            Err(notify::Refusal::Failed(why)) => Err(why),
        },
    }
}

/// Whether an exec is made by a program other than the task's shell (the policy's
/// `default_nested` applies to it): the kernel gate saw it, and a program below the
/// task's first one makes it. zsh's own gate only ever asks about zsh's commands.
pub fn nested(via: Option<&str>, chain_len: usize) -> bool {
    via == Some("kernel") && chain_len > 1
}
