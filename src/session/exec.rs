//! The exec boundary of a session: the gated zsh, the kernel exec gate and the decision
//! server, each started once on first use, and the shell a command gets from them.

use std::path::PathBuf;
use std::sync::Arc;

use crate::boundary::kernel::identity::Known;

use crate::boundary::kernel::Method;
use crate::boundary::{DecisionServer, GatedShell};
use crate::profile::{ExecBoundary, ExecGate};
pub use crate::shell::supervisor::KernelGate;

use super::Env;

/// The shell a command gets with respect to the exec boundary.
#[derive(Debug, Clone)]
pub enum ShellBoundary {
    /// Execs are decided by the policy.
    Gated {
        /// The gated zsh (its in-process gate is the fast path for its own execs), or
        /// None: a plain shell, whose execs the kernel gate decides.
        zsh: Option<PathBuf>,
        /// The variables that connect the gated zsh to this session's server.
        vars: Vec<(String, String)>,
        /// The kernel gate, which decides every exec of every process; None: only the
        /// gated zsh's own execs are decided.
        kernel: Option<KernelGate>,
        /// What results say about it (`data.exec_boundary`).
        status: serde_json::Value,
        /// Said in results when part of the boundary is missing (best-effort).
        note: Option<String>,
    },
    /// The plain shell; `best_effort`: the boundary was wanted, so say it is missing.
    Ungated { why: String, best_effort: bool },
}

/// The exec boundary of one session.
pub struct Gate {
    /// The gated zsh, or why there is none.
    pub shell: Result<GatedShell, String>,
    pub server: DecisionServer,
    /// The kernel gate's method here, or why it does not work.
    pub kernel: Result<Method, String>,
    /// The programs the policy does not simply allow, by content, for the kernel gate.
    pub known: Arc<Vec<Known>>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("shell", &self.shell)
            .field("kernel", &self.kernel)
            .finish()
    }
}

impl Env {
    /// How a command's shell relates to the exec boundary, per `[shell] exec_boundary`;
    /// `Err` when the boundary is required and cannot be had (the reason).
    pub fn shell_boundary(&self) -> Result<ShellBoundary, String> {
        let mode = self.profile.shell.exec_boundary;
        if mode == ExecBoundary::Off {
            return Ok(ShellBoundary::Ungated {
                why: "exec_boundary = off".into(),
                best_effort: false,
            });
        }
        let required = mode == ExecBoundary::Required;
        let gate = match self.gate() {
            Ok(g) => g,
            Err(why) if required => return Err(why),
            Err(why) => {
                return Ok(ShellBoundary::Ungated {
                    why,
                    best_effort: true,
                });
            }
        };
        let zsh = gate.shell.as_ref().ok().map(|g| g.zsh.clone());
        let vars = match &gate.shell {
            Ok(g) => vec![
                ("WHALEBOX_GATE".into(), g.gate.display().to_string()),
                (
                    "WHALEBOX_GATE_SOCKET".into(),
                    gate.server.socket().display().to_string(),
                ),
            ],
            Err(_) => Vec::new(),
        };
        match &gate.kernel {
            Ok(method) => Ok(ShellBoundary::Gated {
                status: serde_json::json!({
                    "gated": true,
                    "kernel": true,
                    "method": method.name(),
                    "zsh": zsh,
                    "covers": "every exec of every process of the task",
                }),
                zsh,
                vars,
                kernel: Some(KernelGate {
                    socket: gate.server.socket().to_path_buf(),
                    method: Some(*method),
                    debuggers: self.profile.shell.debuggers,
                    known: gate.known.clone(),
                }),
                note: None,
            }),
            Err(why) if required => Err(crate::guard::runtime::explain(&format!(
                "the kernel exec gate cannot run here: {why}"
            ))),
            Err(why) => match zsh {
                Some(z) => {
                    let missing = format!(
                        "only the gated zsh's own execs are decided; programs that other \
                         programs start (sh -c, python, make, git hooks, npm scripts) are not, \
                         because the kernel exec gate cannot run here: {why}"
                    );
                    Ok(ShellBoundary::Gated {
                        status: serde_json::json!({
                            "gated": true,
                            "kernel": false,
                            "zsh": z,
                            "not_covered": missing,
                        }),
                        zsh: Some(z),
                        vars,
                        kernel: None,
                        note: Some(format!("exec_boundary = best-effort: {missing}")),
                    })
                }
                None => Ok(ShellBoundary::Ungated {
                    why: format!(
                        "the kernel exec gate cannot run here ({why}), and {}",
                        gate.shell.as_ref().err().cloned().unwrap_or_default()
                    ),
                    best_effort: true,
                }),
            },
        }
    }

    /// The kernel exec gate's method here, or why it cannot be installed, found out once
    /// by starting it for real (a supervisor gating `whalebox --version`).
    pub fn kernel_gate(&self) -> Result<Method, String> {
        self.kernel_gate
            .get_or_init(|| {
                if let Some(why) = crate::boundary::kernel::unsupported() {
                    return Err(why);
                }
                let method = match self.profile.shell.exec_gate {
                    ExecGate::Auto => crate::boundary::kernel::method_here(),
                    ExecGate::Notify => Method::Notify,
                    ExecGate::Ptrace => Method::Ptrace,
                };
                let exe = std::env::current_exe().map_err(|e| e.to_string())?;
                let gate = KernelGate {
                    socket: "/nonexistent/whalebox-probe.sock".into(),
                    method: Some(method),
                    debuggers: false,
                    known: Arc::default(),
                };
                let out = std::process::Command::new(&exe)
                    .args([
                        crate::shell::supervisor::SUBCOMMAND,
                        &std::process::id().to_string(),
                    ])
                    .args(gate.args())
                    .arg("--")
                    .arg(&exe)
                    .arg("--version")
                    .env("TMPDIR", &self.private.tmp)
                    .stdin(std::process::Stdio::null())
                    .output()
                    .map_err(|e| format!("cannot start the probe: {e}"))?;
                if out.status.success() {
                    return Ok(method);
                }
                let said = String::from_utf8_lossy(&out.stderr);
                let said = said
                    .trim()
                    .trim_start_matches("whalebox: the exec boundary could not be installed: ")
                    .trim_end_matches("; not running the command");
                Err(if said.is_empty() {
                    format!("the probe ended with {}", out.status)
                } else {
                    said.to_string()
                })
            })
            .clone()
    }

    /// The gated zsh, probed once.
    pub fn gated_shell(&self) -> Result<&GatedShell, String> {
        self.gated_shell
            .get_or_init(|| crate::boundary::find_gated_shell(self.profile.shell.zsh.as_deref()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The exec boundary if a shell call has started it (never starts it).
    pub fn started_gate(&self) -> Option<Arc<Gate>> {
        self.gate.get().and_then(|g| g.as_ref().ok().cloned())
    }

    /// The exec boundary: the gated zsh and a decision server for this session, or why
    /// there is none.
    pub fn gate(&self) -> Result<Arc<Gate>, String> {
        self.gate
            .get_or_init(|| {
                let policy = self
                    .policy
                    .clone()
                    .ok_or("the exec boundary is off in this profile")?;
                let shell = self.gated_shell().cloned();
                let kernel = self.kernel_gate();
                match (&shell, &kernel) {
                    // A zsh the profile names must be the gated one.
                    (Err(why), _) if self.profile.shell.zsh.is_some() => return Err(why.clone()),
                    (Err(no_zsh), Err(no_kernel)) => {
                        return Err(format!(
                            "{no_zsh}; and the kernel exec gate cannot run here: {no_kernel}"
                        ));
                    }
                    _ => {}
                }
                let tasks = self.tasks.clone();
                let server = DecisionServer::start(
                    policy.clone(),
                    crate::boundary::Settings {
                        on_ask: self.profile.shell.on_ask,
                        audit_log: self.profile.shell.audit_log.clone(),
                        approvals_file: self.profile.shell.approvals_file.clone(),
                        runtime_dir: Some(self.private.run.clone()),
                        caller: self.caller.clone(),
                    },
                    Arc::new(move |pid| tasks.task_of_pid(pid)),
                    self.approver.clone(),
                )
                .map_err(|e| format!("cannot start the decision server: {e}"))?;
                let known = match &kernel {
                    Ok(_) => Arc::new(known_programs(&policy)),
                    Err(_) => Arc::default(),
                };
                Ok(Arc::new(Gate {
                    shell,
                    server,
                    kernel,
                    known,
                }))
            })
            .clone()
    }
}

/// The programs a renamed copy of which must still be decided as them: those the
/// policy's `deny` and `ask` rules name, as found on PATH and in the system's bin
/// directories (hashed once per session; a few milliseconds for a dozen programs).
fn known_programs(policy: &crate::policy::Policy) -> Vec<Known> {
    let names: std::collections::BTreeSet<&str> = policy
        .rules
        .iter()
        .filter(|r| r.decision != crate::policy::Decision::Allow)
        .filter_map(|r| r.pattern.first())
        .flatten()
        .map(String::as_str)
        .collect();
    let path = std::env::var("PATH").ok();
    crate::boundary::kernel::identity::known(names, path.as_deref())
}
