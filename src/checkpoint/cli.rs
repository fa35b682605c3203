//! `whalebox checkpoints …`: undo for the person, on the same store the server uses
//! (while it runs, or after it exited). Each command answers with the text the model's
//! tools give, or JSON.

use std::path::Path;

use super::{Checkpoints, RestoreError, report};
use crate::profile::Profile;

/// What the person asked for.
#[derive(Debug, Clone)]
pub enum Request {
    List {
        limit: usize,
    },
    Diff {
        id: String,
        path: Option<String>,
    },
    Restore {
        id: String,
        paths: Vec<String>,
        dry_run: bool,
        force: bool,
    },
    Save {
        message: String,
    },
    Prune,
}

/// The answer: text (or JSON) and whether it is a failure.
pub struct Answer {
    pub text: String,
    pub json: serde_json::Value,
    pub ok: bool,
}

fn fail(text: String) -> Answer {
    Answer {
        json: serde_json::json!({"ok": false, "error": text}),
        text,
        ok: false,
    }
}

/// Carry out `request` on `profile`'s workspace.
pub fn run(profile: &Profile, request: Request) -> Answer {
    if !profile.checkpoints.on {
        return fail(format!(
            "checkpoints are off in {} ([checkpoints] mode = \"off\")",
            profile.source_name()
        ));
    }
    let dir = super::store_dir(profile);
    if !dir.join("records").is_dir() && !matches!(request, Request::Save { .. }) {
        return fail(format!(
            "no checkpoints for {} yet (the store {} does not exist): whalebox takes them before the calls that change the workspace",
            profile.workspace.display(),
            dir.display()
        ));
    }
    let cp = match super::open(profile, &format!("cli {}", std::process::id()), false) {
        Ok(c) => c,
        Err(e) => return fail(format!("the store {}: {e}", dir.display())),
    };
    let relative = |p: &str| workspace_path(&profile.workspace, p);
    match request {
        Request::List { limit } => match cp.list(limit, true) {
            Ok(list) => Answer {
                text: report::list(&list, now(), report::Reader::Person),
                json: serde_json::json!({"ok": true, "checkpoints": list}),
                ok: true,
            },
            Err(e) => fail(e.to_string()),
        },
        Request::Diff { id, path } => {
            let path = match path.as_deref().map(relative).transpose() {
                Ok(p) => p.unwrap_or_default(),
                Err(e) => return fail(e),
            };
            match cp.diff(&id, &path) {
                Ok((rec, diffs)) => Answer {
                    text: report::diff(cp.store(), &rec, &diffs, usize::MAX),
                    json: serde_json::json!({
                        "ok": true,
                        "id": rec.id,
                        "changes": diffs.iter().map(|d| serde_json::json!({"path": d.path, "change": d.change()})).collect::<Vec<_>>(),
                    }),
                    ok: true,
                },
                Err(e) => fail(e.to_string()),
            }
        }
        Request::Restore {
            id,
            paths,
            dry_run,
            force,
        } => {
            let mut rel = Vec::new();
            for p in &paths {
                match relative(p) {
                    Ok(p) if p.is_empty() => {
                        rel.clear();
                        break;
                    }
                    Ok(p) => rel.push(p),
                    Err(e) => return fail(e),
                }
            }
            restore(&cp, &id, &rel, dry_run, force)
        }
        Request::Save { message } => match cp.take("by hand", &message) {
            Ok(id) => {
                let _ = cp.finished(&id, None, Vec::new());
                Answer {
                    text: format!("Checkpoint {id} taken."),
                    json: serde_json::json!({"ok": true, "id": id}),
                    ok: true,
                }
            }
            Err(e) => fail(e.to_string()),
        },
        Request::Prune => match cp.prune() {
            Ok(p) => Answer {
                text: format!(
                    "Pruned {} checkpoint(s) and {} blob(s); the store holds {} bytes.",
                    p.checkpoints, p.blobs, p.bytes
                ),
                json: serde_json::json!({"ok": true, "pruned": p}),
                ok: true,
            },
            Err(e) => fail(e.to_string()),
        },
    }
}

fn restore(cp: &Checkpoints, id: &str, paths: &[String], dry_run: bool, force: bool) -> Answer {
    let shown = |done: usize, total: usize| {
        if total > 2000 {
            eprint!("\rrestoring: {done}/{total}");
        }
    };
    match cp.restore(id, paths, dry_run, force, &shown) {
        Ok(r) => Answer {
            text: report::restored(&r)
                .replace(
                    "checkpoint_restore {\"id\": \"",
                    "`whalebox checkpoints restore ",
                )
                .replace("\"}.", "`."),
            json: serde_json::json!({"ok": true, "restore": r}),
            ok: true,
        },
        Err(RestoreError::Outside(paths, _)) => fail(format!(
            "nothing was restored: since checkpoint {id}, these paths were changed by something other than whalebox's calls and tasks: {}; look with `whalebox checkpoints diff {id}`, then add --force to overwrite them",
            paths.join(", ")
        )),
        Err(RestoreError::Untouched(why)) => fail(format!(
            "nothing was restored, the workspace is as it was: {why}"
        )),
        Err(RestoreError::Midway(why)) => fail(format!(
            "the restore stopped midway: {why}; it is finished the next time the store is used"
        )),
        Err(RestoreError::Unrecorded(why)) => fail(format!(
            "the workspace is restored to checkpoint {id}, but the store could not record it: {why}"
        )),
        Err(RestoreError::Io(e)) => fail(e.to_string()),
    }
}

/// `p` (absolute, or relative to the current directory) as a path from the workspace.
fn workspace_path(workspace: &Path, p: &str) -> Result<String, String> {
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let abs = crate::guard::normalize(&cwd.join(p));
    let rel = abs.strip_prefix(workspace).map_err(|_| {
        format!(
            "{p} is not inside the workspace {} (checkpoints keep only the workspace)",
            workspace.display()
        )
    })?;
    Ok(rel.to_string_lossy().into_owned())
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
