//! Starting a task: the child environment, the shell's argv, and the spawn itself
//! (pipes or a PTY), always through the supervisor (see `supervisor.rs`).
//!
//! Every spawn happens on one long-lived thread: Linux delivers the parent-death signal
//! when the *thread* that forked exits, and the runtime's blocking threads come and go.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

use portable_pty::{CommandBuilder, PtySize};
use serde::Serialize;

use super::supervisor;
use crate::guard::limits::TaskSetup;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Pipe,
    Pty,
}

/// What to start.
#[derive(Debug, Clone)]
pub struct Spec {
    pub mode: Mode,
    pub argv: Vec<OsString>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub rows: u16,
    pub cols: u16,
    /// The task's Landlock layer (a serialized `guard::landlock::Sandbox`), applied by
    /// the supervisor before it starts the shell.
    pub sandbox: Option<String>,
    /// The kernel exec gate, when the task runs under it.
    pub exec_gate: Option<supervisor::KernelGate>,
    /// The session's namespaces to join: the supervisor's `--join` value.
    pub join: Option<String>,
    /// Whether the supervisor installs the socket filter (the network fence's Landlock
    /// fallback).
    pub socket_filter: bool,
    /// The task's resource limits (None: the server's own, as for an upstream server).
    pub limits: Option<TaskLimits>,
    /// The task may make user namespaces (`[shell] user_namespaces = "allow"`).
    pub user_namespaces: bool,
}

/// The resource limits of a task, and whether it gets a cgroup where one can be made.
#[derive(Debug, Clone, Copy)]
pub struct TaskLimits {
    pub limits: crate::guard::limits::Limits,
    pub cgroup: bool,
}

/// How to talk to a started task.
pub enum Input {
    Pipe(std::io::PipeWriter),
    Pty {
        writer: Box<dyn Write + Send>,
        // Kept so the terminal stays open (the master, and the child handle, unused:
        // the task reaps the supervisor with waitpid).
        _terminal: Box<dyn std::any::Any + Send>,
    },
}

pub struct Started {
    /// The supervisor's pid, which is also the task's process group.
    pub pid: i32,
    pub output: Box<dyn Read + Send>,
    pub input: Input,
}

type Job = Box<dyn FnOnce() + Send>;

fn spawner() -> &'static Mutex<mpsc::Sender<Job>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("whalebox-spawner".into())
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .expect("start the spawner thread");
        Mutex::new(tx)
    })
}

/// Start `spec` under a supervisor, on the spawner thread, its first process set up
/// with `setup` (its cgroup and rlimits).
pub fn start(spec: Spec, setup: Option<TaskSetup>) -> std::io::Result<Started> {
    on_spawner(move || start_here(spec, setup.as_ref()))
}

/// Run `spawn` on the spawner thread and wait for what it returns.
fn on_spawner<T: Send + 'static>(
    spawn: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    let (tx, rx) = mpsc::channel();
    let job: Job = Box::new(move || {
        let _ = tx.send(spawn());
    });
    spawner()
        .lock()
        .map_err(|_| std::io::Error::other("the spawner lock is poisoned"))?
        .send(job)
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?;
    rx.recv()
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?
}

fn supervisor_argv(
    spec: &Spec,
    setup: Option<&TaskSetup>,
) -> std::io::Result<(PathBuf, Vec<OsString>)> {
    let exe = std::env::current_exe()?;
    let mut args: Vec<OsString> = vec![
        supervisor::SUBCOMMAND.into(),
        std::process::id().to_string().into(),
    ];
    if let Some(sandbox) = &spec.sandbox {
        args.push(supervisor::SANDBOX_FLAG.into());
        args.push(sandbox.into());
    }
    if let Some(gate) = &spec.exec_gate {
        args.extend(gate.args());
    }
    if let Some(join) = &spec.join {
        args.push(supervisor::JOIN_FLAG.into());
        args.push(join.into());
    }
    if spec.socket_filter {
        args.push(supervisor::SOCKET_FILTER_FLAG.into());
        args.push("1".into());
    }
    if spec.user_namespaces {
        args.push(supervisor::USER_NAMESPACES_FLAG.into());
        args.push("1".into());
    }
    if let Some(setup) = setup {
        args.push(supervisor::LIMITS_FLAG.into());
        args.push(serde_json::to_string(setup)?.into());
    }
    args.push("--".into());
    args.extend(spec.argv.iter().cloned());
    Ok((exe, args))
}

fn start_here(spec: Spec, setup: Option<&TaskSetup>) -> std::io::Result<Started> {
    let (exe, args) = supervisor_argv(&spec, setup)?;
    match spec.mode {
        Mode::Pipe => {
            let (reader, writer) = std::io::pipe()?;
            let (stdin_r, stdin_w) = std::io::pipe()?;
            let fds = [stdin_r.as_fd(), writer.as_fd(), writer.as_fd()];
            if let Some(pid) = super::zygote::spawn(&args, &spec.env, &spec.cwd, fds) {
                return Ok(Started {
                    pid,
                    output: Box::new(reader),
                    input: Input::Pipe(stdin_w),
                });
            }
            drop((stdin_r, stdin_w));
            let mut cmd = std::process::Command::new(exe);
            cmd.args(args)
                .env_clear()
                .envs(spec.env.iter().map(|(k, v)| (k, v)))
                .current_dir(&spec.cwd)
                .process_group(0)
                .stdin(std::process::Stdio::piped())
                .stdout(writer.try_clone()?)
                .stderr(writer);
            let mut child = cmd.spawn()?;
            // Our copies of the write end must close, or the reader never sees EOF.
            drop(cmd);
            let stdin = child.stdin.take().expect("stdin was piped");
            Ok(Started {
                pid: child.id() as i32,
                output: Box::new(reader),
                input: Input::Pipe(std::os::fd::OwnedFd::from(stdin).into()),
            })
        }
        Mode::Pty => {
            if let Some(join) = &spec.join {
                match super::terminal::open_in_session(join, spec.rows, spec.cols) {
                    Ok(terminal) => {
                        let child = super::terminal::spawn_on(
                            &terminal, &exe, &args, &spec.env, &spec.cwd,
                        )?;
                        let master = terminal.master;
                        return Ok(Started {
                            pid: child.id() as i32,
                            output: Box::new(std::fs::File::from(master.try_clone()?)),
                            input: Input::Pty {
                                writer: Box::new(std::fs::File::from(master)),
                                _terminal: Box::new(child),
                            },
                        });
                    }
                    // The task still runs, on a terminal of the machine's (which has no
                    // name inside the session): said in the server's log.
                    Err(e) => tracing::warn!("{e}; the task's terminal is the machine's"),
                }
            }
            let pair = portable_pty::native_pty_system()
                .openpty(PtySize {
                    rows: spec.rows,
                    cols: spec.cols,
                    pixel_width: 0,
                    pixel_height: 0,
                })
                .map_err(|e| std::io::Error::other(format!("cannot open a PTY: {e}")))?;
            let mut cmd = CommandBuilder::new(exe);
            cmd.args(args);
            cmd.env_clear();
            for (k, v) in &spec.env {
                cmd.env(k, v);
            }
            cmd.cwd(&spec.cwd);
            let child = pair
                .slave
                .spawn_command(cmd)
                .map_err(|e| std::io::Error::other(format!("cannot start in a PTY: {e}")))?;
            drop(pair.slave);
            let pid = child
                .process_id()
                .ok_or_else(|| std::io::Error::other("the PTY child has no pid"))?
                as i32;
            let output = pair
                .master
                .try_clone_reader()
                .map_err(|e| std::io::Error::other(format!("PTY reader: {e}")))?;
            let writer = pair
                .master
                .take_writer()
                .map_err(|e| std::io::Error::other(format!("PTY writer: {e}")))?;
            Ok(Started {
                pid,
                output,
                input: Input::Pty {
                    writer,
                    _terminal: Box::new((pair.master, child)),
                },
            })
        }
    }
}

/// A started process with its three standard streams apart (an upstream MCP server:
/// stdout carries the protocol, stderr its log).
pub struct StartedStdio {
    /// The supervisor's pid, which is also the process group.
    pub pid: i32,
    pub stdin: std::process::ChildStdin,
    pub stdout: std::process::ChildStdout,
    pub stderr: std::process::ChildStderr,
}

/// Start `spec` (its `mode` is ignored) under a supervisor with separate pipes, on the
/// spawner thread.
pub fn start_stdio(spec: Spec) -> std::io::Result<StartedStdio> {
    on_spawner(move || {
        let (exe, args) = supervisor_argv(&spec, None)?;
        let mut child = std::process::Command::new(exe)
            .args(args)
            .env_clear()
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&spec.cwd)
            .process_group(0)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(stdin), Some(stdout), Some(stderr)) => Ok(StartedStdio {
                pid: child.id() as i32,
                stdin,
                stdout,
                stderr,
            }),
            _ => Err(std::io::Error::other("the child's pipes were not made")),
        }
    })
}

/// Variables passed through from the server's environment when set.
const INHERITED: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    // Not TMPDIR: commands get the server's private one (see tools::shell).
    "XDG_RUNTIME_DIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// The child's environment: a short inherited list and `pass_env`, then the hygiene
/// settings, then the profile's `[shell] env`, then the call's `env`.
pub fn child_env(
    mode: Mode,
    shell: &Path,
    pass_env: &[String],
    profile_env: &[(String, String)],
    call_env: &[(String, String)],
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = Vec::new();
    let mut set = |k: &str, v: String| {
        env.retain(|(name, _)| name != k);
        env.push((k.to_string(), v));
    };
    for name in INHERITED
        .iter()
        .copied()
        .chain(pass_env.iter().map(String::as_str))
    {
        if let Ok(value) = std::env::var(name) {
            set(name, value);
        }
    }
    if std::env::var_os("PATH").is_none() {
        set("PATH", FALLBACK_PATH.into());
    }
    set("SHELL", shell.display().to_string());
    set("PAGER", "cat".into());
    set("GIT_PAGER", "cat".into());
    set("NO_COLOR", "1".into());
    match mode {
        Mode::Pipe => {
            set("TERM", "dumb".into());
            // Without a terminal git would wait forever for credentials.
            set("GIT_TERMINAL_PROMPT", "0".into());
        }
        Mode::Pty => set("TERM", "xterm-256color".into()),
    }
    for (k, v) in profile_env.iter().chain(call_env) {
        set(k, v.clone());
    }
    env
}

/// The search path when whalebox itself was started without PATH: the FHS directories,
/// then NixOS's system profile (NixOS has no programs under /usr/bin or /bin but sh).
const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin:/run/current-system/sw/bin";

/// The shell to use: the profile's, else zsh, else bash, else sh, from PATH.
pub fn find_shell(configured: Option<&str>) -> Option<PathBuf> {
    let lookup = |name: &str| -> Option<PathBuf> {
        if name.contains('/') {
            let p = PathBuf::from(name);
            return p.is_file().then_some(p);
        }
        let path = std::env::var_os("PATH").unwrap_or_else(|| FALLBACK_PATH.into());
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    };
    match configured {
        Some(name) => lookup(name),
        None => ["zsh", "bash", "sh"].iter().find_map(|n| lookup(n)),
    }
}

/// argv for running `command` with `shell`, hermetic unless `rc_files`.
pub fn shell_argv(shell: &Path, command: &str, rc_files: bool) -> Vec<OsString> {
    let name = shell
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut argv: Vec<OsString> = vec![shell.into()];
    if !rc_files {
        match name.as_str() {
            "zsh" => argv.push("-f".into()),
            "bash" => {
                argv.push("--noprofile".into());
                argv.push("--norc".into());
            }
            _ => {}
        }
    }
    argv.push("-c".into());
    argv.push(command.into());
    argv
}
