//! Whether this machine lets a session's tasks have a network (or PID) namespace of their
//! own (`whalebox doctor`'s question; the sessions themselves learn it from their namespace
//! holder, see `guard::spaces`): a child process tries, and says.

/// How the namespace was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Made {
    /// `CLONE_NEWNET` alone (the process may administer namespaces: root).
    NetOnly,
    /// A user namespace mapping the caller's own uid and gid, and a network namespace
    /// in it (unprivileged).
    WithUser,
}

/// Whether a network namespace (with `lo`) can be made here: a child process tries it,
/// and says. Err: why not.
pub fn probe() -> Result<Made, String> {
    let (said, status) = ask_probe(None)?;
    match said.as_str() {
        "net" => Ok(Made::NetOnly),
        "user" => Ok(Made::WithUser),
        _ if said.is_empty() => Err(format!("the probe ended without an answer ({status})")),
        why => Err(why.to_string()),
    }
}

/// Whether a session's tasks can have a PID namespace with a procfs of its own here (as
/// the session holders make theirs): a child process tries it, and says. Err: why not.
pub fn probe_processes() -> Result<(), String> {
    let (said, status) = ask_probe(Some(PROCESSES))?;
    match said.as_str() {
        "ok" => Ok(()),
        _ if said.is_empty() => Err(format!("the probe ended without an answer ({status})")),
        why => Err(why.to_string()),
    }
}

/// The probe's argument for [`probe_processes`].
const PROCESSES: &str = "pid";

fn ask_probe(what: Option<&str>) -> Result<(String, std::process::ExitStatus), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find whalebox itself: {e}"))?;
    let out = std::process::Command::new(exe)
        .arg(PROBE_SUBCOMMAND)
        .args(what)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run the probe: {e}"))?;
    Ok((
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        out.status,
    ))
}

/// The hidden subcommand [`probe`] runs.
pub const PROBE_SUBCOMMAND: &str = "__netns-probe";

/// Body of the probe subcommand: try, print the answer, exit.
pub fn probe_main(args: Vec<std::ffi::OsString>) -> ! {
    let answer = if args.first().is_some_and(|a| a == PROCESSES) {
        match crate::guard::spaces::probe_pid() {
            Ok(()) => "ok".to_string(),
            Err(e) => e,
        }
    } else {
        match crate::guard::spaces::probe_network() {
            Ok(false) => "net".to_string(),
            Ok(true) => "user".to_string(),
            Err(e) => e,
        }
    };
    println!("{answer}");
    std::process::exit(0)
}
