//! The secrets of `[network.credentials.*]`, taken out of whalebox's environment once at
//! start-up: kept here, in memory only, and gone from every place a task could read
//! them. `remove_var` alone is not enough: `/proc/PID/environ` shows the block the
//! kernel put on the stack at exec, so the value's bytes there are overwritten too; and
//! the process is made non-dumpable, so its memory, `environ` and descriptors need
//! CAP_SYS_PTRACE (which no task holds, see `guard::machine`) to be read.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

fn store() -> &'static Mutex<BTreeMap<String, String>> {
    static STORE: OnceLock<Mutex<BTreeMap<String, String>>> = OnceLock::new();
    STORE.get_or_init(|| Mutex::new(BTreeMap::new()))
}

/// Make this process non-dumpable and take each named variable out of its environment
/// into the store. Call on the main thread before any other thread starts (it edits
/// the environment).
pub fn take<'a>(names: impl IntoIterator<Item = &'a str>) {
    let _ = nix::sys::prctl::set_dumpable(false);
    let mut kept = store().lock().unwrap_or_else(|e| e.into_inner());
    for name in names {
        let Ok(value) = std::env::var(name) else {
            continue;
        };
        scrub(name);
        // SAFETY: single-threaded at start-up (see above).
        unsafe { std::env::remove_var(name) };
        kept.insert(name.to_string(), value);
    }
}

/// A secret taken at start-up (or still in the environment, for a caller that did not
/// take it: tests).
pub fn get(name: &str) -> Option<String> {
    let kept = store().lock().unwrap_or_else(|e| e.into_inner());
    kept.get(name).cloned().or_else(|| std::env::var(name).ok())
}

/// Overwrite the value of `NAME=value` in place, wherever libc's `environ` points at it
/// (the exec-time block on the stack, which `/proc/PID/environ` reads).
fn scrub(name: &str) {
    unsafe extern "C" {
        static mut environ: *mut *mut nix::libc::c_char;
    }
    let prefix = format!("{name}=");
    // SAFETY: environ is a NULL-terminated array of NUL-terminated strings; nothing else
    // touches it while we are single-threaded; the bytes overwritten are the value's.
    unsafe {
        let mut p = environ;
        while !p.is_null() && !(*p).is_null() {
            let entry = std::ffi::CStr::from_ptr(*p);
            if entry.to_bytes().starts_with(prefix.as_bytes()) {
                let len = entry.to_bytes().len();
                let value = (*p).add(prefix.len()) as *mut u8;
                std::ptr::write_bytes(value, b'x', len - prefix.len());
            }
            p = p.add(1);
        }
    }
}
