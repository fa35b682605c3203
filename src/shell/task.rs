//! The task table: every process a session started, by short unguessable id. Live tasks
//! are capped; ended ones are kept for a while, then pruned oldest first. Each task has
//! a reader thread filling its bounded buffer and a waiter thread reaping its
//! supervisor; async callers wait on a `Notify` for either to change something.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{self, Signal};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;
use serde::Serialize;
use tokio::sync::Notify;

use super::buffer::OutputBuffer;
use super::spawn::{self, Input, Mode, Spec};
use crate::guard::limits::TaskSetup;
use crate::guard::limits::cgroup::{Cgroups, Events, TaskCgroup};

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

#[derive(Debug)]
pub struct State {
    pub buffer: OutputBuffer,
    pub exit: Option<Exit>,
    /// The output reached end of file (every writer closed).
    pub eof: bool,
    pub ended_at: Option<Instant>,
    pub last_output: Option<Instant>,
    /// What the task's cgroup counted, read when the task ended (before it was removed).
    pub cgroup_events: Option<Events>,
}

pub struct Task {
    pub id: String,
    pub command: String,
    pub mode: Mode,
    /// The supervisor: leader of the task's process group.
    pub pid: i32,
    pub started: Instant,
    pub state: Mutex<State>,
    changed: Notify,
    input: Mutex<Option<Input>>,
    /// The task's resource limits, as set up (None: none were asked for).
    pub limits: Option<AppliedLimits>,
}

/// The limits a task runs under and what keeps each.
#[derive(Debug)]
pub struct AppliedLimits {
    pub limits: crate::guard::limits::Limits,
    /// The task's cgroup, while it has one.
    pub cgroup: Option<TaskCgroup>,
    /// Why the task has no cgroup though one was asked for.
    pub no_cgroup: Option<String>,
}

impl AppliedLimits {
    /// What the cgroup counted so far (the final count once the task ended).
    pub fn events(&self, state: &State) -> Option<Events> {
        state
            .cgroup_events
            .or_else(|| self.cgroup.as_ref().map(TaskCgroup::events))
    }

    /// Whether the process limit is kept by the cgroup (else by RLIMIT_NPROC).
    pub fn pids_by_cgroup(&self) -> bool {
        self.cgroup.as_ref().is_some_and(TaskCgroup::pids)
    }

    /// Whether the memory limit is kept by the cgroup (else not at all).
    pub fn memory_by_cgroup(&self) -> bool {
        self.cgroup.as_ref().is_some_and(TaskCgroup::memory)
    }
}

impl Task {
    pub fn is_running(&self) -> bool {
        self.lock().ended_at.is_none()
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait until the task ends or `timeout` passes; true when it ended.
    pub async fn wait(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !self.is_running() {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return !self.is_running();
            }
        }
    }

    /// Write to the task's stdin (pipe) or terminal (PTY).
    pub fn write(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut input = self.input.lock().unwrap_or_else(|p| p.into_inner());
        match input.as_mut() {
            Some(Input::Pipe(stdin)) => {
                stdin.write_all(bytes)?;
                stdin.flush()
            }
            Some(Input::Pty { writer, .. }) => {
                writer.write_all(bytes)?;
                writer.flush()
            }
            None => Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "stdin is closed",
            )),
        }
    }

    /// Close a pipe task's stdin (end of file for the command).
    pub fn close_stdin(&self) {
        let mut input = self.input.lock().unwrap_or_else(|p| p.into_inner());
        if matches!(input.as_ref(), Some(Input::Pipe(_))) {
            *input = None;
        }
    }

    /// Send `sig` to the task's whole process group.
    pub fn signal_group(&self, sig: Signal) {
        if self.is_running() {
            let _ = signal::killpg(Pid::from_raw(self.pid), sig);
        }
    }

    /// Ask the supervisor to kill every process of the task.
    pub fn kill_all(&self) {
        if self.is_running() {
            let _ = signal::kill(Pid::from_raw(self.pid), Signal::SIGHUP);
        }
    }

    /// SIGINT, SIGTERM, then the supervisor's kill-everything, then SIGKILL to the
    /// group, each with a short grace period. Returns the signals sent.
    pub async fn cancel(&self) -> Vec<&'static str> {
        let mut sent = Vec::new();
        let steps: [(&'static str, u64); 4] = [
            ("SIGINT", 500),
            ("SIGTERM", 1000),
            ("SIGHUP (kill everything)", 1000),
            ("SIGKILL", 2000),
        ];
        for (name, grace) in steps {
            if !self.is_running() {
                break;
            }
            match name {
                "SIGINT" => self.signal_group(Signal::SIGINT),
                "SIGTERM" => self.signal_group(Signal::SIGTERM),
                "SIGKILL" => {
                    self.signal_group(Signal::SIGKILL);
                    self.kill_cgroup();
                }
                _ => self.kill_all(),
            }
            sent.push(name);
            if self.wait(Duration::from_millis(grace)).await {
                break;
            }
        }
        sent
    }

    /// SIGKILL every process in the task's cgroup (those that left its process group
    /// and its supervisor's tree too).
    pub fn kill_cgroup(&self) {
        if let Some(cg) = self.limits.as_ref().and_then(|l| l.cgroup.as_ref()) {
            cg.kill();
        }
    }

    fn touch(&self) {
        self.changed.notify_waiters();
    }

    fn finish_if_done(&self, state: &mut State) {
        if state.ended_at.is_none() && state.exit.is_some() && state.eof {
            state.ended_at = Some(Instant::now());
            *self.input.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
    }
}

#[derive(Debug, Clone)]
pub struct Limits {
    pub max_live: usize,
    pub max_kept: usize,
    pub keep_ended: Duration,
    pub buffer_bytes: usize,
}

pub enum StartError {
    Full { live: usize },
    Io(std::io::Error),
}

pub struct TaskTable {
    tasks: Mutex<Vec<Arc<Task>>>,
    limits: Limits,
}

impl std::fmt::Debug for TaskTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskTable")
            .field("limits", &self.limits)
            .finish()
    }
}

impl TaskTable {
    pub fn new(limits: Limits) -> Self {
        TaskTable {
            tasks: Mutex::new(Vec::new()),
            limits,
        }
    }

    /// The limits this table was made with (another session's table gets the same).
    pub fn limits(&self) -> Limits {
        self.limits.clone()
    }

    pub fn get(&self, id: &str) -> Option<Arc<Task>> {
        let id = id.trim();
        self.tasks.lock().ok()?.iter().find(|t| t.id == id).cloned()
    }

    /// The task whose process tree holds `pid` (walking parents up to a supervisor).
    pub fn task_of_pid(&self, pid: u32) -> Option<String> {
        let tasks: Vec<(i32, String)> = self
            .tasks
            .lock()
            .ok()?
            .iter()
            .map(|t| (t.pid, t.id.clone()))
            .collect();
        let mut cur = pid as i32;
        for _ in 0..64 {
            if let Some((_, id)) = tasks.iter().find(|(p, _)| *p == cur) {
                return Some(id.clone());
            }
            let stat = std::fs::read_to_string(format!("/proc/{cur}/stat")).ok()?;
            let (_, after) = stat.rsplit_once(')')?;
            cur = after.split_whitespace().nth(1)?.parse().ok()?;
            if cur <= 1 {
                return None;
            }
        }
        None
    }

    /// How many tasks are still running.
    pub fn running(&self) -> usize {
        self.tasks
            .lock()
            .map(|t| t.iter().filter(|t| t.is_running()).count())
            .unwrap_or_default()
    }

    /// Ids of the tasks the table holds, oldest first.
    /// The ids of the tasks still running.
    pub fn running_ids(&self) -> Vec<String> {
        self.tasks
            .lock()
            .map(|t| {
                t.iter()
                    .filter(|t| t.lock().ended_at.is_none())
                    .map(|t| t.id.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn ids(&self) -> Vec<String> {
        self.tasks
            .lock()
            .map(|t| t.iter().map(|t| t.id.clone()).collect())
            .unwrap_or_default()
    }

    fn prune(&self, tasks: &mut Vec<Arc<Task>>) {
        let now = Instant::now();
        tasks.retain(|t| {
            t.lock()
                .ended_at
                .is_none_or(|e| now - e <= self.limits.keep_ended)
        });
        let mut ended = tasks.iter().filter(|t| !t.is_running()).count();
        while ended > self.limits.max_kept {
            if let Some(pos) = tasks.iter().position(|t| !t.is_running()) {
                tasks.remove(pos);
            }
            ended -= 1;
        }
    }

    pub fn start(&self, command: &str, spec: Spec) -> Result<Arc<Task>, StartError> {
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        self.prune(&mut tasks);
        let live = tasks.iter().filter(|t| t.is_running()).count();
        if live >= self.limits.max_live {
            return Err(StartError::Full { live });
        }
        let mode = spec.mode;
        let id = new_id(&tasks);
        let (setup, limits) = match spec.limits {
            Some(t) => {
                let (setup, applied) = set_up_limits(&id, t);
                (Some(setup), Some(applied))
            }
            None => (None, None),
        };
        let started = match spawn::start(spec, setup) {
            Ok(s) => s,
            Err(e) => {
                if let Some(cg) = limits.as_ref().and_then(|l| l.cgroup.as_ref()) {
                    cg.remove();
                }
                return Err(StartError::Io(e));
            }
        };
        let task = Arc::new(Task {
            id,
            command: command.to_string(),
            mode,
            pid: started.pid,
            started: Instant::now(),
            state: Mutex::new(State {
                buffer: OutputBuffer::new(self.limits.buffer_bytes),
                exit: None,
                eof: false,
                ended_at: None,
                last_output: None,
                cgroup_events: None,
            }),
            changed: Notify::new(),
            input: Mutex::new(Some(started.input)),
            limits,
        });
        tasks.push(task.clone());
        drop(tasks);
        spawn_reader(task.clone(), started.output);
        spawn_waiter(task.clone());
        Ok(task)
    }

    /// Kill every live task's processes (server shutdown, end of a one-shot call).
    pub fn kill_all(&self) {
        let tasks: Vec<Arc<Task>> = self.tasks.lock().map(|t| t.clone()).unwrap_or_default();
        let live: Vec<&Arc<Task>> = tasks.iter().filter(|t| t.is_running()).collect();
        for t in &live {
            t.kill_all();
        }
        let deadline = Instant::now() + Duration::from_millis(300);
        while Instant::now() < deadline && live.iter().any(|t| t.is_running()) {
            std::thread::sleep(Duration::from_millis(5));
        }
        for t in &live {
            t.signal_group(Signal::SIGKILL);
        }
        // Every task's cgroup now, not when its waiter gets to it (a task that just ended
        // may still be having its removed): the server may be ending.
        for t in &tasks {
            if let Some(cg) = t.limits.as_ref().and_then(|l| l.cgroup.as_ref()) {
                cg.remove();
            }
        }
    }
}

/// The cgroup (where one can be made and is asked for) and rlimits of task `id`.
fn set_up_limits(id: &str, t: spawn::TaskLimits) -> (TaskSetup, AppliedLimits) {
    let l = t.limits;
    let mut no_cgroup = None;
    let mut cgroup = None;
    if t.cgroup && (l.processes.is_some() || l.memory.is_some()) {
        match Cgroups::made() {
            Some(cgroups) if cgroups.any() => match cgroups.create(id, l.processes, l.memory) {
                Ok(cg) => cgroup = Some(cg),
                Err(why) => no_cgroup = Some(why),
            },
            Some(cgroups) => {
                no_cgroup = cgroups.pids.as_ref().err().cloned();
            }
            None => no_cgroup = Some("the server looked for none".into()),
        }
    }
    let by_cgroup = cgroup.as_ref().is_some_and(TaskCgroup::pids);
    let setup = TaskSetup {
        limits: l,
        cgroups: cgroup.as_ref().map(TaskCgroup::dirs).unwrap_or_default(),
        nproc: if by_cgroup {
            None
        } else {
            l.processes.map(TaskSetup::nproc_for)
        },
    };
    (
        setup,
        AppliedLimits {
            limits: l,
            cgroup,
            no_cgroup,
        },
    )
}

fn spawn_reader(task: Arc<Task>, mut output: Box<dyn Read + Send>) {
    let _ = std::thread::Builder::new()
        .name(format!("task-{}-out", task.id))
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match output.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let mut st = task.lock();
                        st.buffer.push(&buf[..n]);
                        st.last_output = Some(Instant::now());
                        drop(st);
                        task.touch();
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    // A PTY master reads EIO once the terminal's last user is gone.
                    Err(_) => break,
                }
            }
            let mut st = task.lock();
            st.eof = true;
            task.finish_if_done(&mut st);
            drop(st);
            task.touch();
        });
}

fn spawn_waiter(task: Arc<Task>) {
    let _ = std::thread::Builder::new()
        .name(format!("task-{}-wait", task.id))
        .spawn(move || {
            let exit = loop {
                match waitpid(Pid::from_raw(task.pid), None) {
                    Ok(WaitStatus::Exited(_, code)) => break Exit::Code(code),
                    Ok(WaitStatus::Signaled(_, sig, _)) => break Exit::Signal(sig as i32),
                    Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
                    Err(_) => break Exit::Code(-1),
                }
            };
            // A supervisor that ended by itself killed every process of the task; one that
            // was killed (OOM) left them, without a supervisor to decide their execs
            // (those now fail): the group goes too. Its id cannot have been reused while
            // a member lives.
            let _ = signal::killpg(Pid::from_raw(task.pid), Signal::SIGKILL);
            // Its cgroup: what it counted, and whatever is left in it killed; the
            // directory is removed once the task's end is known (that may wait for the
            // killed to be reaped).
            let cgroup = task.limits.as_ref().and_then(|l| l.cgroup.as_ref());
            if let Some(cg) = cgroup {
                task.lock().cgroup_events = Some(cg.events());
                cg.kill();
            }
            {
                let mut st = task.lock();
                st.exit = Some(exit);
                task.finish_if_done(&mut st);
            }
            task.touch();
            if let Some(cg) = cgroup {
                cg.remove();
            }
            // The supervisor killed everything it knew; if a writer still holds the
            // output open (a PTY kept by a stray process), stop waiting for EOF.
            std::thread::sleep(Duration::from_millis(500));
            let mut st = task.lock();
            if !st.eof {
                st.eof = true;
                task.finish_if_done(&mut st);
            }
            drop(st);
            task.touch();
        });
}

/// A short id, unguessable within the session: 40 random bits.
fn new_id(existing: &[Arc<Task>]) -> String {
    loop {
        let mut bytes = [0u8; 5];
        let ok = std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .is_ok();
        if !ok {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            bytes.copy_from_slice(&nanos.to_le_bytes()[..5]);
        }
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let id = format!("t{id}");
        if !existing.iter().any(|t| t.id == id) {
            return id;
        }
    }
}
