//! Starting one upstream server: the exec policy's and Landlock's say on the programs
//! its command runs (the whole exec chain: the command, its `#!` interpreter, what
//! `/usr/bin/env` starts), the spawn inside the session's fences (the exec boundary, the
//! network fence, a private TMPDIR), and the MCP handshake.

use std::io::{BufRead, Read};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};

use super::{Connection, Listener, STDERR_LINES, Upstream, wait_for};
use crate::policy::Decision;
use crate::session::Env;
use crate::shell::spawn::{self, Spec};

pub(super) enum Start {
    Refused(String),
    Failed(String),
}

impl Upstream {
    /// `why`, led by what the sandbox refused, when the server's stderr says permission
    /// was denied: the command resolved through its symlinks (and its `#!` interpreter),
    /// or a path it printed, and the profile line that would allow it.
    pub(super) fn fenced(&self, env: &Env, why: String) -> String {
        let Some(sandbox) = &env.sandbox else {
            return why;
        };
        let tail = self.stderr_tail().join("\n");
        let lower = tail.to_ascii_lowercase();
        if !(lower.contains("permission denied") || lower.contains("operation not permitted")) {
            return why;
        }
        let path = self
            .cfg
            .env
            .get("PATH")
            .cloned()
            .or_else(|| std::env::var("PATH").ok());
        let chain = exec_chain(&self.cfg.command, path.as_deref(), env.guard.workspace());
        let mut found: Vec<String> = Vec::new();
        let programs: Vec<PathBuf> = chain.iter().map(|(_, real)| real.clone()).collect();
        if let Some(refusal) = sandbox.exec_refusal(&programs, &env.profile.landlock.rox) {
            let links: Vec<String> = chain
                .iter()
                .filter(|(at, real)| at != real)
                .map(|(at, real)| format!("{} is {}", at.display(), real.display()))
                .collect();
            found.push(if links.is_empty() {
                refusal
            } else {
                format!("{refusal} ({})", links.join(", "))
            });
        }
        for line in crate::runner::refused(sandbox, &tail) {
            let line = line.trim_start_matches("whalebox: ");
            let named = |p: &Path| {
                let p = p.display().to_string();
                line.contains(&format!("{p}:")) || line.contains(&format!("{p} "))
            };
            // The command and its interpreter are said above.
            if found.is_empty() || !chain.iter().any(|(at, real)| named(at) || named(real)) {
                found.push(line.to_string());
            }
        }
        if found.is_empty() {
            return why;
        }
        format!("{}. So {why}", found.join("; "))
    }

    pub(super) async fn start(&self, env: &Env) -> Result<Connection, Start> {
        let program = self.cfg.command.clone();
        let mut argv = vec![program.clone()];
        argv.extend(self.cfg.args.iter().cloned());
        // The exec policy decides the command line before anything starts.
        if let Some(policy) = &env.policy {
            let verdict = policy.evaluate_exec(&program, &argv, false);
            match verdict.decision {
                Decision::Allow => {}
                Decision::Ask if env.profile.shell.on_ask == crate::boundary::OnAsk::Allow => {}
                Decision::Ask => {
                    return Err(Start::Refused(format!(
                        "the exec policy asks a person before `{}`, and nobody can answer when a server starts ([shell] on_ask = deny): {}",
                        argv.join(" "),
                        verdict.reason
                    )));
                }
                Decision::Deny => {
                    return Err(Start::Refused(format!(
                        "the exec policy refuses `{}`: {}",
                        argv.join(" "),
                        verdict.reason
                    )));
                }
            }
        }
        let exec_gate = match env.shell_boundary() {
            Ok(crate::session::ShellBoundary::Gated { kernel, .. }) => kernel,
            Ok(_) => None,
            Err(why) => {
                return Err(Start::Refused(format!(
                    "the exec boundary is required, but {why}"
                )));
            }
        };
        let mut vars = spawn::child_env(
            spawn::Mode::Pipe,
            std::path::Path::new("/bin/sh"),
            &self.cfg.pass_env,
            &self
                .cfg
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Vec<_>>(),
            &[],
        );
        if !vars.iter().any(|(k, _)| k == "TMPDIR") {
            vars.push(("TMPDIR".into(), env.private.tmp.display().to_string()));
        }
        // A bare name is looked up in the server's PATH here: the supervisor (under the
        // exec gate) runs the command as given, without a search.
        let mut exec_argv = argv.clone();
        if !program.contains('/') {
            let path = vars
                .iter()
                .find(|(k, _)| k == "PATH")
                .map(|(_, v)| v.as_str());
            if let Some(found) = find_program(&program, path, env.guard.workspace()) {
                exec_argv[0] = found.display().to_string();
            }
        }
        // Its connections go through the session's egress proxy like a command's.
        let network = env
            .task_network(&argv.join(" "))
            .map_err(|e| Start::Refused(e.message.clone()))?;
        if let Some((_, net)) = &network {
            vars.retain(|(k, _)| !net.env.iter().any(|(n, _)| n == k));
            vars.extend(net.env.iter().cloned());
        }
        let sandbox = env
            .task_sandbox(network.as_ref().map(|(_, n)| n))
            .map_err(|e| Start::Failed(e.message.clone()))?;
        let spec = Spec {
            mode: spawn::Mode::Pipe,
            argv: exec_argv.iter().map(Into::into).collect(),
            cwd: env.guard.workspace().to_path_buf(),
            env: vars,
            rows: 24,
            cols: 80,
            sandbox,
            exec_gate,
            join: env.task_join(),
            socket_filter: network.as_ref().is_some_and(|(_, n)| n.landlock_fence),
            user_namespaces: env.profile.shell.user_namespaces.allowed(),
            // A server lives as long as the session, not a task: the server's own.
            limits: None,
        };
        let started = spawn::start_stdio(spec);
        if let Some((fence, net)) = &network {
            let label = format!("mcp:{}", self.name);
            fence.started(
                net.token(),
                started.as_ref().ok().map(|s| (label.as_str(), s.pid)),
            );
        }
        let started = started
            .map_err(|e| Start::Failed(format!("cannot start `{}`: {e}", argv.join(" "))))?;
        let pid = started.pid;
        // This start's stderr only: a failure is explained by what it printed.
        if let Ok(mut t) = self.stderr.lock() {
            t.clear();
        }
        let tail = Arc::clone(&self.stderr);
        let stderr = started.stderr;
        let stderr_done = Arc::new(AtomicBool::new(false));
        let done = Arc::clone(&stderr_done);
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Ok(mut t) = tail.lock() {
                    if t.len() == STDERR_LINES {
                        t.pop_front();
                    }
                    t.push_back(line.chars().take(500).collect());
                }
            }
            done.store(true, Ordering::SeqCst);
        });
        match self.handshake(started.stdin, started.stdout).await {
            Ok(client) => Ok(Connection {
                client,
                pid,
                started: Instant::now(),
                stderr_done,
            }),
            Err(why) => {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
                // Its last words, once the whole group is gone.
                wait_for(&stderr_done, Duration::from_secs(1)).await;
                Err(Start::Failed(self.fenced(env, why)))
            }
        }
    }

    /// MCP's initialize and the first tools/list, over the server's stdin and stdout,
    /// each within `startup_timeout_ms`.
    async fn handshake(
        &self,
        stdin: std::process::ChildStdin,
        stdout: std::process::ChildStdout,
    ) -> Result<RunningService<RoleClient, Listener>, String> {
        let rx = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(stdout))
            .map_err(|e| e.to_string())?;
        let tx = tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(stdin))
            .map_err(|e| e.to_string())?;
        let timeout = Duration::from_millis(self.cfg.startup_timeout_ms);
        let listener = Listener {
            stale: Arc::clone(&self.stale),
            progress: Arc::clone(&self.progress),
        };
        let client = match tokio::time::timeout(timeout, listener.serve((rx, tx))).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(format!("it did not complete MCP's initialize: {e}")),
            Err(_) => {
                return Err(format!(
                    "it did not answer initialize within {} ms (startup_timeout_ms)",
                    self.cfg.startup_timeout_ms
                ));
            }
        };
        let listed = match tokio::time::timeout(timeout, client.peer().list_all_tools()).await {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => return Err(format!("its tools/list failed: {e}")),
            Err(_) => return Err("its tools/list did not answer in time".into()),
        };
        self.set_tools(listed);
        Ok(client)
    }
}

/// The files the kernel executes to start `command`, each with the path it was reached
/// by and that path resolved through its symlinks: the command (found in `path` when it
/// is a bare name), its `#!` interpreter, and the program a `#!/usr/bin/env` line runs.
fn exec_chain(command: &str, path: Option<&str>, cwd: &Path) -> Vec<(PathBuf, PathBuf)> {
    let find = |name: &str| find_program(name, path, cwd);
    let mut out: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut todo: Vec<PathBuf> = find(command).into_iter().collect();
    while let Some(at) = todo.pop() {
        let Ok(real) = at.canonicalize() else {
            continue;
        };
        if out.len() == 4 || out.iter().any(|(_, r)| *r == real) {
            continue;
        }
        if let Some((interpreter, arg)) = shebang(&real) {
            // Last in, first out: the interpreter, then what `env` runs.
            if interpreter.file_name().is_some_and(|n| n == "env")
                && let Some(program) = arg.as_deref().and_then(find)
            {
                todo.push(program);
            }
            todo.push(interpreter);
        }
        out.push((at, real));
    }
    out
}

/// `name` as an exec would find it: relative to `cwd` when it has a `/`, else the first
/// executable file of that name in `path`.
fn find_program(name: &str, path: Option<&str>, cwd: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if name.contains('/') {
        return Some(cwd.join(name));
    }
    std::env::split_paths(path?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// A script's `#!` interpreter and its first argument that is not an option.
fn shebang(file: &Path) -> Option<(PathBuf, Option<String>)> {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(file).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let mut words = std::str::from_utf8(line).ok()?.split_whitespace();
    let interpreter = PathBuf::from(words.next()?);
    let arg = words.find(|w| !w.starts_with('-')).map(str::to_string);
    Some((interpreter, arg))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    #[test]
    fn the_exec_chain_follows_symlinks_path_and_shebangs() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let (bin, lib) = (root.join("bin"), root.join("lib"));
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&lib).unwrap();
        let exe = |p: &Path, text: &str| {
            std::fs::write(p, text).unwrap();
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        exe(&bin.join("node"), "\x7fELF");
        // An `env` of its own: a Nix build sandbox has no /usr/bin/env.
        exe(&bin.join("env"), "\x7fELF");
        let env = bin.join("env");
        exe(
            &lib.join("cli.js"),
            &format!("#!{} -S node --flag\nrest\n", env.display()),
        );
        symlink(lib.join("cli.js"), bin.join("npx")).unwrap();
        let path = bin.display().to_string();
        let chain = exec_chain("npx", Some(&path), &root);
        assert_eq!(
            chain,
            vec![
                (bin.join("npx"), lib.join("cli.js")),
                (env.clone(), env),
                (bin.join("node"), bin.join("node")),
            ]
        );
        // A path is taken as given (relative to the workspace); a missing one is nothing.
        assert_eq!(
            exec_chain("bin/node", None, &root),
            vec![(root.join("bin/node"), bin.join("node"))]
        );
        assert!(exec_chain("missing", Some(&path), &root).is_empty());
        assert_eq!(
            find_program("node", Some(&path), &root),
            Some(bin.join("node"))
        );
    }
}
