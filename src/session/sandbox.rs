//! The Landlock fences of a session: what the server itself must reach beside the
//! profile's fences, the server's own layer, and the layer each task gets.

use std::path::{Path, PathBuf};

use crate::core::ToolError;
use crate::guard::landlock::{Extras, Layer, Sandbox, Status};
use crate::guard::spaces::Wanted;
use crate::net::fence::TaskNet;

use super::{Env, SetupError};

impl Env {
    /// The fences from the profile plus what this server itself must reach: its private
    /// directories, its own binary, the shells it may start, and the log files it
    /// appends to (created when it enters the sandbox).
    pub(super) fn build_sandbox(&self) -> Result<Option<Sandbox>, SetupError> {
        if self.profile.landlock.mode == crate::profile::LandlockMode::Off {
            return Ok(None);
        }
        // Commands get their TMPDIR in full, and may only read the run directory (the
        // session's CA bundle; its sockets they connect to, which needs no grant): one
        // that could write there could put its own relay in place of a decision socket.
        // The server's layer has full rights on both through `server_private` below.
        let mut extras = Extras {
            private: vec![self.private.tmp.clone()],
            read: vec![self.private.run.clone()],
            ..Extras::default()
        };
        if let Ok(exe) = std::env::current_exe() {
            extras.programs.push(exe);
        }
        // The server removes its private directory when it ends: it needs full rights in
        // it and the right to remove it from its parent; its commands get neither.
        let root = self.private.root();
        extras.server_private.push(root.to_path_buf());
        extras
            .server_rmdir
            .extend(root.parent().map(Path::to_path_buf));
        if self.git_guard.is_some() && self.checkpoints.is_none() {
            // The git guard moves hooks there (made when the server enters its fences);
            // with checkpoints on it lies inside the store, which is granted below.
            extras
                .server_private
                .push(super::git_quarantine_dir(&self.profile));
        }
        if let Some(c) = &self.checkpoints {
            // The server keeps checkpoints there (made when it enters the sandbox); its
            // commands never see the store.
            extras.server_private.push(c.dir().to_path_buf());
        }
        if let Some(cgroups) = self.task_cgroups() {
            // The tasks' cgroups are made in the server's own directories (see
            // guard::limits::cgroup); the tasks' layer leaves them read-only.
            extras.server_private.extend(cgroups.dirs());
            extras.server_rmdir.extend(
                cgroups
                    .dirs()
                    .iter()
                    .filter_map(|d| d.parent().map(Path::to_path_buf)),
            );
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
            extras.server_connect = crate::web::server_ports(&self.profile.web);
        }
        if self.session == super::Session::Server {
            // `serve --http` reads its secrets (again, when they are rotated) inside its
            // fences; its commands never may.
            extras.server_read = self
                .profile
                .http
                .secret_files()
                .into_iter()
                .map(|f| f.parent().map(Path::to_path_buf).unwrap_or(f))
                .collect();
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
            // Under `[landlock] network = "deny"` every port must be named in the server's
            // layer, made once: the doors' block (a task's door is one of them) and the
            // host ports the server relays to.
            extras.server_connect.extend(crate::net::fence::DOOR_PORTS);
            extras.server_connect.extend(&net.host_ports);
            // Where the fence falls back to Landlock, the doors are on this machine's
            // loopback, bound by the server.
            extras.server_bind.extend(crate::net::fence::DOOR_PORTS);
            extras.read.extend(net.ca_files.iter().map(PathBuf::from));
        }
        let p = &self.profile;
        let readable = p.read_roots.iter().chain(&p.skills.dirs);
        let mut sandbox = Sandbox::new(&p.landlock, &p.workspace, readable, &extras)
            .map(|s| s.declared_in(p.source_name(), p.source.is_some()));
        if let Some(s) = &mut sandbox
            && net.on()
        {
            // A task reaches the host ports, and its servers on the published ports
            // listen, through whatever its layer limits.
            s.task_connect.extend(&net.host_ports);
            s.bind.extend(&net.publish);
        }
        if let Some(s) = &sandbox {
            // Bad combinations (enforce on a kernel that cannot) stop start-up here.
            s.check(Layer::Task).map_err(SetupError::Sandbox)?;
            self.state_out_of_reach(s)?;
        }
        Ok(sandbox)
    }

    /// Refuse to start when a task's layer would let commands write whalebox's own state
    /// (its decision sockets, audit log, approvals file, checkpoint store): Landlock
    /// cannot carve them out of a tree it grants, so a profile that grants such a tree
    /// (or puts a log inside the workspace) must change.
    fn state_out_of_reach(&self, sandbox: &Sandbox) -> Result<(), SetupError> {
        let shell = &self.profile.shell;
        let mut state: Vec<(&str, PathBuf)> = vec![(
            "its private run directory (decision sockets; follows $TMPDIR)",
            self.private.run.clone(),
        )];
        if let Some(log) = &shell.audit_log {
            state.push(("[shell] audit_log", log.clone()));
        }
        if let Some(file) = &shell.approvals_file {
            state.push(("[shell] approvals_file", file.clone()));
        }
        if let Some(c) = &self.checkpoints {
            state.push((
                "the checkpoint store ([checkpoints] dir)",
                c.dir().to_path_buf(),
            ));
        }
        for (what, path) in state {
            if path == self.private.run
                && let Some(grant) = sandbox.task_writes(&path)
            {
                // $TMPDIR inside a writable tree (a Nix build's /build is both): the
                // kernel gate still believes only the server on its socket (SO_PEERCRED).
                tracing::warn!(
                    "whalebox's private run directory {} lies under {}, which commands may \
                     write: set TMPDIR outside every writable tree",
                    path.display(),
                    grant.display()
                );
                continue;
            }
            if let Some(grant) = sandbox.task_writes(&path) {
                return Err(SetupError::Sandbox(format!(
                    "whalebox's own state, {what} at {}, lies under {}, which commands may \
                     write (the workspace, [landlock] rw, or a preset's cache): a command could \
                     forge or replace it. Move it outside every writable tree, or grant a \
                     narrower directory in {}",
                    path.display(),
                    grant.display(),
                    self.profile.source_name()
                )));
            }
        }
        Ok(())
    }

    /// Put the server itself inside its Landlock fences. Call on the main thread before
    /// any other thread starts (the async runtime included): Landlock restricts the
    /// calling thread and what it starts afterwards.
    ///
    /// `sessions`: how many sessions the server may hold at once (1, or an HTTP server's
    /// `max_sessions`): each gets its own `/dev/shm`, whose directory the server's layer
    /// must name now.
    pub fn enter_sandbox(&self, sessions: usize) -> Result<&Status, String> {
        if let Some(c) = &self.checkpoints {
            // The store must be there before the server's layer names it; a store that
            // cannot be made is said in each call's `checkpoint_missing`.
            let _ = c.get();
        }
        if self.git_guard.is_some() && self.checkpoints.is_none() {
            // The git guard's quarantine must be there before the server's layer names it
            // (inside the checkpoint store, it is made at the first hook moved there).
            let dir = super::git_quarantine_dir(&self.profile);
            if let Err(e) = crate::gitguard::files::private_dir(&dir) {
                tracing::warn!(
                    "git guard: cannot make the quarantine {}: {e}",
                    dir.display()
                );
            }
        }
        let mut sandbox = self.sandbox.clone();
        if self.shell_on() || self.profile.tools.iter().any(|g| g == "mcp") {
            // The sessions' namespaces are made by a process outside the fences (a
            // Landlock domain may not mount), started now, and each slot's are made
            // now: what is mounted in them (its /proc, its terminals) only a rule on
            // its own root reaches, and this layer is built once.
            super::spaces::start_factory();
            match super::spaces::Slots::create(self.private.root(), sessions.max(1)) {
                Ok(mut pool) => {
                    if let Some(factory) = super::spaces::factory() {
                        let wanted = Wanted {
                            hide: self.sockets_to_hide(),
                            ..self.wanted_spaces()
                        };
                        pool.make_spaces(factory, &wanted);
                    }
                    if let Some(s) = &mut sandbox {
                        s.server_private.extend(pool.dirs().iter().cloned());
                        s.server_roots.extend(pool.roots());
                        // Sessions past the slots mount a devpts of their own, which
                        // only a rule on /dev reaches, unless every slot's is named.
                        s.server_devices = !pool.all_terminals_named();
                    }
                    let _ = self.slots.set(std::sync::Arc::new(pool));
                }
                Err(e) => {
                    if let Some(s) = &mut sandbox {
                        s.server_devices = true;
                    }
                    tracing::warn!(
                        "cannot make the sessions' /dev/shm directories ({e}): commands get no /dev/shm"
                    )
                }
            }
        }
        let status = match &sandbox {
            Some(s) => {
                for warning in s.create_files()? {
                    tracing::warn!("[landlock] presets: {warning}");
                }
                s.apply(Layer::Server)?
            }
            None => Status::off(),
        };
        let status = self.sandbox_status.get_or_init(|| status);
        if self.profile.network.mode == crate::profile::network::FenceMode::Enforce
            && (self.shell_on() || self.profile.tools.iter().any(|g| g == "mcp"))
        {
            // What this machine allows is known only by trying: a fence `enforce` cannot
            // have stops start-up, not every command.
            self.network()?;
        }
        Ok(status)
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

    /// The task's Landlock layer as the supervisor gets it: the session's, with the
    /// session's `/dev/shm` directory, and the proxy door's port where the layer limits
    /// TCP connect.
    pub fn task_sandbox(&self, net: Option<&TaskNet>) -> Result<Option<String>, ToolError> {
        let Some(sandbox) = &self.sandbox else {
            return Ok(None);
        };
        let mut sandbox = sandbox.clone();
        let deny = sandbox.network == crate::guard::landlock::NetworkMode::Deny;
        sandbox.proxy_port = net
            .filter(|n| n.landlock_fence || deny)
            .map(|n| n.door_port);
        if let Ok(spaces) = self.spaces()
            && let Some(dir) = spaces.shm_dir()
        {
            sandbox
                .paths
                .push((dir.to_path_buf(), crate::guard::landlock::Grant::Full));
        }
        serde_json::to_string(&sandbox)
            .map(Some)
            .map_err(|e| ToolError::internal(format!("cannot hand the sandbox to the task: {e}")))
    }
}
