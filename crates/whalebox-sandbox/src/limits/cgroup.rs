//! A cgroup per task, where whalebox may create one: the pids and memory controllers,
//! each from the unified hierarchy (cgroup v2) where it is there and can be delegated
//! below the server's own cgroup, else from its v1 hierarchy (a hybrid host). Each
//! controller gets a directory of this server's, `whalebox-PID`, under the server's own
//! cgroup, made once ([`Cgroups::here`]); each task a directory below it, made before
//! the task starts ([`Cgroups::create`]), which the task's first process joins between
//! fork and exec (see [`super::ChildSetup`]) and the server empties and removes when the
//! task ended ([`TaskCgroup::remove`]). Its counters say which limit the task hit
//! ([`TaskCgroup::events`]).
//!
//! Where none can be made (no root, a read-only `/sys/fs/cgroup`, a container) the
//! reason is kept for `whalebox doctor`, and tasks get rlimits alone. Directories a
//! killed server left behind are removed by the next one.
//!
//! One file of some 700 lines, a third of them tests: finding the hierarchies, making
//! the server's directories and the tasks' are one mechanism, and its tests share their
//! stand-in trees.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use serde::Serialize;

/// Which hierarchy a controller comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Version {
    V1,
    V2,
}

/// One controller this server may use: its directory of the server's own.
#[derive(Debug, Clone, Serialize)]
pub struct Controller {
    pub version: Version,
    /// `<the server's cgroup>/whalebox-PID`.
    pub dir: PathBuf,
}

/// The controllers found for this server, or why each is missing.
#[derive(Debug, Clone, Serialize)]
pub struct Cgroups {
    pub pids: Result<Controller, String>,
    pub memory: Result<Controller, String>,
}

const CONTROLLERS: [&str; 2] = ["pids", "memory"];

static HERE: OnceLock<Cgroups> = OnceLock::new();

impl Cgroups {
    /// This server's controllers, found (and its directories made) once per process.
    /// Call it before the server enters its Landlock layer, which must let it write
    /// [`Cgroups::dirs`].
    pub fn here() -> &'static Cgroups {
        HERE.get_or_init(|| {
            let found = Hierarchies::read();
            let name = format!("whalebox-{}", std::process::id());
            let [pids, memory] = CONTROLLERS.map(|c| found.controller(c, &name));
            Cgroups { pids, memory }
        })
    }

    /// The controllers, if [`Cgroups::here`] looked for them.
    pub fn made() -> Option<&'static Cgroups> {
        HERE.get()
    }

    /// The directories the server's Landlock layer must let it write (make and remove
    /// the tasks' cgroups in).
    pub fn dirs(&self) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        for c in [&self.pids, &self.memory].into_iter().flatten() {
            if !dirs.contains(&c.dir) {
                dirs.push(c.dir.clone());
            }
        }
        dirs
    }

    /// Whether any controller can be used.
    pub fn any(&self) -> bool {
        self.pids.is_ok() || self.memory.is_ok()
    }

    /// Make the cgroup of task `name` with the `processes` and `memory` limits the
    /// controllers found can keep (None: that limit is not asked for). The cgroup
    /// covers what it says ([`TaskCgroup::pids`], [`TaskCgroup::memory`]).
    pub fn create(
        &self,
        name: &str,
        processes: Option<u64>,
        memory: Option<u64>,
    ) -> Result<TaskCgroup, String> {
        let mut task = TaskCgroup::default();
        let wanted = [
            (&self.pids, processes.is_some()),
            (&self.memory, memory.is_some()),
        ];
        for (controller, want) in wanted {
            let Ok(c) = controller else { continue };
            if !want {
                continue;
            }
            let dir = c.dir.join(name);
            if !task.dirs.iter().any(|(d, _)| *d == dir) {
                if !c.dir.is_dir() {
                    // Another session's clean-up took it away: make it again.
                    make_parent(&c.dir, c.version)?;
                }
                std::fs::create_dir(&dir).map_err(|e| {
                    task.remove();
                    format!("cannot create the cgroup {}: {e}", dir.display())
                })?;
                task.dirs.push((dir, c.version));
            }
        }
        let set = |dir: &Path, file: &str, value: u64| {
            std::fs::write(dir.join(file), value.to_string())
                .map_err(|e| format!("cannot set {}/{file}: {e}", dir.display()))
        };
        let result = (|| {
            if let (Ok(c), Some(n)) = (&self.pids, processes) {
                let dir = c.dir.join(name);
                set(&dir, "pids.max", n)?;
                task.pids = Some(dir);
            }
            if let (Ok(c), Some(n)) = (&self.memory, memory) {
                let dir = c.dir.join(name);
                match c.version {
                    Version::V2 => set(&dir, "memory.max", n)?,
                    Version::V1 => set(&dir, "memory.limit_in_bytes", n)?,
                }
                task.memory = Some((dir, c.version));
            }
            Ok(())
        })();
        match result {
            Ok(()) => Ok(task),
            Err(e) => {
                task.remove();
                Err(e)
            }
        }
    }

    /// Remove this server's directories, if they were made and no task's is left in
    /// them: at the process's end (the server's Landlock layer lets it make tasks'
    /// directories in them, not make them again).
    pub fn release() {
        if let Some(c) = HERE.get() {
            for dir in c.dirs() {
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
}

/// One task's cgroup: one directory per hierarchy (one in all under v2).
#[derive(Debug, Default)]
pub struct TaskCgroup {
    dirs: Vec<(PathBuf, Version)>,
    /// The directory whose `pids.max` holds the task's process limit.
    pids: Option<PathBuf>,
    /// The directory holding its memory limit.
    memory: Option<(PathBuf, Version)>,
}

/// What a task's cgroup counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Events {
    /// Forks and clones refused at `pids.max`.
    pub forks_refused: u64,
    /// Processes the kernel killed at the memory limit.
    pub oom_kills: u64,
    /// The most memory the task used at once, in bytes (where the kernel says).
    pub memory_peak: Option<u64>,
}

impl TaskCgroup {
    /// The directories whose `cgroup.procs` the task's first process writes itself to.
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|(d, _)| d.clone()).collect()
    }

    /// Whether the cgroup keeps the process limit.
    pub fn pids(&self) -> bool {
        self.pids.is_some()
    }

    /// Whether the cgroup keeps the memory limit.
    pub fn memory(&self) -> bool {
        self.memory.is_some()
    }

    /// The counters so far.
    pub fn events(&self) -> Events {
        let mut e = Events::default();
        if let Some(dir) = &self.pids {
            e.forks_refused = field(&dir.join("pids.events"), "max").unwrap_or(0);
        }
        if let Some((dir, version)) = &self.memory {
            match version {
                Version::V2 => {
                    e.oom_kills = field(&dir.join("memory.events"), "oom_kill").unwrap_or(0);
                    e.memory_peak = number(&dir.join("memory.peak"));
                }
                Version::V1 => {
                    e.oom_kills = field(&dir.join("memory.oom_control"), "oom_kill").unwrap_or(0);
                    e.memory_peak = number(&dir.join("memory.max_usage_in_bytes"));
                }
            }
        }
        e
    }

    /// SIGKILL every process in the cgroup, until none is left (or a few seconds went).
    pub fn kill(&self) {
        for (dir, version) in &self.dirs {
            if *version == Version::V2 && std::fs::write(dir.join("cgroup.kill"), "1").is_ok() {
                continue;
            }
            for _ in 0..2000 {
                let pids = members(dir);
                if pids.is_empty() {
                    break;
                }
                for pid in pids {
                    // SAFETY: kill with plain arguments.
                    unsafe { nix::libc::kill(pid, nix::libc::SIGKILL) };
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    /// Kill what is left and remove the directories (a killed process leaves its cgroup
    /// once it is reaped, so this waits for that a while).
    pub fn remove(&self) {
        self.kill();
        for (dir, _) in &self.dirs {
            for _ in 0..300 {
                match std::fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(_) => {
                        self.kill();
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
            }
        }
    }
}

/// The processes in a cgroup directory.
fn members(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// `key N` from a flat-keyed file.
fn field(path: &Path, key: &str) -> Option<u64> {
    std::fs::read_to_string(path)
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
}

fn number(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The memory limit of the cgroup this process is in (v2 `memory.max`, else v1
/// `memory.limit_in_bytes`), None when there is none.
pub fn own_memory_limit() -> Option<u64> {
    let h = Hierarchies::read();
    let (base, version) = h.own("memory")?;
    let file = match version {
        Version::V2 => "memory.max",
        Version::V1 => "memory.limit_in_bytes",
    };
    // "max", or v1's "no limit" (the largest page-aligned i64).
    number(&base.join(file)).filter(|&n| n < (1 << 62))
}

/// The mounted cgroup hierarchies and this process's place in each.
struct Hierarchies {
    /// The unified hierarchy's mount point and this process's directory in it.
    v2: Option<PathBuf>,
    /// v1: (controllers, this process's directory).
    v1: Vec<(Vec<String>, PathBuf)>,
}

impl Hierarchies {
    fn read() -> Hierarchies {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        Hierarchies::from_texts(&mountinfo, &own)
    }

    fn from_texts(mountinfo: &str, own: &str) -> Hierarchies {
        // mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS... - FSTYPE SOURCE SUPEROPTS
        let mut mounts: Vec<(String, String, String, Vec<String>)> = Vec::new();
        for line in mountinfo.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let Some(dash) = fields.iter().position(|f| *f == "-") else {
                continue;
            };
            let (Some(root), Some(point), Some(fstype), Some(opts)) = (
                fields.get(3),
                fields.get(4),
                fields.get(dash + 1),
                fields.get(dash + 3),
            ) else {
                continue;
            };
            if *fstype == "cgroup" || *fstype == "cgroup2" {
                mounts.push((
                    fstype.to_string(),
                    unescape(root),
                    unescape(point),
                    opts.split(',').map(str::to_string).collect(),
                ));
            }
        }
        let under = |root: &str, point: &str, path: &str| -> Option<PathBuf> {
            // The process's path is from the hierarchy's root; the mount shows `root`.
            let rel = path.strip_prefix(root.trim_end_matches('/'))?;
            if rel.contains("/..") {
                return None;
            }
            let rel = rel.trim_start_matches('/');
            Some(if rel.is_empty() {
                PathBuf::from(point)
            } else {
                Path::new(point).join(rel)
            })
        };
        let mut h = Hierarchies {
            v2: None,
            v1: Vec::new(),
        };
        for line in own.lines() {
            let mut parts = line.splitn(3, ':');
            let (Some(_), Some(names), Some(path)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            if names.is_empty() {
                h.v2 = mounts
                    .iter()
                    .filter(|m| m.0 == "cgroup2")
                    .find_map(|m| under(&m.1, &m.2, path));
                continue;
            }
            let names: Vec<String> = names.split(',').map(str::to_string).collect();
            if let Some(dir) = mounts
                .iter()
                .filter(|m| m.0 == "cgroup" && names.iter().all(|n| m.3.contains(n)))
                .find_map(|m| under(&m.1, &m.2, path))
            {
                h.v1.push((names, dir));
            }
        }
        h
    }

    /// This process's directory of the hierarchy that has `controller`.
    fn own(&self, controller: &str) -> Option<(PathBuf, Version)> {
        if let Some(dir) = &self.v2
            && words(&dir.join("cgroup.controllers")).contains(&controller.to_string())
        {
            return Some((dir.clone(), Version::V2));
        }
        self.v1
            .iter()
            .find(|(names, _)| names.iter().any(|n| n == controller))
            .map(|(_, dir)| (dir.clone(), Version::V1))
    }

    /// This server's directory `name` for `controller`, made now; or why there is none.
    fn controller(&self, controller: &str, name: &str) -> Result<Controller, String> {
        let mut why = Vec::new();
        if let Some(base) = &self.v2 {
            if words(&base.join("cgroup.controllers")).contains(&controller.to_string()) {
                match delegate_v2(base, controller, name) {
                    Ok(dir) => {
                        return Ok(Controller {
                            version: Version::V2,
                            dir,
                        });
                    }
                    Err(e) => why.push(format!("cgroup v2: {e}")),
                }
            } else {
                why.push(format!(
                    "cgroup v2 ({}) does not offer {controller} here",
                    base.display()
                ));
            }
        }
        match self
            .v1
            .iter()
            .find(|(names, _)| names.iter().any(|n| n == controller))
        {
            Some((_, base)) => {
                sweep(base);
                let dir = base.join(name);
                match make_parent(&dir, Version::V1) {
                    Ok(()) => {
                        return Ok(Controller {
                            version: Version::V1,
                            dir,
                        });
                    }
                    Err(e) => why.push(format!("cgroup v1: {e}")),
                }
            }
            None => why.push(format!("no cgroup v1 {controller} hierarchy is mounted")),
        }
        Err(why.join("; "))
    }
}

/// Under v2: `controller` enabled for the children of the server's cgroup (possible for
/// pids in a cgroup with processes; memory only where the cgroup has none but its
/// children, as with a delegated, empty parent), then this server's directory.
fn delegate_v2(base: &Path, controller: &str, name: &str) -> Result<PathBuf, String> {
    let control = base.join("cgroup.subtree_control");
    if !words(&control).contains(&controller.to_string()) {
        std::fs::write(&control, format!("+{controller}"))
            .map_err(|e| format!("cannot enable {controller} below {} ({e})", base.display()))?;
    }
    sweep(base);
    let dir = base.join(name);
    make_parent(&dir, Version::V2)?;
    let control = dir.join("cgroup.subtree_control");
    if !words(&control).contains(&controller.to_string()) {
        std::fs::write(&control, format!("+{controller}"))
            .map_err(|e| format!("cannot enable {controller} in {} ({e})", dir.display()))?;
    }
    Ok(dir)
}

/// Make this server's directory (and, under v2, hand its children the controllers it
/// has).
fn make_parent(dir: &Path, version: Version) -> Result<(), String> {
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {} ({e})", dir.display())),
    }
    if version == Version::V2 {
        let have = words(&dir.join("cgroup.controllers"));
        let control = dir.join("cgroup.subtree_control");
        for c in CONTROLLERS {
            if have.contains(&c.to_string()) && !words(&control).contains(&c.to_string()) {
                let _ = std::fs::write(&control, format!("+{c}"));
            }
        }
    }
    Ok(())
}

/// Remove the directories of servers that are gone (killed before they could).
fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("whalebox-"))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: kill with signal 0 only asks whether the process exists.
        let gone = unsafe { nix::libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(nix::libc::ESRCH);
        if !gone {
            continue;
        }
        let dir = entry.path();
        if let Ok(tasks) = std::fs::read_dir(&dir) {
            for t in tasks.flatten().filter(|t| t.path().is_dir()) {
                let version = if dir.join("cgroup.controllers").exists() {
                    Version::V2
                } else {
                    Version::V1
                };
                TaskCgroup {
                    dirs: vec![(t.path(), version)],
                    pids: None,
                    memory: None,
                }
                .remove();
            }
        }
        let _ = std::fs::remove_dir(&dir);
    }
}

fn words(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 4], 8)
        {
            out.push(v as char);
            i += 4;
            continue;
        }
        out.push(b[i] as char);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID_MOUNTS: &str = "\
30 24 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
32 30 0:28 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
33 30 0:29 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
34 30 0:30 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
";

    #[test]
    fn a_hybrid_host_has_each_controller_where_v1_mounts_it() {
        let own = "8:pids:/\n4:memory:/process_api/abc\n2:cpu,cpuacct:/x\n0::/\n";
        let h = Hierarchies::from_texts(HYBRID_MOUNTS, own);
        assert_eq!(h.v2, Some(PathBuf::from("/sys/fs/cgroup/unified")));
        assert!(h.v1.contains(&(vec!["pids".into()], "/sys/fs/cgroup/pids".into())));
        assert!(h.v1.contains(&(
            vec!["memory".into()],
            "/sys/fs/cgroup/memory/process_api/abc".into()
        )));
        assert!(h.v1.contains(&(
            vec!["cpu".into(), "cpuacct".into()],
            "/sys/fs/cgroup/cpu,cpuacct/x".into()
        )));
    }

    #[test]
    fn a_container_sees_its_own_cgroup_as_the_mount_root() {
        let mounts = "40 30 0:27 /kubepods/pod1 /sys/fs/cgroup ro,relatime - cgroup2 cgroup2 rw\n";
        let h = Hierarchies::from_texts(mounts, "0::/kubepods/pod1/app\n");
        assert_eq!(h.v2, Some(PathBuf::from("/sys/fs/cgroup/app")));
        // A path outside the mount cannot be reached.
        let h = Hierarchies::from_texts(mounts, "0::/elsewhere\n");
        assert_eq!(h.v2, None);
    }

    /// A directory tree standing in for cgroupfs (its control files are plain files, so
    /// writing "+pids" replaces what they said: enough to see which files are used).
    fn fake(dir: &Path, files: &[(&str, &str)]) {
        std::fs::create_dir_all(dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }

    #[test]
    fn v2_is_used_where_it_offers_the_controller_and_v1_where_it_does_not() {
        let top = tempfile::tempdir().unwrap();
        let v2 = top.path().join("unified/app");
        let v1 = top.path().join("memory/app");
        fake(
            &v2,
            &[
                ("cgroup.controllers", "cpu pids"),
                ("cgroup.subtree_control", ""),
            ],
        );
        fake(&v1, &[]);
        let h = Hierarchies {
            v2: Some(v2.clone()),
            v1: vec![(vec!["memory".into()], v1.clone())],
        };
        let pids = h.controller("pids", "whalebox-1").unwrap();
        assert_eq!(pids.version, Version::V2);
        assert_eq!(pids.dir, v2.join("whalebox-1"));
        // The server's cgroup was asked to hand pids to its children.
        assert_eq!(
            std::fs::read_to_string(v2.join("cgroup.subtree_control")).unwrap(),
            "+pids"
        );
        let memory = h.controller("memory", "whalebox-1").unwrap();
        assert_eq!(memory.version, Version::V1);
        assert_eq!(memory.dir, v1.join("whalebox-1"));
        assert!(memory.dir.is_dir());
        // Neither hierarchy has it: why, from both.
        let why = h.controller("rdma", "whalebox-1").unwrap_err();
        assert!(
            why.contains("does not offer rdma") && why.contains("no cgroup v1 rdma"),
            "{why}"
        );
    }

    #[test]
    fn a_tasks_cgroup_sets_each_version_s_files() {
        let top = tempfile::tempdir().unwrap();
        // v2: one directory keeps both limits.
        let v2 = top.path().join("whalebox-1");
        fake(&v2, &[]);
        let both = Controller {
            version: Version::V2,
            dir: v2.clone(),
        };
        let cgroups = Cgroups {
            pids: Ok(both.clone()),
            memory: Ok(both),
        };
        let task = cgroups.create("t1", Some(64), Some(1 << 30)).unwrap();
        assert_eq!(task.dirs(), vec![v2.join("t1")]);
        assert!(task.pids() && task.memory());
        assert_eq!(
            std::fs::read_to_string(v2.join("t1/pids.max")).unwrap(),
            "64"
        );
        assert_eq!(
            std::fs::read_to_string(v2.join("t1/memory.max")).unwrap(),
            "1073741824"
        );
        std::fs::write(v2.join("t1/pids.events"), "max 7\n").unwrap();
        std::fs::write(v2.join("t1/memory.events"), "max 3\noom 1\noom_kill 2\n").unwrap();
        std::fs::write(v2.join("t1/memory.peak"), "1000\n").unwrap();
        assert_eq!(
            task.events(),
            Events {
                forks_refused: 7,
                oom_kills: 2,
                memory_peak: Some(1000)
            }
        );
        // v1: a directory per hierarchy; memory off: only pids.
        let (p, m) = (
            top.path().join("pids/whalebox-1"),
            top.path().join("memory/whalebox-1"),
        );
        fake(&p, &[]);
        fake(&m, &[]);
        let cgroups = Cgroups {
            pids: Ok(Controller {
                version: Version::V1,
                dir: p.clone(),
            }),
            memory: Ok(Controller {
                version: Version::V1,
                dir: m.clone(),
            }),
        };
        let task = cgroups.create("t2", Some(64), Some(1 << 30)).unwrap();
        assert_eq!(task.dirs(), vec![p.join("t2"), m.join("t2")]);
        assert_eq!(
            std::fs::read_to_string(m.join("t2/memory.limit_in_bytes")).unwrap(),
            "1073741824"
        );
        let task = cgroups.create("t3", Some(64), None).unwrap();
        assert_eq!(task.dirs(), vec![p.join("t3")]);
        assert!(task.pids() && !task.memory());
    }

    #[test]
    fn flat_keyed_files_are_read_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("memory.events");
        std::fs::write(&f, "low 0\nhigh 0\nmax 12\noom 1\noom_kill 3\n").unwrap();
        assert_eq!(field(&f, "oom_kill"), Some(3));
        assert_eq!(field(&f, "oom"), Some(1));
        assert_eq!(field(&f, "max"), Some(12));
        assert_eq!(field(&f, "missing"), None);
    }
}
