//! The text the `checkpoint_*` tools and `whalebox checkpoints` answer with.

use std::fmt::Write;

use super::service::{Counts, Restored, Summary};
use super::store::{Record, Store};
use super::tree::{Change, Difference, Kind, PathEntry};

/// Who reads the answer: the model (tool names) or a person (commands).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    Model,
    Person,
}

/// `checkpoint_list`'s text: newest first.
pub fn list(summaries: &[Summary], now: f64, reader: Reader) -> String {
    if summaries.is_empty() {
        return "No checkpoints yet: one is taken before every call that may change the workspace."
            .into();
    }
    let mut out = String::new();
    for s in summaries {
        let _ = write!(out, "{}  {}  ", s.id, ago(now - s.time));
        let causes: Vec<String> = s.causes.iter().map(cause_line).collect();
        out.push_str(&causes.join("; "));
        if s.more_causes > 0 {
            let _ = write!(out, "; and {} more calls", s.more_causes);
        }
        match &s.by_calls {
            Some(c) if c.is_empty() => out.push_str("  (changed nothing)"),
            Some(c) => {
                let _ = write!(out, "  ({})", counts(c));
            }
            None => out.push_str("  (still running)"),
        }
        if let Some(c) = &s.after_calls
            && !c.is_empty()
        {
            if s.overlapped {
                let _ = write!(out, "\n      then, while other calls ran: {}", counts(c));
            } else if s.running.is_empty() {
                let _ = write!(out, "\n      then, outside whalebox: {}", counts(c));
            } else {
                let _ = write!(
                    out,
                    "\n      then, while task {} ran: {}",
                    s.running.join(", "),
                    counts(c)
                );
            }
        }
        out.push('\n');
    }
    out.push_str(match reader {
        Reader::Model => "\ncheckpoint_diff {id} shows what changed since one; checkpoint_restore {id} puts the workspace back as it was then (itself undoable).",
        Reader::Person => "\n`whalebox checkpoints diff ID` shows what changed since one; `whalebox checkpoints restore ID` puts the workspace back as it was then (itself undoable).",
    });
    out
}

fn cause_line(c: &super::store::Cause) -> String {
    let mut s = format!("{} {}", c.tool, c.summary);
    if let Some(t) = &c.task {
        let _ = write!(s, " [task {t}]");
    }
    s.trim().to_string()
}

fn counts(c: &Counts) -> String {
    format!("+{} −{} M{}", c.added, c.removed, c.modified)
}

fn ago(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    match s {
        0..=59 => format!("{s}s ago"),
        60..=3599 => format!("{}m ago", s / 60),
        3600..=86399 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86400),
    }
}

/// `checkpoint_diff`'s text: a unified diff per text file, size and hash for the rest.
pub fn diff(store: &Store, rec: &Record, diffs: &[Difference], max_chars: usize) -> String {
    let files: Vec<&Difference> = diffs.iter().filter(|d| !is_dir(d)).collect();
    if files.is_empty() {
        return format!("Nothing changed since checkpoint {}.", rec.id);
    }
    let mut out = format!(
        "{} path(s) changed since checkpoint {} (--- the checkpoint, +++ now):\n",
        files.len(),
        rec.id
    );
    for d in files {
        if out.len() > max_chars {
            let _ = write!(
                out,
                "\n… cut at {max_chars} characters; ask for one `path`."
            );
            break;
        }
        out.push('\n');
        out.push_str(one(store, d, max_chars).trim_end());
        out.push('\n');
    }
    out
}

fn is_dir(d: &Difference) -> bool {
    d.before.as_ref().is_none_or(|e| e.kind.is_dir())
        && d.after.as_ref().is_none_or(|e| e.kind.is_dir())
        && (d.before.is_some() || d.after.is_some())
        && !(d.before.is_some()
            && d.after.is_some()
            && d.before.as_ref().map(|e| e.mode) != d.after.as_ref().map(|e| e.mode))
}

fn one(store: &Store, d: &Difference, max_chars: usize) -> String {
    let path = &d.path;
    let what = |e: &Option<PathEntry>| -> String {
        match e {
            None => "absent".into(),
            Some(e) => match &e.kind {
                Kind::File { size, hash } => format!(
                    "{size} bytes, sha256 {}, mode {:o}",
                    &hash[..12.min(hash.len())],
                    e.mode
                ),
                Kind::Symlink { target } => format!("a link to {target}"),
                Kind::Dir { .. } => format!("a directory, mode {:o}", e.mode),
                Kind::Skipped { why } => format!("not kept ({why})"),
            },
        }
    };
    let text = |e: &Option<PathEntry>| -> Option<String> {
        match e {
            None => Some(String::new()),
            Some(PathEntry {
                kind: Kind::File { hash, .. },
                ..
            }) => {
                let bytes = store.blob(hash).ok()?;
                if bytes.contains(&0) {
                    return None;
                }
                String::from_utf8(bytes)
                    .ok()
                    .map(|t| t.replace("\r\n", "\n"))
            }
            _ => None,
        }
    };
    let head = match d.change() {
        Change::Added => format!("{path}: created since"),
        Change::Removed => format!("{path}: deleted since"),
        Change::Modified => format!("{path}: modified"),
    };
    let mode_only = match (&d.before, &d.after) {
        (Some(a), Some(b)) => a.kind == b.kind && a.mode != b.mode,
        _ => false,
    };
    if mode_only {
        return format!(
            "{head}: mode {:o} → {:o}\n",
            d.before.as_ref().map(|e| e.mode).unwrap_or(0),
            d.after.as_ref().map(|e| e.mode).unwrap_or(0)
        );
    }
    match (text(&d.before), text(&d.after)) {
        (Some(old), Some(new)) => {
            let (body, _) = crate::text::diff::unified(&old, &new, path, max_chars);
            format!("{head}\n{body}\n")
        }
        _ => format!("{head}: {} → {}\n", what(&d.before), what(&d.after)),
    }
}

/// `checkpoint_restore`'s text.
pub fn restored(r: &Restored) -> String {
    let mut out = String::new();
    let files: Vec<&(String, Change)> = r.changes.iter().collect();
    if r.dry_run {
        let _ = writeln!(
            out,
            "Dry run: restoring checkpoint {} would change {} path(s):",
            r.checkpoint,
            files.len()
        );
    } else if files.is_empty() {
        let _ = writeln!(
            out,
            "Nothing to restore: the workspace is as checkpoint {} had it.",
            r.checkpoint
        );
    } else {
        let _ = writeln!(
            out,
            "Restored checkpoint {}: {} path(s) put back.",
            r.checkpoint,
            files.len()
        );
    }
    for (path, change) in files.iter().take(200) {
        let verb = match change {
            // The diff runs from now to the checkpoint.
            Change::Added => "recreated",
            Change::Removed => "removed (created since)",
            Change::Modified => "rewritten",
        };
        let _ = writeln!(out, "  {path}: {verb}");
    }
    if files.len() > 200 {
        let _ = writeln!(out, "  … and {} more", files.len() - 200);
    }
    if !r.outside.is_empty() {
        let _ = writeln!(
            out,
            "Changed since by something other than whalebox's calls and tasks (overwritten): {}",
            r.outside.join(", ")
        );
    }
    for (path, why) in &r.left {
        let _ = writeln!(out, "  {path}: left as it is ({why})");
    }
    if let Some(before) = &r.before {
        let _ = write!(
            out,
            "Undo this restore with checkpoint_restore {{\"id\": \"{before}\"}}."
        );
    } else if r.dry_run {
        out.push_str("Call again without dry_run to restore.");
    }
    out.trim_end().to_string()
}
