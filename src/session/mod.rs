//! One session's shared state, [`Env`]: the profile, the path guard, the ledger of
//! reads and writes, the shell tasks, the plan and todo list, the exec boundary, the
//! Landlock fences and the network fence. The tools (`tools`), the upstream MCP servers
//! (`upstream`) and the sandboxed runner (`runner`) all work in one, so it sits below
//! them all and knows none of them.
//!
//! - `sandbox`: the Landlock fences the server and its tasks live in;
//! - `exec`: the exec boundary (the gated zsh, the kernel gate, the
//!   decision server) and the shell a command gets;
//! - `network`: the network fence of a task;
//! - [`board`]: the plan and the todo list; [`skills`]: the skills found at start-up.

pub mod board;
mod exec;
mod network;
mod sandbox;
pub mod skills;
mod spaces;

use std::path::PathBuf;
use std::sync::Arc;

use crate::boundary::{ApproverSlot, GatedShell};
use crate::guard::PathGuard;
use crate::guard::landlock::{Sandbox, Status};
use crate::mutation::{Ledger, Stripes};
use crate::net::fence::NetworkFence;
use crate::policy::Policy;
use crate::profile::{ExecBoundary, Profile};
use crate::shell::TaskTable;
use crate::shell::task::Limits;

pub use board::Board;
pub use exec::{Gate, ShellBoundary};
pub use skills::{Skill, SkillIndex};
pub use spaces::SessionSpaces;

/// Everything the tools and upstream servers of one session share, built once from the
/// profile.
#[derive(Debug)]
pub struct Env {
    pub profile: Profile,
    /// The profile's output and wait limits, as fitted to the client once it is known.
    pub limits: Arc<crate::core::SessionLimits>,
    pub guard: PathGuard,
    pub skills: SkillIndex,
    /// What this session last read or wrote of each file.
    pub ledger: Ledger,
    /// Serializes read-modify-write calls on the same file (shared by the sessions of
    /// one server: they work in one workspace).
    pub stripes: Arc<Stripes>,
    /// The shell tasks this session started.
    pub tasks: Arc<TaskTable>,
    /// The plan and the todo list this session keeps for the agent.
    pub board: Board,
    pub session: Session,
    /// The exec policy (loaded at start when the shell group is on and the boundary
    /// is not off; a policy that does not load stops startup).
    pub policy: Option<Arc<Policy>>,
    /// The policy's `[[network]]` rules, read at start-up (before the server enters its
    /// fences, which may leave the policy file out of its reach): from the exec policy,
    /// or, with the exec boundary off, from the profile's policy file for the network
    /// fence alone.
    network_rules: Arc<Vec<crate::policy::NetworkRule>>,
    /// The gated zsh, found on first use (at start-up when Landlock needs its path).
    gated_shell: std::sync::OnceLock<Result<GatedShell, String>>,
    /// The gated zsh and this session's decision server, started on first use.
    gate: std::sync::OnceLock<Result<Arc<Gate>, String>>,
    kernel_gate: std::sync::OnceLock<Result<crate::boundary::kernel::Method, String>>,
    /// Who answers the policy's `ask` (installed by the MCP server when its client can).
    pub approver: ApproverSlot,
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
    /// The session's namespaces (network, `/dev/shm`), made with the first task.
    spaces: std::sync::OnceLock<Result<Arc<SessionSpaces>, String>>,
    /// The server's session slots, one per session: a `/dev/shm` directory and the
    /// namespaces made ahead (when the server enters its fences; shared by the sessions
    /// of an HTTP server).
    slots: Arc<std::sync::OnceLock<Arc<spaces::Slots>>>,
    /// The workspace's checkpoints, opened on first use (None: `[checkpoints] mode =
    /// "off"`, or no group that changes the workspace).
    pub checkpoints: Option<Arc<crate::checkpoint::Slot>>,
    /// Who this session serves, when the transport knows (an HTTP caller's name): the
    /// audit log's records say it.
    pub caller: Option<String>,
    /// Undoes the git configuration and hooks commands leave that would run programs
    /// outside the fences (None: no shell, or `[git] allow_exec_config = true`).
    /// Shared by the sessions of a server: they work in one workspace.
    pub git_guard: Option<Arc<crate::gitguard::GitGuard>>,
}

/// Where the git guard moves hooks (outside the workspace, out of the tasks' reach,
/// private to the server): inside the checkpoint store's directory when checkpoints are
/// on (`<store>/git-quarantine`: the checkpoints directory holds one entry per
/// workspace), else `~/.local/state/whalebox/git-quarantine/<workspace>`.
pub fn git_quarantine_dir(profile: &Profile) -> PathBuf {
    if profile.checkpoints.on {
        crate::checkpoint::store_dir(profile).join("git-quarantine")
    } else {
        crate::checkpoint::state_dir(profile, "git-quarantine")
    }
}

/// A server's private directories (see [`Env::private`]). The sessions of an HTTP
/// server each get their own pair under the server's (`PrivateDirs::child`), so no
/// session sees another's temporary files or sockets.
#[derive(Debug)]
pub struct PrivateDirs {
    root: Arc<tempfile::TempDir>,
    pub tmp: PathBuf,
    pub run: PathBuf,
    /// A child's directories go away with it; the server's with its `root`.
    child: bool,
}

impl Drop for PrivateDirs {
    fn drop(&mut self) {
        if self.child {
            let _ = std::fs::remove_dir_all(&self.tmp);
            let _ = std::fs::remove_dir_all(&self.run);
        }
    }
}

/// The longest $TMPDIR whose private directory still leaves room for socket names.
const MAX_TMPDIR_FOR_SOCKETS: usize = 60;

impl PrivateDirs {
    fn create(workspace: &std::path::Path) -> std::io::Result<PrivateDirs> {
        use std::os::unix::fs::PermissionsExt;
        // The decision sockets live under `run`, and a Unix socket's path must fit in
        // sun_path (108 bytes): under a long $TMPDIR (macOS-style, a CI runner's, a test's)
        // they could not be bound, so such a TMPDIR is passed over for /tmp. So is one
        // inside the workspace (a Nix build's /build is both), which commands may write.
        let mut base = std::env::temp_dir();
        let in_workspace = crate::guard::resolve_physical(&base).is_ok_and(|b| {
            crate::guard::resolve_physical(workspace).is_ok_and(|w| b.starts_with(w))
        });
        if base.as_os_str().len() > MAX_TMPDIR_FOR_SOCKETS || in_workspace {
            base = PathBuf::from("/tmp");
        }
        let make = |base: &std::path::Path| {
            tempfile::Builder::new()
                .prefix("whalebox-")
                .tempdir_in(base)
        };
        // Where /tmp cannot be used (a build sandbox without it), $TMPDIR after all.
        let root = make(&base).or_else(|_| make(&std::env::temp_dir()))?;
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o700))?;
        let tmp = root.path().join("tmp");
        let run = root.path().join("run");
        std::fs::create_dir(&tmp)?;
        std::fs::create_dir(&run)?;
        Ok(PrivateDirs {
            root: Arc::new(root),
            tmp,
            run,
            child: false,
        })
    }

    /// The directory holding `tmp` and `run`.
    pub fn root(&self) -> &std::path::Path {
        self.root.path()
    }

    /// Remove the server's private directory now: at its end, when threads that will
    /// never be joined (decision servers) still hold the session.
    pub fn remove(&self) {
        let _ = std::fs::remove_dir_all(self.root.path());
    }

    /// A session's own pair, `tmp/NAME` and `run/NAME` (NAME short: sockets live there).
    fn child(&self, name: &str) -> std::io::Result<PrivateDirs> {
        let tmp = self.tmp.join(name);
        let run = self.run.join(name);
        std::fs::create_dir(&tmp)?;
        if let Err(e) = std::fs::create_dir(&run) {
            let _ = std::fs::remove_dir(&tmp);
            return Err(e);
        }
        Ok(PrivateDirs {
            root: Arc::clone(&self.root),
            tmp,
            run,
            child: true,
        })
    }
}

/// What kind of session the tools serve: a server (tasks outlive calls) or one CLI
/// call (whatever is still running when the call returns is stopped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Session {
    Server,
    OneShot,
}

/// Why a session could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("workspace {path}: {source}")]
    Workspace {
        path: String,
        source: std::io::Error,
    },
    #[error("policy: {0}")]
    Policy(String),
    #[error("sandbox: {0}")]
    Sandbox(String),
}

impl Env {
    pub fn new(profile: Profile, session: Session) -> Result<Env, SetupError> {
        let guard = PathGuard::new(
            &profile.workspace,
            &profile.read_roots,
            &profile.skills.dirs,
        )
        .map_err(|e| SetupError::Workspace {
            path: profile.workspace.display().to_string(),
            source: e,
        })?;
        let skills = SkillIndex::discover(&guard);
        let policy = if profile.tools.iter().any(|g| g == "shell" || g == "mcp")
            && profile.shell.exec_boundary != ExecBoundary::Off
        {
            Some(Arc::new(match &profile.policy {
                Some(p) => Policy::load(p).map_err(|e| SetupError::Policy(e.0))?,
                None => Policy::embedded(),
            }))
        } else {
            None
        };
        let network_rules = Arc::new(match (&policy, &profile.policy) {
            (Some(p), _) => p.network.clone(),
            (None, Some(file))
                if profile.network.on()
                    && profile.tools.iter().any(|g| g == "shell" || g == "mcp") =>
            {
                Policy::load(file)
                    .map(|p| p.network)
                    .map_err(|e| SetupError::Policy(e.0))?
            }
            (None, _) => Vec::new(),
        });
        let tasks = Arc::new(TaskTable::new(Limits {
            max_live: profile.shell.max_tasks,
            max_kept: 64,
            keep_ended: std::time::Duration::from_secs(30 * 60),
            buffer_bytes: profile.shell.buffer_bytes,
        }));
        let private = PrivateDirs::create(&profile.workspace).map_err(|e| {
            SetupError::Sandbox(format!(
                "cannot create the private temporary directory: {e}"
            ))
        })?;
        let board = Board::new(profile.todo.file.clone());
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
            stripes: Arc::default(),
            tasks,
            board,
            session,
            policy,
            network_rules,
            gated_shell: std::sync::OnceLock::new(),
            gate: std::sync::OnceLock::new(),
            kernel_gate: std::sync::OnceLock::new(),
            approver: ApproverSlot::default(),
            approvals: crate::boundary::PendingApprovals::default(),
            private,
            sandbox: None,
            sandbox_status: std::sync::OnceLock::new(),
            network: std::sync::OnceLock::new(),
            spaces: std::sync::OnceLock::new(),
            slots: Arc::default(),
            checkpoints: None,
            caller: None,
            git_guard: None,
        };
        env.checkpoints = env.checkpoint_slot();
        env.git_guard = env.start_git_guard();
        // The tasks' cgroups: looked for (and the server's directories made) now, before
        // the server enters its sandbox, whether or not Landlock is on.
        let _ = env.task_cgroups();
        env.sandbox = env.build_sandbox()?;
        Ok(env)
    }

    /// The cgroups the shell's tasks get (found, and the server's directories made, on
    /// the first call, which must come before the server enters its sandbox); None
    /// when the shell group is off, `[shell.limits] cgroup = "off"`, or no limit needs one.
    pub fn task_cgroups(&self) -> Option<&'static crate::guard::limits::cgroup::Cgroups> {
        let l = &self.profile.shell;
        let wanted = l.task_limits.processes.is_some() || l.task_limits.memory.is_some();
        (self.profile.tools.iter().any(|g| g == "shell")
            && l.limits.cgroup == crate::guard::limits::CgroupMode::Auto
            && wanted)
            .then(crate::guard::limits::cgroup::Cgroups::here)
    }

    /// Another session of the same server (an HTTP client's): the profile, path guard,
    /// policy, skills, file locks, checkpoints and the server's fences are shared; the
    /// ledger, tasks, plan and todos, approvals, exec gate, network fence and private
    /// directories are its own. `name` is short and unique in the server (it names the
    /// session's private directories); `caller` is who it serves.
    pub fn new_session(&self, name: &str, caller: &str) -> Result<Env, SetupError> {
        let private = self.private.child(name).map_err(|e| {
            SetupError::Sandbox(format!(
                "cannot create the session's private directory: {e}"
            ))
        })?;
        let profile = self.profile.clone();
        let limits = Arc::new(crate::core::SessionLimits::new(
            profile.output.max_chars,
            profile.shell.max_yield_ms,
            profile.shell.default_yield_ms,
        ));
        let mut env = Env {
            limits,
            guard: self.guard.clone(),
            skills: self.skills.clone(),
            ledger: Ledger::default(),
            stripes: Arc::clone(&self.stripes),
            tasks: Arc::new(TaskTable::new(self.tasks.limits())),
            board: Board::new(profile.todo.file.clone()),
            session: self.session,
            policy: self.policy.clone(),
            network_rules: Arc::clone(&self.network_rules),
            gated_shell: std::sync::OnceLock::new(),
            gate: std::sync::OnceLock::new(),
            kernel_gate: std::sync::OnceLock::new(),
            approver: ApproverSlot::default(),
            approvals: crate::boundary::PendingApprovals::default(),
            private,
            sandbox: None,
            sandbox_status: std::sync::OnceLock::new(),
            network: std::sync::OnceLock::new(),
            spaces: std::sync::OnceLock::new(),
            slots: Arc::clone(&self.slots),
            checkpoints: self.checkpoints.clone(),
            caller: Some(caller.to_string()),
            git_guard: self.git_guard.clone(),
            profile,
        };
        // The session's tasks get a layer that names its own private directories; the
        // server's own layer (entered once, by the first session) already covers them.
        env.sandbox = env.build_sandbox()?;
        if let Some(status) = self.sandbox_status.get() {
            let _ = env.sandbox_status.set(status.clone());
        }
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

    /// The git guard, its baseline taken now (session start), before any task ran.
    fn start_git_guard(&self) -> Option<Arc<crate::gitguard::GitGuard>> {
        let allow = &self.profile.git.allow_exec_config;
        if allow.all() || !self.shell_on() {
            return None;
        }
        // Made when the server enters its fences (or at the first hook moved there).
        let quarantine = git_quarantine_dir(&self.profile);
        Some(Arc::new(crate::gitguard::GitGuard::start(
            crate::gitguard::Settings {
                workspace: self.profile.workspace.clone(),
                linked: self.profile.git.linked.clone(),
                allow: allow.keys().to_vec(),
                git: crate::gitguard::find_git(),
                scratch: crate::gitguard::scratch_dir(self.private.root()),
                quarantine,
                audit_log: self.profile.shell.audit_log.clone(),
            },
        )))
    }

    /// Compare the workspace's git configuration and hooks with the session's start and
    /// undo what commands added (blocking; cheap when nothing changed).
    pub fn check_git(&self) {
        if let Some(g) = &self.git_guard {
            g.check();
        }
    }

    fn shell_on(&self) -> bool {
        self.profile.tools.iter().any(|g| g == "shell")
    }
}
