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

use crate::profile::{LandlockMode, NetworkMode, Profile};

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

/// The fences, built from a profile; serialized to hand them to a task's supervisor.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sandbox {
    pub mode: LandlockMode,
    pub min_abi: u8,
    pub paths: Vec<(PathBuf, Grant)>,
    pub network: NetworkMode,
    pub connect: Vec<u16>,
    pub bind: Vec<u16>,
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

    /// One line for people and models: what holds and what does not.
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
    /// by [`Sandbox::create_files`] just before the server enters the sandbox.
    pub files: Vec<PathBuf>,
}

impl Sandbox {
    /// The fences a profile declares, or `None` when `[landlock] mode = "off"`.
    pub fn from_profile(profile: &Profile, extras: &Extras) -> Option<Sandbox> {
        let l = &profile.landlock;
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
        add(&profile.workspace, Grant::Full);
        for p in &extras.private {
            add(p, Grant::Full);
        }
        for p in &extras.programs {
            add(p, Grant::ReadExec);
        }
        for p in profile.read_roots.iter().chain(&profile.skills.dirs) {
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
        // Created when the sandbox is entered (Sandbox::create_files), so not yet there.
        for p in &extras.files {
            paths.push((p.clone(), Grant::Device));
        }
        Some(Sandbox {
            mode: l.mode,
            min_abi: l.min_abi,
            paths,
            network: l.network,
            connect: l.connect.clone(),
            bind: l.bind.clone(),
        })
    }

    /// Create the single files the sandbox grants (an empty file if missing): a file
    /// that does not exist when the ruleset is built cannot be granted.
    pub fn create_files(&self) -> Result<(), String> {
        for (path, grant) in &self.paths {
            if *grant == Grant::Device && !path.starts_with("/dev") {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
            }
        }
        Ok(())
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
                "this kernel has no Landlock (not built in, not enabled at boot with lsm=…,landlock, \
                 or blocked by a container's seccomp profile); only the path guard and the exec \
                 boundary apply"
                    .to_string()
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
                        " (none: not built in, not enabled at boot, or blocked by a container)"
                    } else {
                        ""
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
        if self.network == NetworkMode::Deny {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(abi))
                .map_err(|e| fail(&e))?;
        }
        if layer == Layer::Task {
            ruleset = ruleset.scope(Scope::from_all(abi)).map_err(|e| fail(&e))?;
        }
        let mut created = ruleset.create().map_err(|e| fail(&e))?;
        for (path, grant) in &self.paths {
            let Ok(fd) = PathFd::new(path) else {
                // Gone since the profile was read: nothing to grant.
                continue;
            };
            let mut access: BitFlags<AccessFs> = match grant {
                Grant::Read => AccessFs::ReadFile | AccessFs::ReadDir,
                Grant::ReadExec => AccessFs::from_read(abi),
                Grant::Full => all,
                Grant::Device => {
                    AccessFs::ReadFile
                        | AccessFs::WriteFile
                        | AccessFs::Truncate
                        | AccessFs::IoctlDev
                        | AccessFs::ReadDir
                }
            };
            if !path.is_dir() {
                // Directory rights on a file are an error to the kernel.
                access &= AccessFs::from_file(abi);
            }
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(|e| format!("cannot fence {}: {e}", path.display()))?;
        }
        if self.network == NetworkMode::Deny {
            for port in &self.connect {
                created = created
                    .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                    .map_err(|e| fail(&e))?;
            }
            for port in &self.bind {
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

    /// Which sets cover `path`, to explain a permission error.
    pub fn explain(&self, path: &Path) -> String {
        let list = |want: &[Grant]| -> String {
            let v: Vec<String> = self
                .paths
                .iter()
                .filter(|(p, g)| want.contains(g) && !p.starts_with("/dev"))
                .map(|(p, _)| p.display().to_string())
                .collect();
            v.join(", ")
        };
        let covering: Vec<&(PathBuf, Grant)> = self
            .paths
            .iter()
            .filter(|(p, _)| path.starts_with(p))
            .collect();
        if covering.is_empty() {
            format!(
                "{} is outside every sandbox root: writes are allowed only under {}; \
                 reads also under {}. This path is not in any read root; add it to read_roots \
                 (read-only) or to [landlock] ro / rox / rw in the profile",
                path.display(),
                list(&[Grant::Full]),
                list(&[Grant::Read, Grant::ReadExec])
            )
        } else if covering
            .iter()
            .all(|(_, g)| *g != Grant::Full && *g != Grant::Device)
        {
            format!(
                "{} is read-only in the sandbox: writes are allowed only under {}",
                path.display(),
                list(&[Grant::Full])
            )
        } else {
            format!(
                "{} is writable in the sandbox, so the error has another cause (file mode, owner)",
                path.display()
            )
        }
    }
}
