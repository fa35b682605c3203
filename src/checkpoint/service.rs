//! [`Checkpoints`]: one workspace's checkpoints as a session (a server, or a CLI command)
//! takes, lists, compares and restores them.
//!
//! Each record is the workspace's tree just before a call that may change it, and its tree
//! when the call returned. Calls that change nothing share one record. What changed
//! between one record's `after` and the next record's `tree` happened while no call ran:
//! a shell task still running (named in `running`), or something outside whalebox (the
//! person, an editor, another program). A restore that would overwrite such outside
//! changes says which and needs `force`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use super::restore::{self, Failure, Plan};
use super::scan::{ScanRules, Scanner};
use super::store::{Cause, Event, InFlight, Journal, Record, Store};
use super::tree::{Change, Difference, diff};

/// Where and what to keep.
#[derive(Debug, Clone)]
pub struct Settings {
    pub workspace: PathBuf,
    /// The store's directory (outside the workspace by default).
    pub dir: PathBuf,
    pub rules: ScanRules,
    /// Checkpoints kept (the oldest go first).
    pub keep: usize,
    /// The store's size past which the oldest checkpoints go.
    pub max_total_bytes: u64,
    /// Ask the kernel which directories changed (inotify) instead of a stat pass.
    pub watch: bool,
}

pub struct Checkpoints {
    settings: Settings,
    store: Store,
    session: String,
    state: Mutex<State>,
}

impl std::fmt::Debug for Checkpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoints")
            .field("dir", &self.settings.dir)
            .finish()
    }
}

struct State {
    scanner: Scanner,
    /// This session's newest record.
    last: Option<String>,
    /// The store's prune generation the scanner's memory is good for.
    generation: u64,
    /// Records written since the last prune.
    since_prune: usize,
    /// When the scanner's index was last saved.
    index_saved: Option<std::time::Instant>,
    /// This session's calls between `take` and `finished`, and its mark in the store
    /// while there are any.
    in_flight: usize,
    mark: InFlight,
}

/// One checkpoint as `checkpoint_list` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    pub id: String,
    pub time: f64,
    pub session: String,
    pub causes: Vec<Cause>,
    pub more_causes: usize,
    /// What its calls changed (None: they had not returned when last seen).
    pub by_calls: Option<Counts>,
    /// What changed after its calls returned, before the next checkpoint (or now, for
    /// the newest when `now` was asked): by the `running` tasks, or from outside.
    pub after_calls: Option<Counts>,
    pub running: Vec<String>,
    /// Other calls were running when its calls returned.
    pub overlapped: bool,
}

#[derive(Debug, Clone, Copy, Default, serde::Serialize, PartialEq, Eq)]
pub struct Counts {
    pub added: usize,
    pub removed: usize,
    pub modified: usize,
}

impl Counts {
    fn of(diffs: &[Difference]) -> Counts {
        let mut c = Counts::default();
        for d in diffs.iter().filter(|d| !is_dir_only(d)) {
            match d.change() {
                Change::Added => c.added += 1,
                Change::Removed => c.removed += 1,
                Change::Modified => c.modified += 1,
            }
        }
        c
    }

    pub fn is_empty(&self) -> bool {
        self.added + self.removed + self.modified == 0
    }
}

/// A directory entry appearing or going: counted through the files under it.
fn is_dir_only(d: &Difference) -> bool {
    d.before.as_ref().is_none_or(|e| e.kind.is_dir())
        && d.after.as_ref().is_none_or(|e| e.kind.is_dir())
}

/// What a restore did, or would do.
#[derive(Debug, Default, serde::Serialize)]
pub struct Restored {
    pub checkpoint: String,
    /// The checkpoint taken just before (None on a dry run): restore it to undo this.
    pub before: Option<String>,
    pub changes: Vec<(String, Change)>,
    pub left: Vec<(String, String)>,
    /// Paths changed since the checkpoint by something other than whalebox's calls and
    /// tasks, which the restore overwrites (only with `force`).
    pub outside: Vec<String>,
    pub dry_run: bool,
}

/// Why a restore did not happen.
#[derive(Debug)]
pub enum RestoreError {
    /// Outside changes would be overwritten; `force` to go ahead.
    Outside(Vec<String>, Plan),
    /// The workspace was not touched.
    Untouched(std::io::Error),
    /// Stopped midway; the journal finishes it on the store's next use.
    Midway(std::io::Error),
    /// The workspace is restored, but the store could not record it afterwards.
    Unrecorded(std::io::Error),
    Io(std::io::Error),
}

impl From<std::io::Error> for RestoreError {
    fn from(e: std::io::Error) -> Self {
        RestoreError::Io(e)
    }
}

impl Checkpoints {
    /// Open the workspace's store (made if missing), finishing a restore a crash left.
    pub fn open(settings: Settings, session: &str) -> std::io::Result<Checkpoints> {
        let store = Store::open(&settings.dir)?;
        let named = settings.dir.join("workspace");
        if !named.exists() {
            let _ = crate::mutation::write_private(
                &named,
                settings.workspace.display().to_string().as_bytes(),
            );
        }
        let mut scanner = Scanner::new(&settings.workspace, settings.rules.clone(), settings.watch);
        let generation = store.generation();
        let mark = store.in_flight_mark();
        scanner.load_index(&store.dir().join("index.json"), generation);
        let cp = Checkpoints {
            settings,
            store,
            session: session.to_string(),
            state: Mutex::new(State {
                scanner,
                last: None,
                generation,
                since_prune: 0,
                index_saved: None,
                in_flight: 0,
                mark,
            }),
        };
        {
            let _lock = cp.store.lock()?;
            let mut state = cp.state();
            cp.finish_journal(&mut state)?;
        }
        Ok(cp)
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Scan (with the store's lock held), trusting the scanner's memory only while no
    /// other session pruned the store.
    fn scan(&self, state: &mut State, full: bool) -> std::io::Result<String> {
        let generation = self.store.generation();
        if generation != state.generation {
            state.scanner.revalidate(&self.store);
            state.generation = generation;
        }
        let pass = state.scanner.scan(&self.store, full)?;
        // Kept for the next process after every full pass, and once a minute.
        let due = state
            .index_saved
            .is_none_or(|t| t.elapsed() > std::time::Duration::from_secs(60));
        if (pass.full || due) && pass.read + pass.listed > 0 {
            match state
                .scanner
                .save_index(&self.store.dir().join("index.json"), state.generation)
            {
                Ok(()) => state.index_saved = Some(std::time::Instant::now()),
                Err(e) => tracing::debug!("checkpoints: cannot save the index: {e}"),
            }
        }
        Ok(pass.tree)
    }

    /// A pass with no checkpoint, so the scanner knows the workspace before the first
    /// call (a server starts one at once).
    pub fn warm(&self) -> std::io::Result<()> {
        let _lock = self.store.lock()?;
        let mut state = self.state();
        self.scan(&mut state, false).map(|_| ())
    }

    /// A checkpoint before a call that may change the workspace; its id.
    pub fn take(&self, tool: &str, summary: &str) -> std::io::Result<String> {
        let _lock = self.store.lock()?;
        let mut state = self.state();
        self.finish_journal(&mut state)?;
        let tree = self.scan(&mut state, false)?;
        state.in_flight += 1;
        state.mark.set(true);
        let cause = Cause {
            tool: tool.to_string(),
            summary: summary.to_string(),
            task: None,
            time: now(),
        };
        if let Some(last) = state.last.clone()
            && let Ok(rec) = self.store.record(&last)
            && rec.tree == tree
            && rec.after.as_deref() == Some(tree.as_str())
            && rec.running.is_empty()
            && !rec.overlapped
            && state.in_flight == 1
        {
            // Nothing changed since, nor by the calls it holds: one more call on it.
            self.store.append(&rec.id, &Event::Call(cause))?;
            return Ok(rec.id);
        }
        let rec = Record {
            id: self.store.next_id()?,
            time: now(),
            session: self.session.clone(),
            tree,
            after: None,
            causes: vec![cause],
            more_causes: 0,
            running: Vec::new(),
            overlapped: false,
            after_time: None,
        };
        self.store.put_record(&rec)?;
        state.last = Some(rec.id.clone());
        state.since_prune += 1;
        let due = state.since_prune >= 16;
        drop(state);
        if due {
            self.prune_locked()?;
        }
        Ok(rec.id)
    }

    /// The call checkpointed as `id` returned: record the workspace as it left it, the
    /// task it started (or wrote to) and the tasks still running.
    pub fn finished(
        &self,
        id: &str,
        task: Option<String>,
        running: Vec<String>,
    ) -> std::io::Result<()> {
        let _lock = self.store.lock()?;
        let mut state = self.state();
        let overlapped = state.in_flight > 1 || self.store.others_in_flight();
        state.in_flight = state.in_flight.saturating_sub(1);
        if state.in_flight == 0 {
            state.mark.set(false);
        }
        let tree = self.scan(&mut state, false)?;
        self.store.append(
            id,
            &Event::Returned {
                tree,
                time: now(),
                task,
                running,
                overlapped,
            },
        )
    }

    /// The checkpoints, newest first (at most `limit`); `now`: the newest one's
    /// `after_calls` runs to the workspace as it is now (a scan).
    pub fn list(&self, limit: usize, now: bool) -> std::io::Result<Vec<Summary>> {
        let ids = self.store.record_ids()?;
        let current = if now {
            let _lock = self.store.lock()?;
            let mut state = self.state();
            Some(self.scan(&mut state, false)?)
        } else {
            None
        };
        let start = ids.len().saturating_sub(limit);
        let records: Vec<Record> = ids[start..]
            .iter()
            .filter_map(|id| self.store.record(id).ok())
            .collect();
        let mut out = Vec::new();
        for (i, rec) in records.iter().enumerate().rev() {
            let rec = rec.clone();
            let next_tree = match next_after(&records, i) {
                Some(next) => Some(next.tree.clone()),
                None if i + 1 == records.len() => current.clone(),
                None => None,
            };
            let counts =
                |a: &str, b: &str| diff(&self.store, a, b, "").ok().map(|d| Counts::of(&d));
            let by_calls = rec.after.as_deref().and_then(|a| counts(&rec.tree, a));
            let after_calls = match (&rec.after, &next_tree) {
                (Some(a), Some(n)) => counts(a, n),
                _ => None,
            };
            out.push(Summary {
                id: rec.id,
                time: rec.time,
                session: rec.session,
                causes: rec.causes,
                more_causes: rec.more_causes,
                by_calls,
                after_calls,
                running: rec.running,
                overlapped: rec.overlapped,
            });
        }
        Ok(out)
    }

    /// What differs from checkpoint `id` to the workspace now, under `path`.
    pub fn diff(&self, id: &str, path: &str) -> std::io::Result<(Record, Vec<Difference>)> {
        let rec = self.store.record(id)?;
        let now = {
            let _lock = self.store.lock()?;
            let mut state = self.state();
            self.scan(&mut state, false)?
        };
        let diffs = diff(&self.store, &rec.tree, &now, path)?;
        Ok((rec, diffs))
    }

    /// Put the workspace (or `paths`) back as checkpoint `id` had it. A restore is
    /// itself checkpointed first; outside changes it would overwrite need `force`.
    pub fn restore(
        &self,
        id: &str,
        paths: &[String],
        dry_run: bool,
        force: bool,
        progress: restore::Progress,
    ) -> Result<Restored, RestoreError> {
        let target = self.store.record(id)?;
        let _lock = self.store.lock()?;
        let mut state = self.state();
        self.finish_journal(&mut state)?;
        // Every directory, whatever inotify says: a restore must start from the truth.
        let now = self.scan(&mut state, true)?;
        let plan = restore::plan(&self.store, &now, &target.tree, paths)?;
        let outside = self.outside_changes(id, &now)?;
        let touched: Vec<String> = outside
            .into_iter()
            .filter(|p| plan.changes.iter().any(|(c, _)| c == p))
            .collect();
        let mut report = Restored {
            checkpoint: id.to_string(),
            changes: plan.changes.clone(),
            left: plan.left.clone(),
            outside: touched.clone(),
            dry_run,
            before: None,
        };
        if dry_run {
            return Ok(report);
        }
        if !touched.is_empty() && !force {
            return Err(RestoreError::Outside(touched, plan));
        }
        if plan.ops.is_empty() {
            return Ok(report);
        }
        let summary = if paths.is_empty() {
            format!("to checkpoint {id}")
        } else {
            format!("{} to checkpoint {id}", paths.join(", "))
        };
        let before = Record {
            id: self.store.next_id()?,
            time: now_secs(),
            session: self.session.clone(),
            tree: now.clone(),
            after: None,
            causes: vec![Cause {
                tool: "checkpoint_restore".into(),
                summary,
                task: None,
                time: now_secs(),
            }],
            more_causes: 0,
            running: Vec::new(),
            overlapped: false,
            after_time: None,
        };
        self.store.put_record(&before)?;
        state.last = Some(before.id.clone());
        report.before = Some(before.id.clone());
        self.store.put_journal(&Journal {
            target: target.tree.clone(),
            paths: paths.to_vec(),
            checkpoint: id.to_string(),
            before: before.id.clone(),
        })?;
        match restore::apply(&self.store, &self.settings.workspace, &plan, progress) {
            Ok(left) => report.left.extend(left),
            Err(Failure::Untouched(e)) => {
                self.store.clear_journal()?;
                let _ = self.store.remove_record(&before.id);
                state.last = None;
                return Err(RestoreError::Untouched(e));
            }
            Err(Failure::Midway(e)) => {
                // Once more from where it stopped; the journal stays if that fails too.
                if let Err(again) = self.finish_journal(&mut state) {
                    // Keep the first failure's kind (a full disk stays a full disk).
                    return Err(RestoreError::Midway(std::io::Error::new(
                        e.kind(),
                        format!("{e}; then: {again}"),
                    )));
                }
            }
        }
        // The workspace is restored: a failure from here on must not be reported as
        // one that left it untouched.
        let mut record = || -> std::io::Result<()> {
            self.store.clear_journal()?;
            let after = self.scan(&mut state, true)?;
            self.store.append(
                &before.id,
                &Event::Returned {
                    tree: after,
                    time: now_secs(),
                    task: None,
                    running: Vec::new(),
                    overlapped: false,
                },
            )
        };
        record().map_err(RestoreError::Unrecorded)?;
        Ok(report)
    }

    /// Paths changed since checkpoint `id` while no call was running and no task was
    /// either (what changed between one record's `after` and the next one's `tree`, and
    /// since the newest's `after`).
    fn outside_changes(&self, id: &str, now: &str) -> std::io::Result<Vec<String>> {
        let from: u64 = id.parse().unwrap_or(0);
        let ids = self.store.record_ids()?;
        let records: Vec<Record> = ids
            .iter()
            .filter(|i| i.parse::<u64>().unwrap_or(0) >= from)
            .filter_map(|i| self.store.record(i).ok())
            .collect();
        let mut out: Vec<String> = Vec::new();
        for (i, rec) in records.iter().enumerate() {
            let (Some(after), true) = (&rec.after, rec.running.is_empty() && !rec.overlapped)
            else {
                continue;
            };
            let next = next_after(&records, i)
                .map(|r| r.tree.as_str())
                .unwrap_or(now);
            for d in diff(&self.store, after, next, "")? {
                if !out.contains(&d.path) {
                    out.push(d.path);
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Finish a restore a crash interrupted (the lock held).
    fn finish_journal(&self, state: &mut State) -> std::io::Result<()> {
        let Some(journal) = self.store.journal()? else {
            return Ok(());
        };
        restore::clean_staging(&self.settings.workspace);
        let now = self.scan(state, true)?;
        let plan = restore::plan(&self.store, &now, &journal.target, &journal.paths)?;
        match restore::apply(&self.store, &self.settings.workspace, &plan, &|_, _| {}) {
            Ok(_) => {
                tracing::warn!(
                    "checkpoints: finished the restore to checkpoint {} that was interrupted",
                    journal.checkpoint
                );
                self.store.clear_journal()
            }
            Err(Failure::Untouched(e)) | Err(Failure::Midway(e)) => Err(std::io::Error::new(
                e.kind(),
                format!(
                    "a restore to checkpoint {} was interrupted and cannot be finished yet: {e}",
                    journal.checkpoint
                ),
            )),
        }
    }

    /// Drop the oldest checkpoints past `keep` and past `max_total_bytes`, and the blobs
    /// no checkpoint needs any more.
    pub fn prune(&self) -> std::io::Result<Pruned> {
        let _lock = self.store.lock()?;
        self.prune_locked()
    }

    fn prune_locked(&self) -> std::io::Result<Pruned> {
        let pruned = super::prune::prune(
            &self.store,
            self.settings.keep,
            self.settings.max_total_bytes,
        )?;
        let mut state = self.state();
        state.since_prune = 0;
        if pruned.blobs > 0 {
            state.generation = self.store.bump_generation()?;
            // This session's own memory may name blobs just removed.
            state.scanner.revalidate(&self.store);
        }
        if let Some(last) = &state.last
            && !self.store.record_ids()?.contains(last)
        {
            state.last = None;
        }
        Ok(pruned)
    }

    pub fn workspace(&self) -> &Path {
        &self.settings.workspace
    }
}

pub use super::prune::Pruned;

/// The first checkpoint after `records[i]` taken once its calls had returned: what
/// changed between the two happened while no call of its ran.
fn next_after(records: &[Record], i: usize) -> Option<&Record> {
    let done = records[i].after_time.unwrap_or(records[i].time);
    records[i + 1..].iter().find(|r| r.time >= done)
}

fn now_secs() -> f64 {
    now()
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
