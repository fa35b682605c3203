//! The tool catalog: which groups exist, which tools each group registers, and the
//! shared [`Env`] (profile, path guard, skills) the tools of one session work in.
//!
//! Groups: `files` (read_file, list_dir, load_skill), `search` (grep, search_files),
//! `edit` (edit, multi_edit, write), `shell` (shell_run, shell_wait, write_stdin,
//! shell_cancel), `plan` (update_plan), `todo` (todo_*), `input` (request_user_input),
//! `checkpoints` (checkpoint_*; its hook checkpoints every call that may change the
//! workspace), `mcp` and `web`.
//! Each group lives in its own module; adding one is a module plus a row in [`GROUPS`].

pub mod board;
mod checkpoints;
mod common;
mod edit;
mod files;
mod input;
mod mcp;
mod plan;
mod search;
mod shell;
mod skills;
mod todo;
mod walk;
pub(crate) mod web;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::boundary::{ApproverSlot, DecisionServer, GatedShell};
use crate::core::{Code, ToolError};
use crate::core::{Registry, RegistryError};
use crate::guard::PathGuard;
use crate::guard::landlock::{Extras, Layer, Sandbox, Status};
use crate::mutation::{Ledger, Stripes};
use crate::net::fence::{NetworkFence, TaskNet};
use crate::policy::Policy;
use crate::profile::ExecBoundary;
use crate::profile::Profile;
use crate::shell::TaskTable;
use crate::shell::task::Limits;

pub use plan::render as plan_text;
pub use skills::{Skill, SkillIndex};
pub use todo::render as todos_text;

/// Everything the tools of one session share, built once from the profile.
#[derive(Debug)]
pub struct Env {
    pub profile: Profile,
    /// The profile's output and wait limits, as fitted to the client once it is known.
    pub limits: Arc<crate::core::SessionLimits>,
    pub guard: PathGuard,
    pub skills: SkillIndex,
    /// What this session last read or wrote of each file.
    pub ledger: Ledger,
    /// Serializes read-modify-write calls on the same file.
    pub stripes: Stripes,
    /// The shell tasks this session started.
    pub tasks: Arc<TaskTable>,
    /// The plan and the todo list this session keeps for the agent.
    pub board: board::Board,
    pub session: Session,
    /// The exec policy (loaded at start when the shell group is on and the boundary
    /// is not off; a policy that does not load stops startup).
    pub policy: Option<Arc<Policy>>,
    /// The gated zsh, found on first use (at start-up when Landlock needs its path).
    gated_shell: std::sync::OnceLock<Result<GatedShell, String>>,
    /// The gated zsh and this session's decision server, started on first use.
    gate: std::sync::OnceLock<Result<Arc<Gate>, String>>,
    kernel_gate: std::sync::OnceLock<Result<(), String>>,
    /// Who answers the policy's `ask` (installed by the MCP server when its client can).
    pub approver: ApproverSlot,
    /// The upstream MCP servers of the `mcp` group (set when the group registers).
    pub upstreams: std::sync::OnceLock<Arc<crate::upstream::Upstreams>>,
    /// Approvals waiting for a shell call to carry them (2026-07-28 lifecycle).
    pub approvals: crate::boundary::PendingApprovals,
    /// This server's private directories: `tmp` (the TMPDIR of every command) and `run`
    /// (decision sockets), in one 0700 directory that goes away with the server.
    pub private: PrivateDirs,
    /// The Landlock fences (None: `[landlock] mode = "off"`), and what the kernel
    /// enforces of them once [`Env::enter_sandbox`] ran.
    pub sandbox: Option<Sandbox>,
    sandbox_status: std::sync::OnceLock<Status>,
    /// The network fence (`[network]`), made with the first task.
    network: std::sync::OnceLock<Result<Option<Arc<NetworkFence>>, String>>,
    /// The workspace's checkpoints, opened on first use (None: `[checkpoints] mode =
    /// "off"`, or no group that changes the workspace).
    pub checkpoints: Option<Arc<crate::checkpoint::Slot>>,
}

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
        /// The decision server's socket for the kernel gate, which decides every exec of
        /// every process; None: only the gated zsh's own execs are decided.
        kernel: Option<PathBuf>,
        /// What results say about it (`data.exec_boundary`).
        status: serde_json::Value,
        /// Said in results when part of the boundary is missing (best-effort).
        note: Option<String>,
    },
    /// The plain shell; `best_effort`: the boundary was wanted, so say it is missing.
    Ungated { why: String, best_effort: bool },
}

/// A server's private directories (see [`Env::private`]).
#[derive(Debug)]
pub struct PrivateDirs {
    _root: tempfile::TempDir,
    pub tmp: PathBuf,
    pub run: PathBuf,
}

/// The longest $TMPDIR whose private directory still leaves room for socket names.
const MAX_TMPDIR_FOR_SOCKETS: usize = 60;

impl PrivateDirs {
    fn create() -> std::io::Result<PrivateDirs> {
        use std::os::unix::fs::PermissionsExt;
        // The decision sockets live under `run`, and a Unix socket's path must fit in
        // sun_path (108 bytes): under a long $TMPDIR (macOS-style, a CI runner's, a test's)
        // they could not be bound, so such a TMPDIR is passed over for /tmp.
        let mut base = std::env::temp_dir();
        if base.as_os_str().len() > MAX_TMPDIR_FOR_SOCKETS {
            base = PathBuf::from("/tmp");
        }
        let root = tempfile::Builder::new()
            .prefix("whalebox-")
            .tempdir_in(&base)?;
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o700))?;
        let tmp = root.path().join("tmp");
        let run = root.path().join("run");
        std::fs::create_dir(&tmp)?;
        std::fs::create_dir(&run)?;
        Ok(PrivateDirs {
            _root: root,
            tmp,
            run,
        })
    }
}

/// The exec boundary of one session.
pub struct Gate {
    /// The gated zsh, or why there is none.
    pub shell: Result<GatedShell, String>,
    pub server: DecisionServer,
    /// Whether the kernel gate works here, or why not.
    pub kernel: Result<(), String>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("shell", &self.shell)
            .field("kernel", &self.kernel)
            .finish()
    }
}

/// What kind of session the tools serve: a server (tasks outlive calls) or one CLI
/// call (whatever is still running when the call returns is stopped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Session {
    Server,
    OneShot,
}

impl Env {
    pub fn new(profile: Profile, session: Session) -> Result<Env, CatalogError> {
        let guard = PathGuard::new(
            &profile.workspace,
            &profile.read_roots,
            &profile.skills.dirs,
        )
        .map_err(|e| CatalogError::Workspace {
            path: profile.workspace.display().to_string(),
            source: e,
        })?;
        let skills = SkillIndex::discover(&guard);
        let policy = if profile.tools.iter().any(|g| g == "shell" || g == "mcp")
            && profile.shell.exec_boundary != ExecBoundary::Off
        {
            Some(Arc::new(match &profile.policy {
                Some(p) => Policy::load(p).map_err(|e| CatalogError::Policy(e.0))?,
                None => Policy::embedded(),
            }))
        } else {
            None
        };
        let tasks = Arc::new(TaskTable::new(Limits {
            max_live: profile.shell.max_tasks,
            max_kept: 64,
            keep_ended: std::time::Duration::from_secs(30 * 60),
            buffer_bytes: profile.shell.buffer_bytes,
        }));
        let private = PrivateDirs::create().map_err(|e| {
            CatalogError::Sandbox(format!(
                "cannot create the private temporary directory: {e}"
            ))
        })?;
        let board = board::Board::new(profile.todo.file.clone());
        let limits = Arc::new(crate::core::SessionLimits::new(
            profile.output.max_chars,
            profile.shell.max_yield_ms,
            profile.shell.default_yield_ms,
        ));
        let mut env = Env {
            profile,
            limits,
            guard,
            skills,
            ledger: Ledger::default(),
            stripes: Stripes::default(),
            tasks,
            board,
            session,
            policy,
            gated_shell: std::sync::OnceLock::new(),
            gate: std::sync::OnceLock::new(),
            kernel_gate: std::sync::OnceLock::new(),
            approver: ApproverSlot::default(),
            approvals: crate::boundary::PendingApprovals::default(),
            upstreams: std::sync::OnceLock::new(),
            private,
            sandbox: None,
            sandbox_status: std::sync::OnceLock::new(),
            network: std::sync::OnceLock::new(),
            checkpoints: None,
        };
        env.checkpoints = env.checkpoint_slot();
        env.sandbox = env.build_sandbox()?;
        Ok(env)
    }

    /// The checkpoints' slot (nothing is opened or made yet).
    fn checkpoint_slot(&self) -> Option<Arc<crate::checkpoint::Slot>> {
        let changing = ["edit", "shell", "mcp", "checkpoints"];
        if !self.profile.checkpoints.on
            || !self
                .profile
                .tools
                .iter()
                .any(|g| changing.contains(&g.as_str()))
        {
            return None;
        }
        let session = match self.session {
            Session::Server => format!("serve {}", std::process::id()),
            Session::OneShot => format!("call {}", std::process::id()),
        };
        Some(Arc::new(crate::checkpoint::Slot::new(
            &self.profile,
            &session,
            self.session == Session::Server,
        )))
    }

    fn shell_on(&self) -> bool {
        self.profile.tools.iter().any(|g| g == "shell")
    }

    /// The fences from the profile plus what this server itself must reach: its private
    /// directories, its own binary, the shells it may start, and the log files it
    /// appends to (created when it enters the sandbox).
    fn build_sandbox(&self) -> Result<Option<Sandbox>, CatalogError> {
        if self.profile.landlock.mode == crate::profile::LandlockMode::Off {
            return Ok(None);
        }
        let mut extras = Extras {
            private: vec![self.private.tmp.clone(), self.private.run.clone()],
            ..Extras::default()
        };
        if let Ok(exe) = std::env::current_exe() {
            extras.programs.push(exe);
        }
        if let Some(c) = &self.checkpoints {
            // The server keeps checkpoints there (made when it enters the sandbox); its
            // commands never see the store.
            extras.server_private.push(c.dir().to_path_buf());
        }
        if self.shell_on()
            && let Some(plain) =
                crate::shell::spawn::find_shell(self.profile.shell.program.as_deref())
        {
            // The configured shell may live outside the system roots (and a zsh needs
            // its modules, in ../lib/zsh beside its bin/).
            let plain = plain.canonicalize().unwrap_or(plain);
            if let Some(modules) = plain
                .parent()
                .and_then(Path::parent)
                .map(|p| p.join("lib/zsh"))
            {
                extras.programs.push(modules);
            }
            extras.programs.push(plain);
        }
        if self.shell_on() && self.policy.is_some() {
            // Every place the gated zsh may be found (it is probed later, inside the
            // sandbox), with its whole prefix: its modules load from lib/ under it.
            extras.programs.extend(crate::boundary::gate_program());
            for zsh in crate::boundary::gated_shell_candidates(self.profile.shell.zsh.as_deref()) {
                if let Ok(zsh) = zsh.canonicalize()
                    && let Some(prefix) = zsh.parent().and_then(Path::parent)
                {
                    extras.programs.push(prefix.to_path_buf());
                }
            }
            let files = [
                &self.profile.shell.audit_log,
                &self.profile.shell.approvals_file,
            ];
            extras.files.extend(files.into_iter().flatten().cloned());
        }
        if self.profile.tools.iter().any(|g| g == "web") {
            extras.server_connect = crate::tools::web::server_ports(&self.profile.web);
        }
        let net = &self.profile.network;
        if net.on()
            && self
                .profile
                .tools
                .iter()
                .any(|g| g == "shell" || g == "mcp")
        {
            // The network fence records each connection in the audit log, and its proxy
            // connects out for the tasks (on the allowed ports, under network = "deny").
            let files = [
                &self.profile.shell.audit_log,
                &self.profile.shell.approvals_file,
            ];
            for file in files.into_iter().flatten() {
                if !extras.files.contains(file) {
                    extras.files.push(file.clone());
                }
            }
            extras.server_connect.extend(&net.ports);
            extras.read.extend(net.ca_files.iter().map(PathBuf::from));
            // Without root, a task's network namespace lives in a user namespace whose
            // uid and gid maps its supervisor writes in /proc/self (see net::netns).
            // SAFETY: geteuid cannot fail.
            let root = unsafe { nix::libc::geteuid() } == 0;
            if !root && net.kernel != crate::profile::network::KernelFence::Landlock {
                extras.server_write.push(PathBuf::from("/proc"));
            }
        }
        let sandbox = Sandbox::from_profile(&self.profile, &extras);
        if let Some(s) = &sandbox {
            // Bad combinations (enforce on a kernel that cannot) stop start-up here.
            s.check(Layer::Task).map_err(CatalogError::Sandbox)?;
        }
        Ok(sandbox)
    }

    /// Put the server itself inside its Landlock fences. Call on the main thread before
    /// any other thread starts (the async runtime included): Landlock restricts the
    /// calling thread and what it starts afterwards.
    pub fn enter_sandbox(&self) -> Result<&Status, String> {
        if let Some(c) = &self.checkpoints {
            // The store must be there before the server's layer names it; a store that
            // cannot be made is said in each call's `checkpoint_missing`.
            let _ = c.get();
        }
        let status = match &self.sandbox {
            Some(s) => {
                for warning in s.create_files()? {
                    tracing::warn!("[landlock] presets: {warning}");
                }
                s.apply(Layer::Server)?
            }
            None => Status::off(),
        };
        Ok(self.sandbox_status.get_or_init(|| status))
    }

    /// What the kernel enforces for this server's commands: the task layer's status
    /// (Landlock off, when the server never entered its sandbox).
    pub fn sandbox_status(&self) -> Status {
        match (&self.sandbox, self.sandbox_status.get()) {
            // The kernel refused the server's own layer: it will refuse the tasks' too.
            (Some(_), Some(server)) if server.unavailable.is_some() => server.clone(),
            (Some(s), _) => s.status(Layer::Task),
            (None, _) => Status::off(),
        }
    }

    /// Whether the server itself runs inside its fences.
    pub fn in_sandbox(&self) -> bool {
        self.sandbox_status
            .get()
            .is_some_and(|s| s.unavailable.is_none())
    }

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
            Ok(()) => Ok(ShellBoundary::Gated {
                status: serde_json::json!({
                    "gated": true,
                    "kernel": true,
                    "zsh": zsh,
                    "covers": "every exec of every process of the task",
                }),
                zsh,
                vars,
                kernel: Some(gate.server.socket().to_path_buf()),
                note: None,
            }),
            Err(why) if required => Err(format!("the kernel exec gate cannot run here: {why}")),
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

    /// Whether the kernel exec gate can be installed here, found out once by starting
    /// it for real (a supervisor gating `whalebox --version`).
    pub fn kernel_gate(&self) -> Result<(), String> {
        self.kernel_gate
            .get_or_init(|| {
                if let Some(why) = crate::boundary::kernel::unsupported() {
                    return Err(why);
                }
                let exe = std::env::current_exe().map_err(|e| e.to_string())?;
                let out = std::process::Command::new(&exe)
                    .args([
                        crate::shell::supervisor::SUBCOMMAND,
                        &std::process::id().to_string(),
                        crate::shell::supervisor::EXEC_GATE_FLAG,
                        "/nonexistent/whalebox-probe.sock",
                        "--",
                    ])
                    .arg(&exe)
                    .arg("--version")
                    .env("TMPDIR", &self.private.tmp)
                    .stdin(std::process::Stdio::null())
                    .output()
                    .map_err(|e| format!("cannot start the probe: {e}"))?;
                if out.status.success() {
                    return Ok(());
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
    /// The session's network fence: None with `[network] mode = "off"`; Err when
    /// `mode = "enforce"` cannot be met here.
    pub fn network(&self) -> Result<Option<Arc<NetworkFence>>, String> {
        self.network
            .get_or_init(|| {
                let landlock_on = self.sandbox.is_some();
                let enforcement =
                    crate::net::fence::detect(self.profile.network.kernel, landlock_on);
                NetworkFence::new(
                    &self.profile.network,
                    crate::net::fence::FenceSettings {
                        on_ask: self.profile.shell.on_ask,
                        approver: self.approver.clone(),
                        ask_timeout: std::time::Duration::from_millis(
                            self.profile.input.timeout_ms,
                        ),
                        audit_log: self.profile.shell.audit_log.clone(),
                        run_dir: self.private.run.clone(),
                        policy_rules: self.network_rules()?,
                        approvals_file: self.profile.shell.approvals_file.clone(),
                    },
                    enforcement,
                )
                .map(|f| f.map(Arc::new))
            })
            .clone()
    }

    /// The policy's `[[network]]` rules: from the loaded exec policy, or (with the exec
    /// boundary off) read from the profile's policy file for the network fence alone.
    fn network_rules(&self) -> Result<Vec<crate::policy::NetworkRule>, String> {
        match (&self.policy, &self.profile.policy) {
            (Some(p), _) => Ok(p.network.clone()),
            (None, Some(file)) => Policy::load(file).map(|p| p.network).map_err(|e| e.0),
            (None, None) => Ok(Vec::new()),
        }
    }

    /// The network fence's part of a task that is about to start (None: no fence).
    pub fn task_network(
        &self,
        command: &str,
    ) -> Result<Option<(Arc<NetworkFence>, TaskNet)>, ToolError> {
        let fence = self.network().map_err(|why| {
            ToolError::new(
                Code::Unsupported,
                why,
                "see `whalebox doctor`; or set [network] mode = \"best-effort\" in the profile",
            )
        })?;
        match fence {
            None => Ok(None),
            Some(f) => {
                let net = f.prepare(command).map_err(|e| {
                    ToolError::internal(format!("cannot set up the command's network fence: {e}"))
                })?;
                Ok(Some((f, net)))
            }
        }
    }

    /// The task's Landlock layer as the supervisor gets it: the session's, with the
    /// network fence's proxy port when it falls back to Landlock.
    pub fn task_sandbox(&self, net: Option<&TaskNet>) -> Result<Option<String>, ToolError> {
        let Some(sandbox) = &self.sandbox else {
            return Ok(None);
        };
        let mut sandbox = sandbox.clone();
        sandbox.proxy_port = net.and_then(|n| n.connect_port);
        serde_json::to_string(&sandbox)
            .map(Some)
            .map_err(|e| ToolError::internal(format!("cannot hand the sandbox to the task: {e}")))
    }

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
                    policy,
                    crate::boundary::Settings {
                        on_ask: self.profile.shell.on_ask,
                        audit_log: self.profile.shell.audit_log.clone(),
                        approvals_file: self.profile.shell.approvals_file.clone(),
                        runtime_dir: Some(self.private.run.clone()),
                    },
                    Arc::new(move |pid| tasks.task_of_pid(pid)),
                    self.approver.clone(),
                )
                .map_err(|e| format!("cannot start the decision server: {e}"))?;
                Ok(Arc::new(Gate {
                    shell,
                    server,
                    kernel,
                }))
            })
            .clone()
    }
}

/// One tool group: a name the profile's `tools` list can enable.
pub struct Group {
    pub name: &'static str,
    pub summary: &'static str,
    register: fn(&Arc<Env>, &mut Registry) -> Result<(), RegistryError>,
}

/// Every group whalebox has, in listing order.
pub const GROUPS: &[Group] = &[
    Group {
        name: "files",
        summary: "read_file, list_dir, load_skill",
        register: files::register,
    },
    Group {
        name: "search",
        summary: "grep, search_files",
        register: search::register,
    },
    Group {
        name: "edit",
        summary: "edit, multi_edit, write",
        register: edit::register,
    },
    Group {
        name: "shell",
        summary: "shell_run, shell_wait, write_stdin, shell_cancel",
        register: shell::register,
    },
    Group {
        name: "plan",
        summary: "update_plan",
        register: plan::register,
    },
    Group {
        name: "todo",
        summary: "todo_add, todo_list, todo_update, todo_remove, todo_clear_completed",
        register: todo::register,
    },
    Group {
        name: "input",
        summary: "request_user_input",
        register: input::register,
    },
    Group {
        name: "mcp",
        summary: "tool_search, call_tool (listed when [mcp_servers] has a server)",
        register: mcp::register,
    },
    Group {
        name: "checkpoints",
        summary: "checkpoint_list, checkpoint_diff, checkpoint_restore",
        register: checkpoints::register,
    },
    Group {
        name: "web",
        summary: "web_fetch, fetch, web_search (opt-in)",
        register: web::register,
    },
];

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("{profile}: unknown tool group `{group}` in `tools`; known groups: {known}")]
    UnknownGroup {
        profile: String,
        group: String,
        known: String,
    },
    #[error("workspace {path}: {source}")]
    Workspace {
        path: String,
        source: std::io::Error,
    },
    #[error("policy: {0}")]
    Policy(String),
    #[error("sandbox: {0}")]
    Sandbox(String),
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

/// Build the registry of every tool the profile enables, for a server session.
pub fn build(profile: Profile) -> Result<(Registry, Arc<Env>), CatalogError> {
    build_session(profile, Session::Server)
}

/// Build the registry of every tool the profile enables.
pub fn build_session(
    profile: Profile,
    session: Session,
) -> Result<(Registry, Arc<Env>), CatalogError> {
    for group in &profile.tools {
        if !GROUPS.iter().any(|g| g.name == group) {
            return Err(CatalogError::UnknownGroup {
                profile: profile.source_name(),
                group: group.clone(),
                known: GROUPS.iter().map(|g| g.name).collect::<Vec<_>>().join(", "),
            });
        }
    }
    let env = Arc::new(Env::new(profile, session)?);
    let mut registry = Registry::new(Arc::clone(&env.limits));
    if let Some(c) = &env.checkpoints {
        registry.set_change_hook(Arc::new(checkpoints::Hook {
            checkpoints: c.clone(),
            tasks: Arc::clone(&env.tasks),
            announce: env.board.announcer(),
        }));
    }
    for group in GROUPS {
        if env.profile.tools.iter().any(|g| g == group.name) {
            (group.register)(&env, &mut registry)?;
        }
    }
    Ok((registry, env))
}
