//! Kernel fences with Linux Landlock: the profile's path sets, TCP ports and scopes as a
//! ruleset that an unprivileged process puts on itself and every process it starts.
//!
//! Two layers. The server restricts itself at start-up, after opening what it needs, so
//! its file tools are confined under the path guard; each shell task's supervisor adds
//! a second layer before it starts the shell (the same paths, plus network and scopes),
//! so a command is fenced even if the server's own layer was not applied. Layers only
//! ever narrow: a process can never give itself back a right.
//!
//! Rights that need a newer kernel than the running one are, in `best-effort` mode,
//! dropped and reported ([`Status`]); in `enforce` mode they stop start-up.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use serde::{Deserialize, Serialize};

use super::presets::{Excluded, Kind, Preset, PresetPath};

mod explain;
mod settings;
pub use settings::{LandlockMode, LandlockSection, NetworkMode};

/// What one path is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// Read files and list directories.
    Read,
    /// Read, list and execute.
    ReadExec,
    /// Everything: create, write, remove, rename, link, truncate, execute.
    Full,
    /// A device or a single file: read, write, truncate, ioctl (terminals).
    Device,
}

impl Grant {
    /// The Landlock rights it stands for (directory rights included).
    fn access(self, abi: ABI) -> BitFlags<AccessFs> {
        match self {
            Grant::Read => AccessFs::ReadFile | AccessFs::ReadDir,
            Grant::ReadExec => AccessFs::from_read(abi),
            Grant::Full => AccessFs::from_all(abi),
            Grant::Device => {
                AccessFs::ReadFile
                    | AccessFs::WriteFile
                    | AccessFs::Truncate
                    | AccessFs::IoctlDev
                    | AccessFs::ReadDir
            }
        }
    }
}

/// The fences, built from a profile; serialized to hand them to a task's supervisor.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sandbox {
    pub mode: LandlockMode,
    pub min_abi: u8,
    pub paths: Vec<(PathBuf, Grant)>,
    pub network: NetworkMode,
    pub connect: Vec<u16>,
    /// More ports the server's own layer allows (see [`Extras::server_connect`]).
    #[serde(default)]
    pub server_connect: Vec<u16>,
    /// Files the server's own layer lets it (and the supervisors it starts, before they
    /// add the task's layer) write: see [`Extras::server_write`].
    #[serde(default)]
    pub server_write: Vec<PathBuf>,
    /// Directories the server's own layer has full rights on (see
    /// [`Extras::server_private`]).
    #[serde(default)]
    pub server_private: Vec<PathBuf>,
    /// Files and directories only the server's own layer may read (see
    /// [`Extras::server_read`]).
    #[serde(default)]
    pub server_read: Vec<PathBuf>,
    /// Directories in which the server's own layer may remove (empty) directories (see
    /// [`Extras::server_rmdir`]).
    #[serde(default)]
    pub server_rmdir: Vec<PathBuf>,
    /// Whether the server's own layer grants the device files under `/dev` (read, write,
    /// ioctl, listing; nothing made, removed or run) rather than the listed devices
    /// alone: set when sessions get a devpts instance of their own over `/dev/pts` (see
    /// `spaces`), whose
    /// terminals no rule on the machine's `/dev/pts` or `/dev/ptmx` reaches (Landlock
    /// skips a covered mount point when it walks up a path; `/dev` is the nearest
    /// directory it checks). The task's layer, added inside the session's namespaces,
    /// still names the devices one by one, its own `/dev/pts` included.
    #[serde(default)]
    pub server_devices: bool,
    /// What the server's own layer grants by descriptor: the sessions' `/proc` and
    /// terminals, mounted in other mount namespaces before the layer is built (see
    /// `spaces::Root`), which no path of the server's reaches and no rule on the
    /// machine's `/proc` or `/dev/pts` covers. Each stands in for the path beside it:
    /// it gets every right the layer grants that path or anything under it.
    #[serde(skip)]
    pub server_roots: Vec<(std::sync::Arc<std::os::fd::OwnedFd>, PathBuf)>,
    pub bind: Vec<u16>,
    /// More ports the server's own layer may bind under `network = "deny"` (see
    /// [`Extras::server_bind`]).
    #[serde(default)]
    pub server_bind: Vec<u16>,
    /// A task's egress proxy door, where its layer limits TCP connect (the network
    /// fence's Landlock fallback, or `network = "deny"`): its port is allowed.
    #[serde(default)]
    pub proxy_port: Option<u16>,
    /// Ports a task may connect to wherever its layer limits TCP connect (the network
    /// fence's host ports), allowed by the server's layer too under `network = "deny"`.
    #[serde(default)]
    pub task_connect: Vec<u16>,
    /// What must exist before the ruleset is built: made by [`Sandbox::create_files`]
    /// when the server enters the sandbox (never by `doctor` or `profile check`).
    #[serde(default)]
    pub create: Vec<Creation>,
    /// What [`Sandbox::explain`] needs to name a preset or profile key (the server's
    /// side only: a task's supervisor never explains).
    #[serde(skip)]
    pub hints: Hints,
}

/// A file or directory the sandbox grants that may not exist yet.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Creation {
    pub path: PathBuf,
    /// A directory (`mkdir -p`), else an empty file.
    pub dir: bool,
    /// From a preset: failing to create it is a warning (the grant is skipped), not an
    /// error that stops start-up.
    pub optional: bool,
}

/// The profile's provenance of paths, for explaining refusals.
#[derive(Debug, Clone, Default)]
pub struct Hints {
    /// The profile file, as messages name it.
    pub profile: String,
    /// Whether that is a file one can edit (not the embedded default).
    pub profile_is_file: bool,
    pub presets: Vec<Preset>,
    pub catalog: Vec<PresetPath>,
    pub excluded: Vec<Excluded>,
}

/// Which layer is being applied: the server's own, or a shell task's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    Server,
    Task,
}

/// What the kernel enforces of the sandbox, for `whalebox doctor`, the MCP server's
/// instructions and shell results.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Status {
    pub mode: LandlockMode,
    /// The kernel's Landlock ABI (0: none).
    pub kernel_abi: i32,
    pub enforced: Vec<String>,
    pub dropped: Vec<String>,
    /// Why nothing is enforced, when nothing is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

impl Status {
    /// Landlock switched off by the profile.
    pub fn off() -> Status {
        Status {
            mode: LandlockMode::Off,
            kernel_abi: kernel_abi(),
            enforced: Vec::new(),
            dropped: Vec::new(),
            unavailable: Some("[landlock] mode = \"off\" in the profile".into()),
        }
    }

    /// A few words for a model: the ABI and mode, or why nothing holds, and what was
    /// dropped.
    pub fn brief(&self) -> String {
        match &self.unavailable {
            Some(why) => format!("Landlock: not enforced ({why})"),
            None => {
                let mut text = format!(
                    "Landlock ABI {} ({})",
                    self.kernel_abi,
                    match self.mode {
                        LandlockMode::Enforce => "enforce",
                        LandlockMode::BestEffort => "best-effort",
                        LandlockMode::Off => "off",
                    }
                );
                if !self.dropped.is_empty() {
                    text.push_str(&format!("; dropped: {}", self.dropped.join(", ")));
                }
                text
            }
        }
    }

    /// One line for people: what holds and what does not.
    pub fn summary(&self) -> String {
        match (&self.unavailable, self.mode) {
            (Some(why), _) => format!("Landlock: not enforced ({why})"),
            (None, mode) => format!(
                "Landlock ABI {} ({}): enforcing {}{}",
                self.kernel_abi,
                match mode {
                    LandlockMode::Enforce => "enforce",
                    LandlockMode::BestEffort => "best-effort",
                    LandlockMode::Off => "off",
                },
                self.enforced.join(", "),
                if self.dropped.is_empty() {
                    String::new()
                } else {
                    format!("; dropped: {}", self.dropped.join(", "))
                }
            ),
        }
    }
}

/// The parts of the fence and the ABI each needs.
const FEATURES: &[(&str, i32)] = &[
    ("filesystem", 1),
    ("rename and link across directories", 2),
    ("truncate", 3),
    ("network (TCP connect and bind)", 4),
    ("device ioctl", 5),
    ("scopes (signals, abstract unix sockets)", 6),
];

/// System locations every command needs: read and execute (or read only).
const SYSTEM_ROOTS: &[(&str, Grant)] = &[
    ("/usr", Grant::ReadExec),
    ("/bin", Grant::ReadExec),
    ("/sbin", Grant::ReadExec),
    ("/lib", Grant::ReadExec),
    ("/lib32", Grant::ReadExec),
    ("/lib64", Grant::ReadExec),
    ("/libx32", Grant::ReadExec),
    ("/etc", Grant::ReadExec),
    ("/opt", Grant::ReadExec),
    ("/nix/store", Grant::ReadExec),
    ("/proc", Grant::Read),
    ("/sys", Grant::Read),
];

const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// `path` with its longest existing ancestor's symlinks resolved (Landlock grants the
/// file a path resolves to, so comparisons must too); the rest as written.
fn resolved(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = at.canonicalize() {
            return rest.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// The running kernel's Landlock ABI version: 0 when it has none (not built in, or
/// not enabled at boot). The landlock crate keeps its probe private, so ask the kernel.
pub fn kernel_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    // SAFETY: the documented version query: no ruleset attributes, size 0.
    let v = unsafe {
        nix::libc::syscall(
            nix::libc::SYS_landlock_create_ruleset,
            std::ptr::null::<std::ffi::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v < 0 { 0 } else { v as i32 }
}

/// Files and directories the server itself needs beyond the profile's sets.
#[derive(Debug, Default)]
pub struct Extras {
    /// The private TMPDIR and the decision sockets' directory: full rights.
    pub private: Vec<PathBuf>,
    /// Programs and their trees the server runs (its own binary, the gated zsh).
    pub programs: Vec<PathBuf>,
    /// Single files the server appends to (audit log, approvals file); created empty
    /// by [`Sandbox::create_files`] just before the server enters the sandbox. Only the
    /// server's layer grants them: a task that could write them could forge the record
    /// of what it did or append an `allow` rule a person later includes.
    pub files: Vec<PathBuf>,
    /// Files the server reads that no set names (the network fence's `ca_files`).
    pub read: Vec<PathBuf>,
    /// Paths only the server's layer may write: `/proc`, when a task's supervisor must
    /// write its new user namespace's `uid_map` (an unprivileged network namespace) before
    /// it adds the task's own layer, which leaves `/proc` read-only again.
    pub server_write: Vec<PathBuf>,
    /// Directories and files only the server's layer has full rights on (the checkpoint
    /// store, its private directory, the log files): the tasks' layer, added on top,
    /// leaves them out.
    pub server_private: Vec<PathBuf>,
    /// Secrets only the server's layer may read (an HTTP server's tokens file, TLS key,
    /// JWKS file, by their directories so a rotated file is followed): the tasks' layer
    /// leaves them out, so no command can read them.
    pub server_read: Vec<PathBuf>,
    /// Directories in which only the server's layer may remove empty directories: the
    /// parent of its private directory, which it removes when it ends.
    pub server_rmdir: Vec<PathBuf>,
    /// TCP ports the server itself connects to (the web group's `[web] ports` and its
    /// search endpoint), with `network = "deny"`.
    pub server_connect: Vec<u16>,
    /// TCP ports the server itself listens on, with `network = "deny"` (the egress
    /// proxy's doors on this machine's loopback).
    pub server_bind: Vec<u16>,
}

impl Sandbox {
    /// The fences `[landlock]` declares around `workspace` (read and write) and the
    /// `readable` roots (read roots and skill directories), plus what the server itself
    /// needs (`extras`); `None` when `mode = "off"`.
    pub fn new<'a>(
        l: &LandlockSection,
        workspace: &Path,
        readable: impl IntoIterator<Item = &'a PathBuf>,
        extras: &Extras,
    ) -> Option<Sandbox> {
        if l.mode == LandlockMode::Off {
            return None;
        }
        let mut paths: Vec<(PathBuf, Grant)> = Vec::new();
        let mut add = |p: &Path, g: Grant| {
            if p.exists() {
                paths.push((p.to_path_buf(), g));
            }
        };
        for (root, grant) in SYSTEM_ROOTS {
            add(Path::new(root), *grant);
        }
        for dev in DEVICES {
            add(Path::new(dev), Grant::Device);
        }
        add(workspace, Grant::Full);
        for p in &extras.private {
            add(p, Grant::Full);
        }
        for p in &extras.programs {
            add(p, Grant::ReadExec);
        }
        for p in &extras.read {
            add(p, Grant::Read);
        }
        for p in readable {
            add(p, Grant::Read);
        }
        for p in &l.ro {
            add(p, Grant::Read);
        }
        for p in &l.rox {
            add(p, Grant::ReadExec);
        }
        for p in &l.rw {
            add(p, Grant::Full);
        }
        let mut create = Vec::new();
        let mut not_yet = Vec::new();
        for p in &l.preset_paths {
            let grant = match p.kind {
                Kind::Cache => Grant::Full,
                Kind::LockFile => Grant::Device,
                Kind::Toolchain => Grant::ReadExec,
                Kind::UsageDb | Kind::Config | Kind::Socket => Grant::Read,
            };
            if p.kind.created() {
                // Made when the sandbox is entered, so perhaps not there yet.
                if !p.exists {
                    create.push(Creation {
                        path: p.path.clone(),
                        dir: p.kind == Kind::Cache,
                        optional: true,
                    });
                }
                not_yet.push((p.path.clone(), grant));
            } else {
                add(&p.path, grant);
            }
        }
        paths.extend(not_yet);
        // Created when the sandbox is entered (Sandbox::create_files), so not yet there;
        // granted to the server's layer alone (see Extras::files).
        let mut server_private = extras.server_private.clone();
        for p in &extras.files {
            server_private.push(p.clone());
            create.push(Creation {
                path: p.clone(),
                dir: false,
                optional: false,
            });
        }
        Some(Sandbox {
            mode: l.mode,
            min_abi: l.min_abi,
            paths,
            network: l.network,
            connect: l.connect.clone(),
            server_connect: extras.server_connect.clone(),
            server_write: extras.server_write.clone(),
            server_private,
            server_read: extras.server_read.clone(),
            server_rmdir: extras.server_rmdir.clone(),
            server_devices: false,
            server_roots: Vec::new(),
            bind: l.bind.clone(),
            server_bind: extras.server_bind.clone(),
            proxy_port: None,
            task_connect: Vec::new(),
            create,
            hints: Hints {
                profile: String::new(),
                profile_is_file: false,
                presets: l.presets.clone(),
                catalog: l.preset_catalog.clone(),
                excluded: l.preset_excluded.clone(),
            },
        })
    }

    /// Name the profile that declared these fences, for refusals that say where to
    /// change them (`is_file`: a file one can edit, not the embedded default).
    pub fn declared_in(mut self, profile: String, is_file: bool) -> Sandbox {
        self.hints.profile = profile;
        self.hints.profile_is_file = is_file;
        self
    }

    /// Create what the sandbox grants but may not exist yet (a path that does not exist
    /// when the ruleset is built cannot be granted): preset caches (`mkdir -p`), lock
    /// files and the audit log (empty files). Returns warnings for preset paths that
    /// could not be made (their grant is then skipped); a log file that cannot be
    /// opened is an error.
    pub fn create_files(&self) -> Result<Vec<String>, String> {
        let mut warnings = Vec::new();
        for c in &self.create {
            let made = if c.dir {
                std::fs::create_dir_all(&c.path)
            } else {
                c.path
                    .parent()
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .and_then(|()| {
                        std::fs::OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(&c.path)
                            .map(drop)
                    })
            };
            match made {
                Ok(()) => {}
                Err(e) if c.optional => warnings.push(format!(
                    "cannot create {}: {e}; it is not granted",
                    c.path.display()
                )),
                Err(e) => return Err(format!("cannot open {}: {e}", c.path.display())),
            }
        }
        Ok(warnings)
    }

    /// The grant of the task's layer that lets a task write `path` (an ancestor of it,
    /// or itself, granted more than reading), if any. Landlock cannot take back part of
    /// a granted tree, so whalebox's own state must lie outside every such grant; the
    /// server checks its state against this before it starts.
    pub fn task_writes(&self, path: &Path) -> Option<&Path> {
        let path = resolved(path);
        self.paths
            .iter()
            .filter(|(_, g)| matches!(g, Grant::Full | Grant::Device))
            .map(|(p, _)| p.as_path())
            .find(|granted| path.starts_with(resolved(granted)))
    }

    /// Whether a task's layer grants the listening unix socket `socket` on purpose: it
    /// lies in a tree tasks may write (the workspace, their temporary directory), or a
    /// grant names the socket itself (a preset's daemon socket, a profile's `ro` entry).
    /// A socket reachable only through a directory's read grant (`/run`, `/var`) is not:
    /// the session's mount namespace hides it (see `spaces`), since Landlock before ABI
    /// 9 cannot refuse the connect.
    pub fn grants_socket(&self, socket: &Path) -> bool {
        let socket = resolved(socket);
        self.task_writes(&socket).is_some() || self.paths.iter().any(|(p, _)| resolved(p) == socket)
    }

    /// What applying `layer` on this kernel enforces and drops (nothing is applied).
    pub fn status(&self, layer: Layer) -> Status {
        let abi = kernel_abi();
        let mut enforced = Vec::new();
        let mut dropped = Vec::new();
        for (name, needs) in FEATURES {
            let wanted = match *needs {
                4 => self.network == NetworkMode::Deny,
                6 => layer == Layer::Task,
                _ => true,
            };
            if !wanted {
                continue;
            }
            if abi >= *needs {
                enforced.push(name.to_string());
            } else {
                dropped.push(format!("{name} (needs Landlock ABI {needs})"));
            }
        }
        Status {
            mode: self.mode,
            kernel_abi: abi,
            enforced: if abi == 0 { Vec::new() } else { enforced },
            dropped,
            unavailable: (abi == 0).then(|| {
                crate::runtime::explain(
                    "this kernel has no Landlock (not built in, not enabled at boot with \
                     lsm=…,landlock, or blocked by a container's seccomp profile); only the path \
                     guard and the exec boundary apply",
                )
            }),
        }
    }

    /// Refuse to run when `enforce` cannot be kept on this kernel.
    pub fn check(&self, layer: Layer) -> Result<Status, String> {
        let status = self.status(layer);
        if self.mode == LandlockMode::Enforce {
            if status.kernel_abi < i32::from(self.min_abi) {
                return Err(format!(
                    "[landlock] mode = \"enforce\" needs Landlock ABI {} and this kernel has {}{}; \
                     use a newer kernel, lower min_abi, or set mode = \"best-effort\"",
                    self.min_abi,
                    status.kernel_abi,
                    if status.kernel_abi == 0 {
                        crate::runtime::explain(
                            " (none: not built in, not enabled at boot, or blocked by a container)",
                        )
                    } else {
                        String::new()
                    }
                ));
            }
            if !status.dropped.is_empty() {
                return Err(format!(
                    "[landlock] mode = \"enforce\", but this kernel (Landlock ABI {}) cannot enforce: {}; \
                     use a newer kernel, relax the profile, or set mode = \"best-effort\"",
                    status.kernel_abi,
                    status.dropped.join(", ")
                ));
            }
        }
        Ok(status)
    }

    /// Restrict the calling thread (and every thread and process it starts from now on).
    /// Call it before other threads exist: Landlock applies to the calling thread only.
    /// In best-effort mode a kernel that refuses (a container's seccomp filter, say) is
    /// not an error: the status says nothing is enforced, and why.
    pub fn apply(&self, layer: Layer) -> Result<Status, String> {
        let mut status = self.check(layer)?;
        if status.kernel_abi == 0 {
            return Ok(status);
        }
        match self.restrict(layer) {
            Ok(()) => Ok(status),
            Err(e) if self.mode == LandlockMode::BestEffort => {
                status.dropped.append(&mut status.enforced);
                status.unavailable = Some(format!("the kernel refused the ruleset: {e}"));
                Ok(status)
            }
            Err(e) => Err(e),
        }
    }

    fn restrict(&self, layer: Layer) -> Result<(), String> {
        let abi = ABI::V6;
        let all = AccessFs::from_all(abi);
        let level = if self.mode == LandlockMode::Enforce {
            CompatLevel::HardRequirement
        } else {
            CompatLevel::BestEffort
        };
        let fail = |e: &dyn std::fmt::Display| format!("cannot build the Landlock ruleset: {e}");
        let mut ruleset = Ruleset::default()
            .set_compatibility(level)
            .handle_access(all)
            .map_err(|e| fail(&e))?;
        let proxy_port = self.proxy_port.filter(|_| layer == Layer::Task);
        let deny = self.network == NetworkMode::Deny;
        if deny {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(abi))
                .map_err(|e| fail(&e))?;
        } else if proxy_port.is_some() {
            // Connects only: a task may still listen (its own test servers).
            ruleset = ruleset
                .handle_access(AccessNet::ConnectTcp)
                .map_err(|e| fail(&e))?;
        }
        if layer == Layer::Task {
            ruleset = ruleset.scope(Scope::from_all(abi)).map_err(|e| fail(&e))?;
        }
        let mut created = ruleset.create().map_err(|e| fail(&e))?;
        if layer == Layer::Server {
            for path in &self.server_write {
                let Ok(fd) = PathFd::new(path) else { continue };
                let access = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::ReadDir;
                created = created
                    .add_rule(PathBeneath::new(fd, access))
                    .map_err(|e| format!("cannot fence {}: {e}", path.display()))?;
            }
            for path in &self.server_private {
                let Ok(fd) = PathFd::new(path) else { continue };
                let mut access = all;
                if !path.is_dir() {
                    // A log file: directory rights on a file are an error to the kernel.
                    access &= AccessFs::from_file(abi);
                }
                created = created
                    .add_rule(PathBeneath::new(fd, access))
                    .map_err(|e| format!("cannot fence {}: {e}", path.display()))?;
            }
            if self.server_devices
                && let Ok(fd) = PathFd::new("/dev")
            {
                let access = AccessFs::ReadFile
                    | AccessFs::WriteFile
                    | AccessFs::Truncate
                    | AccessFs::IoctlDev
                    | AccessFs::ReadDir;
                created = created
                    .add_rule(PathBeneath::new(fd, access))
                    .map_err(|e| format!("cannot fence /dev: {e}"))?;
            }
            for (fd, stands_for) in &self.server_roots {
                use std::os::fd::AsFd;
                let is_dir = nix::sys::stat::fstat(fd.as_fd())
                    .is_ok_and(|st| st.st_mode & nix::libc::S_IFMT == nix::libc::S_IFDIR);
                let mut access = self
                    .paths
                    .iter()
                    .filter(|(p, _)| p.starts_with(stands_for))
                    .fold(BitFlags::empty(), |a, (_, g)| a | g.access(abi));
                if access.is_empty() {
                    continue;
                }
                if !is_dir {
                    access &= AccessFs::from_file(abi);
                }
                created = created
                    .add_rule(PathBeneath::new(fd.as_fd(), access))
                    .map_err(|e| format!("cannot fence a session's /proc or terminals: {e}"))?;
            }
            for path in &self.server_rmdir {
                let Ok(fd) = PathFd::new(path) else { continue };
                created = created
                    .add_rule(PathBeneath::new(fd, AccessFs::RemoveDir))
                    .map_err(|e| format!("cannot fence {}: {e}", path.display()))?;
            }
            for path in &self.server_read {
                let Ok(fd) = PathFd::new(path) else { continue };
                let mut access = AccessFs::ReadFile | AccessFs::ReadDir;
                if !path.is_dir() {
                    access &= AccessFs::from_file(abi);
                }
                created = created
                    .add_rule(PathBeneath::new(fd, access))
                    .map_err(|e| format!("cannot fence {}: {e}", path.display()))?;
            }
        }
        for (path, grant) in &self.paths {
            let Ok(fd) = PathFd::new(path) else {
                // Gone since the profile was read: nothing to grant.
                continue;
            };
            let mut access = grant.access(abi);
            if !path.is_dir() {
                // Directory rights on a file are an error to the kernel.
                access &= AccessFs::from_file(abi);
            }
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(|e| format!("cannot fence {}: {e}", path.display()))?;
        }
        if deny || proxy_port.is_some() {
            // Under "deny" the server's own layer also lets the server reach what it
            // fetches itself (the web group's ports, the proxy's doors, the host ports);
            // the commands' layer has only their list, their door and the host ports.
            // (Layers stack, so the server's must include the commands' ports too.)
            let mut ports: Vec<u16> = self.task_connect.clone();
            ports.extend(proxy_port);
            if deny {
                ports.extend(&self.connect);
                if layer == Layer::Server {
                    ports.extend(&self.server_connect);
                }
            }
            ports.sort_unstable();
            ports.dedup();
            for port in &ports {
                created = created
                    .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                    .map_err(|e| fail(&e))?;
            }
        }
        if deny {
            let extra = if layer == Layer::Server {
                &self.server_bind[..]
            } else {
                &[]
            };
            let mut ports: Vec<u16> = self.bind.iter().chain(extra).copied().collect();
            ports.sort_unstable();
            ports.dedup();
            for port in &ports {
                created = created
                    .add_rule(NetPort::new(*port, AccessNet::BindTcp))
                    .map_err(|e| fail(&e))?;
            }
        }
        let applied = created
            .restrict_self()
            .map_err(|e| format!("cannot apply the Landlock ruleset: {e}"))?;
        if self.mode == LandlockMode::Enforce && applied.ruleset != RulesetStatus::FullyEnforced {
            return Err(format!(
                "[landlock] mode = \"enforce\", but the kernel enforced the ruleset only {:?}",
                applied.ruleset
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod socket_tests {
    use super::*;

    #[test]
    fn a_socket_is_granted_by_a_writable_tree_or_by_name_not_by_a_broad_read() {
        let sandbox: Sandbox = serde_json::from_value(serde_json::json!({
            "mode": "best-effort", "min_abi": 1, "network": "allow", "connect": [], "bind": [],
            "paths": [["/work", "full"], ["/run", "read"], ["/nix/var/nix/daemon-socket/socket", "read"],
                      ["/var/run/kept.sock", "read"]],
        }))
        .unwrap();
        assert!(sandbox.grants_socket(Path::new("/work/app.sock")));
        assert!(sandbox.grants_socket(Path::new("/nix/var/nix/daemon-socket/socket")));
        assert!(sandbox.grants_socket(Path::new("/var/run/kept.sock")));
        assert!(!sandbox.grants_socket(Path::new("/run/docker.sock")));
        assert!(!sandbox.grants_socket(Path::new("/run/user/0/bus")));
    }
}
