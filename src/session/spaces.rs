//! A session's namespaces (see `guard::spaces`): the factory started before the server
//! enters its fences; the pool of session slots, each a `/dev/shm` directory and the
//! namespaces made for it then (a PID namespace with its own `/proc`, a devpts of its
//! own), which the server's Landlock layer names; the slot a session takes with its
//! first task (or a holder made then, past the slots); and the socket its tasks'
//! supervisors join through.

use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::guard::spaces::{Factory, Made, Spaces, Wanted};

use super::Env;

/// The factory, started once per process before Landlock (None: it could not start,
/// and sessions get no namespaces).
static FACTORY: OnceLock<Option<Factory>> = OnceLock::new();

/// Start the factory (call before the server enters its Landlock fences).
pub(super) fn start_factory() {
    FACTORY.get_or_init(|| {
        match std::env::current_exe().and_then(|exe| Factory::start(&exe)) {
            Ok(f) => Some(f),
            Err(e) => {
                tracing::warn!(
                    "cannot start the namespace factory ({e}): commands get no namespaces of their session"
                );
                None
            }
        }
    });
}

/// The factory, if it runs.
pub(super) fn factory() -> Option<&'static Factory> {
    FACTORY.get().and_then(Option::as_ref)
}

/// Whether the factory runs (it does once a server entered its sandbox; `whalebox
/// doctor` never starts one, and asks a probe instead).
pub(super) fn factory_running() -> bool {
    FACTORY.get().is_some_and(Option::is_some)
}

/// The slots of a server's sessions, one per session it may hold, made before the
/// server enters its fences: each a `/dev/shm` directory (its Landlock layer grants each
/// by name: a bind mount's files are judged by the rules on the mounted directory
/// itself, not on its parents) and, where the machine allows, the namespaces made for
/// it then (its `/proc` and terminals are mounted over the machine's, which only a rule
/// on their own roots reaches: the layer names them by descriptor). A session past them
/// gets no `/dev/shm` (it stays closed, and it says so).
#[derive(Debug)]
pub struct Slots {
    dirs: Vec<PathBuf>,
    /// Each slot's namespaces, reused by one session after another.
    spaces: Vec<Option<Arc<Spaces>>>,
    taken: Mutex<Vec<bool>>,
}

impl Slots {
    /// `count` directories under `root` (the server's private directory).
    pub(super) fn create(root: &Path, count: usize) -> std::io::Result<Slots> {
        use std::os::unix::fs::PermissionsExt;
        let base = root.join("shm");
        std::fs::create_dir_all(&base)?;
        let mut dirs = Vec::with_capacity(count);
        for i in 0..count {
            let dir = base.join(i.to_string());
            std::fs::create_dir_all(&dir)?;
            // As /dev/shm itself: anyone in the session may make objects, and remove only
            // their own.
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777))?;
            dirs.push(dir);
        }
        Ok(Slots {
            taken: Mutex::new(vec![false; count]),
            spaces: vec![None; count],
            dirs,
        })
    }

    pub(super) fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Make each slot's namespaces ahead (`wanted` without its `/dev/shm` directory,
    /// which is the slot's). What the machine does not allow is said once.
    pub(super) fn make_spaces(&mut self, factory: &Factory, wanted: &Wanted) {
        let mut said = false;
        for (dir, spaces) in self.dirs.iter().zip(&mut self.spaces) {
            let wanted = Wanted {
                shm: Some(dir.clone()),
                ..wanted.clone()
            };
            match factory.make(&wanted) {
                Ok(made) => {
                    if !said {
                        for why in made.why_not() {
                            tracing::info!("session namespaces: {why}");
                        }
                        said = true;
                    }
                    *spaces = Some(Arc::new(made));
                }
                Err(e) => {
                    tracing::warn!("cannot make a session's namespaces ahead: {e}");
                    break;
                }
            }
        }
    }

    /// The roots the server's layer must name for the slots' `/proc` and terminals,
    /// each with the machine's path it stands in for.
    pub(super) fn roots(&self) -> Vec<(Arc<std::os::fd::OwnedFd>, PathBuf)> {
        self.spaces
            .iter()
            .flatten()
            .flat_map(|s| s.roots())
            .filter_map(|(root, fd)| {
                let fd = fd.try_clone_to_owned().ok()?;
                Some((Arc::new(fd), PathBuf::from(root.stands_for())))
            })
            .collect()
    }

    /// Whether every slot has terminals of its own the server's layer names (else the
    /// layer must grant `/dev` for the sessions that make theirs later).
    pub(super) fn all_terminals_named(&self) -> bool {
        use crate::guard::spaces::Root;
        self.spaces.iter().all(|s| {
            s.as_ref()
                .is_some_and(|s| s.roots().iter().any(|(r, _)| *r == Root::Terminals))
        })
    }

    fn take(self: &Arc<Self>) -> Option<Slot> {
        let mut taken = self.taken.lock().ok()?;
        let i = taken.iter().position(|t| !t)?;
        taken[i] = true;
        Some(Slot {
            pool: Arc::clone(self),
            index: i,
        })
    }
}

/// A session's slot: its `/dev/shm` directory, emptied, and its namespaces, given back
/// when the session ends.
#[derive(Debug)]
struct Slot {
    pool: Arc<Slots>,
    index: usize,
}

impl Slot {
    fn dir(&self) -> &Path {
        &self.pool.dirs[self.index]
    }

    /// The namespaces made for the slot ahead, if any.
    fn spaces(&self) -> Option<&Arc<Spaces>> {
        self.pool.spaces[self.index].as_ref()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // What the session's tasks left there (they are gone: the session ended). A
        // directory a task made unreadable is opened up first; what still cannot go (an
        // immutable file a root task made) retires the slot: the next session must not
        // find anything of this one's.
        let emptied = empty(self.dir()) || {
            open_up(self.dir());
            empty(self.dir())
        };
        if !emptied {
            tracing::warn!(
                "{} could not be emptied: it is not given to another session",
                self.dir().display()
            );
            return;
        }
        if let Ok(mut taken) = self.pool.taken.lock() {
            taken[self.index] = false;
        }
    }
}

/// Remove everything in `dir` (never following a link); whether it is empty now.
fn empty(dir: &Path) -> bool {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let path = e.path();
            // remove_dir_all does not follow symbolic links.
            let _ = match e.file_type() {
                Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
                _ => std::fs::remove_file(&path),
            };
        }
    }
    match std::fs::read_dir(dir) {
        Ok(mut d) => d.next().is_none(),
        // Gone with the server's private directory: nothing of the session is left.
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// Give the owner every right on the directories under `dir` (not following links), so
/// that their entries can be removed.
fn open_up(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            let path = e.path();
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700));
            open_up(&path);
        }
    }
}

/// A session's namespaces and the socket its tasks join them through.
#[derive(Debug)]
pub struct SessionSpaces {
    pub spaces: Arc<Spaces>,
    /// The supervisor's `--join` value.
    join: crate::shell::supervisor::Join,
    socket: PathBuf,
    slot: Option<Slot>,
    /// Set when the session ends: the join thread stops.
    ended: Arc<AtomicBool>,
}

impl SessionSpaces {
    pub fn made(&self) -> Made {
        self.spaces.made()
    }

    /// The session's `/dev/shm` directory, when its tasks see it there.
    pub fn shm_dir(&self) -> Option<&Path> {
        self.slot
            .as_ref()
            .filter(|_| self.spaces.made().mount)
            .map(Slot::dir)
    }
}

impl Drop for SessionSpaces {
    fn drop(&mut self) {
        // Wakes the join thread, which then finds the session gone and ends.
        self.ended.store(true, Ordering::SeqCst);
        let _ = UnixStream::connect(&self.socket);
        let _ = std::fs::remove_file(&self.socket);
        // Whatever of the session still runs (a daemon that outlived its task) goes
        // before its /dev/shm is emptied and its slot given to another session: what is
        // in its PID namespace by its first process (atomically, forks included), the
        // supervisors outside it here, then once more what one of them forked between.
        let pid_namespace = self.spaces.made().pid;
        let end_tasks = || {
            if pid_namespace && let Err(e) = self.spaces.end_tasks() {
                tracing::warn!("the session's processes could not all be ended: {e}");
            }
        };
        end_tasks();
        end_leftovers(&self.spaces.identities(), self.spaces.pid());
        end_tasks();
    }
}

/// SIGKILL every process in one of `namespaces` (a session's network or mount
/// namespace) but the holder, which leaves by itself, and those in its PID namespace,
/// which the holder ends ([`Spaces::end_tasks`]).
fn end_leftovers(namespaces: &[crate::guard::spaces::Identity], holder: i32) {
    use std::os::unix::fs::MetadataExt;
    let ours: Vec<(u64, u64)> = namespaces
        .iter()
        .filter(|n| n.kind == 'n' || n.kind == 'm')
        .map(|n| (n.dev, n.ino))
        .collect();
    if ours.is_empty() {
        return;
    }
    let pid_namespace = namespaces
        .iter()
        .find(|n| n.kind == 'p')
        .map(|n| (n.dev, n.ino));
    let in_pid_namespace = |pid: i32| {
        pid_namespace.is_some_and(|ns| {
            std::fs::metadata(format!("/proc/{pid}/ns/pid")).is_ok_and(|m| (m.dev(), m.ino()) == ns)
        })
    };
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if pid == holder || pid == std::process::id() as i32 || in_pid_namespace(pid) {
            continue;
        }
        let inside = ["net", "mnt"].iter().any(|ns| {
            std::fs::metadata(format!("/proc/{pid}/ns/{ns}"))
                .is_ok_and(|m| ours.contains(&(m.dev(), m.ino())))
        });
        if inside {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

impl Env {
    /// The session's namespaces, made with its first task: Err says why there are none
    /// (no factory, or the holder could not make any).
    pub fn spaces(&self) -> Result<Arc<SessionSpaces>, String> {
        self.spaces
            .get_or_init(|| self.make_spaces().map(Arc::new))
            .clone()
    }

    fn make_spaces(&self) -> Result<SessionSpaces, String> {
        let factory = factory()
            .ok_or("no namespace factory (it starts with the server, before its fences)")?;
        let slot = self.slots.get().and_then(Slots::take);
        let hide = match &slot {
            Some(_) => self.sockets_to_hide(),
            None => Vec::new(),
        };
        let spaces = match slot.as_ref().and_then(Slot::spaces) {
            Some(ahead) => {
                // Listening sockets made on the machine since the slot was.
                if let Err(e) = ahead.hide(&hide) {
                    tracing::info!("session namespaces: {e}");
                }
                if let Err(e) = ahead.new_session(self.wanted_spaces().network) {
                    tracing::warn!("session namespaces: {e}");
                }
                Arc::clone(ahead)
            }
            None => {
                let wanted = Wanted {
                    shm: slot.as_ref().map(|s| s.dir().to_path_buf()),
                    hide,
                    // A devpts or procfs mounted now is out of the server's layer's
                    // reach, unless that layer grants /dev (no slot was made ahead).
                    pid: false,
                    terminals: self.sandbox.is_none() || !self.slots_name_terminals(),
                    ..self.wanted_spaces()
                };
                let spaces = Arc::new(factory.make(&wanted)?);
                for why in spaces.why_not() {
                    tracing::info!("session namespaces: {why}");
                }
                spaces
            }
        };
        let token = random_token();
        let socket = self.private.run.join("join.sock");
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket)
            .map_err(|e| format!("cannot make the session's socket {}: {e}", socket.display()))?;
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| format!("{}: {e}", socket.display()))?;
        }
        let expect = spaces.identities();
        let ended = Arc::new(AtomicBool::new(false));
        serve_joins(
            listener,
            Arc::clone(&spaces),
            token.clone(),
            Arc::clone(&ended),
        )?;
        Ok(SessionSpaces {
            spaces,
            join: crate::shell::supervisor::Join {
                socket: socket.clone(),
                token: token.clone(),
                expect,
            },
            socket,
            slot,
            ended,
        })
    }

    /// What each session's namespaces are (without a `/dev/shm` directory or sockets to
    /// hide, which are the session's).
    pub(super) fn wanted_spaces(&self) -> Wanted {
        let net = &self.profile.network;
        Wanted {
            network: net.on() && net.kernel != crate::profile::network::KernelFence::Landlock,
            shm: None,
            hide: Vec::new(),
            pid: true,
            terminals: true,
            ipc: true,
        }
    }

    /// The machine's listening unix sockets no grant names (a docker.sock), to hide in
    /// the session's mount namespace (listed here, in the server's own network
    /// namespace).
    pub(super) fn sockets_to_hide(&self) -> Vec<PathBuf> {
        match &self.sandbox {
            Some(sandbox) => whalebox_sandbox::spaces::listening_unix_sockets()
                .into_iter()
                // whalebox's own (the decision and join sockets, the proxy's doors).
                .filter(|s| !s.starts_with(self.private.root()))
                .filter(|s| !sandbox.grants_socket(s))
                .collect(),
            None => Vec::new(),
        }
    }

    /// Whether the slots made ahead have terminals the server's layer names (so it
    /// grants no `/dev`, and a holder made later must not mount a devpts).
    fn slots_name_terminals(&self) -> bool {
        self.slots
            .get()
            .is_some_and(|pool| pool.all_terminals_named())
    }

    /// The supervisor's `--join` value for a task (None: the session has no namespaces).
    pub fn task_join(&self) -> Option<String> {
        let spaces = self.spaces().ok()?;
        let made = spaces.made();
        (made.network || made.mount || made.pid || made.ipc)
            .then(|| serde_json::to_string(&spaces.join).ok())
            .flatten()
    }
}

/// Answer each supervisor that shows `token` with the session's namespaces, until the
/// session is gone.
fn serve_joins(
    listener: UnixListener,
    spaces: Arc<Spaces>,
    token: String,
    ended: Arc<AtomicBool>,
) -> Result<(), String> {
    std::thread::Builder::new()
        .name("whalebox-join".into())
        .spawn(move || {
            for conn in listener.incoming() {
                if ended.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(10)));
                let mut line = String::new();
                {
                    use std::io::{BufRead, Read};
                    let mut reader = std::io::BufReader::new(&conn).take(256);
                    if reader.read_line(&mut line).is_err() {
                        continue;
                    }
                }
                if line.trim_end() != token {
                    continue;
                }
                let namespaces = spaces.namespaces();
                let borrowed: Vec<_> = namespaces.iter().map(|(k, fd)| (*k, fd.as_fd())).collect();
                let _ = crate::guard::spaces::send_namespaces(&conn, &borrowed);
            }
        })
        .map(drop)
        .map_err(|e| format!("cannot start the session's join thread: {e}"))
}

/// 16 random bytes as hex (from the kernel's generator).
fn random_token() -> String {
    let mut bytes = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut bytes);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session's /dev/shm is emptied when it ends, without following what a task left
    /// there (a link to a directory outside stays whole), and its slot serves the next.
    #[test]
    fn a_sessions_shm_is_emptied_at_its_end_and_links_are_not_followed() {
        let top = tempfile::tempdir().unwrap();
        let outside = top.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("precious"), "keep").unwrap();
        let pool = Arc::new(Slots::create(top.path(), 1).unwrap());
        let slot = pool.take().unwrap();
        let dir = slot.dir().to_path_buf();
        std::fs::write(dir.join("sem.x"), "1").unwrap();
        std::fs::create_dir_all(dir.join("d/e")).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("link")).unwrap();
        // A directory made unreadable to keep its files past the cleanup.
        std::fs::create_dir(dir.join("locked")).unwrap();
        std::fs::write(dir.join("locked/kept"), "x").unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.join("locked"), std::fs::Permissions::from_mode(0o000))
                .unwrap();
        }
        assert!(pool.take().is_none(), "one slot, taken");
        drop(slot);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        assert_eq!(
            std::fs::read_to_string(outside.join("precious")).unwrap(),
            "keep"
        );
        assert!(pool.take().is_some(), "given back");
    }
}
