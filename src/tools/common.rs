//! Helpers every tool group uses: typed arguments, and turning guard and I/O failures
//! into errors that name the next step.

use std::io;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::core::{Code, ToolError};
use crate::guard::{Access, Allowed, GuardError};

use super::Env;

/// Deserialize validated arguments into the tool's own struct.
pub(crate) fn args<T: DeserializeOwned>(input: Value) -> Result<T, ToolError> {
    serde_json::from_value(input).map_err(|e| {
        ToolError::invalid_input(
            format!("arguments do not fit: {e}"),
            "check the field types against the tool's schema",
        )
    })
}

/// Ask the guard, turning a refusal into an error that names the allowed roots.
pub(crate) fn guarded(env: &Env, raw: &str, access: Access) -> Result<Allowed, ToolError> {
    env.guard
        .check(raw, access)
        .map_err(|e| guard_error(env, e, access))
}

pub(crate) fn guard_error(env: &Env, err: GuardError, access: Access) -> ToolError {
    match err {
        GuardError::Nul => ToolError::invalid_input(
            "the path contains a NUL byte",
            "send the path as plain text without control characters",
        ),
        GuardError::Empty => ToolError::invalid_input(
            "the path is empty",
            "give a path relative to the workspace (e.g. \"src/main.rs\") or an absolute one inside it",
        ),
        GuardError::Denied {
            shown, resolved, ..
        } => {
            let roots = env.guard.describe_roots(access);
            let via = if resolved.display().to_string() != shown {
                format!(" (it resolves to {})", resolved.display())
            } else {
                String::new()
            };
            let next = match access {
                Access::Read => format!(
                    "{roots}; use a path inside them, or add the directory to `read_roots` in the profile"
                ),
                Access::Write => format!("{roots}; write inside it"),
            };
            ToolError::new(
                Code::PathDenied,
                format!("{shown} is outside the allowed roots{via}"),
                next,
            )
            .with_data(json!({
                "path": shown,
                "resolved": resolved.display().to_string(),
                "workspace": env.guard.workspace().display().to_string(),
                "read_roots": env.guard.read_roots().iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            }))
        }
        GuardError::Resolve { shown, source } => ToolError::invalid_input(
            format!("cannot resolve {shown}: {source}"),
            "use the real path the link points to",
        ),
    }
}

/// Map an I/O error on `allowed` to an error with a next step.
pub(crate) fn io_error(env: &Env, allowed: &Allowed, err: io::Error) -> ToolError {
    match err.kind() {
        io::ErrorKind::NotFound => not_found(env, allowed),
        io::ErrorKind::PermissionDenied => match (&env.sandbox, env.in_sandbox()) {
            // Under Landlock the kernel may be the one saying no: say which sets apply.
            (Some(sandbox), true) => ToolError::new(
                Code::PathDenied,
                format!(
                    "the operating system denied access to {} (permission denied): {}",
                    allowed.shown,
                    sandbox.explain(&allowed.abs)
                ),
                "use a path inside the sandbox's sets, or ask the user to widen the profile",
            ),
            _ => ToolError::new(
                Code::PathDenied,
                format!(
                    "the operating system denied access to {} (permission denied)",
                    allowed.shown
                ),
                "the file's permissions do not allow it; use another file",
            ),
        },
        io::ErrorKind::NotADirectory => ToolError::new(
            Code::NotFound,
            format!(
                "{}: a parent of this path is a file, not a directory",
                allowed.shown
            ),
            "check the path with list_dir",
        ),
        _ => ToolError::io(&allowed.shown, &err, "nothing was changed"),
    }
}

/// A walk's failure to open its start directory. It was a directory at the check, so a
/// link or a file there now (`ELOOP`, `ENOTDIR`: the walk opens beneath the root and
/// follows no link) means it was replaced since: refused, never walked through.
pub(crate) fn walk_error(env: &Env, allowed: &Allowed, err: io::Error) -> ToolError {
    match err.raw_os_error() {
        Some(nix::libc::ELOOP | nix::libc::ENOTDIR) => ToolError::new(
            Code::PathDenied,
            format!(
                "{} (or a directory on the way to it) is no longer a directory: a link or a \
                 file replaced it after the check, and a walk follows no link",
                allowed.shown
            ),
            "list the directory again; to see a link's target, list that target by its own path",
        ),
        _ => io_error(env, allowed, err),
    }
}

/// `not_found`, with the nearest names in the closest existing directory.
pub(crate) fn not_found(env: &Env, allowed: &Allowed) -> ToolError {
    let (dir, missing) = nearest_existing(&allowed.abs);
    let mut suggestions: Vec<String> = Vec::new();
    if let (Some(dir), Some(missing)) = (&dir, &missing)
        && let Ok(entries) = std::fs::read_dir(dir)
    {
        let names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        for near in crate::core::nearest_names(missing, names.iter().map(String::as_str)) {
            suggestions.push(env.guard.show(&dir.join(near)));
        }
    }
    let next = match (suggestions.first(), &dir) {
        (Some(_), _) => format!("did you mean {}?", suggestions.join(", ")),
        (None, Some(dir)) => format!(
            "{} exists; list it with list_dir or find the file with search_files",
            env.guard.show(dir)
        ),
        (None, None) => "find the file with search_files".into(),
    };
    ToolError::new(
        Code::NotFound,
        format!("{} does not exist", allowed.shown),
        next,
    )
    .with_data(json!({"path": allowed.shown, "suggestions": suggestions}))
}

/// The deepest existing ancestor of `path` and the first missing name below it.
fn nearest_existing(path: &Path) -> (Option<std::path::PathBuf>, Option<String>) {
    let mut missing = None;
    let mut cur = path;
    while let Some(parent) = cur.parent() {
        missing = cur.file_name().map(|n| n.to_string_lossy().into_owned());
        if parent.is_dir() {
            return (Some(parent.to_path_buf()), missing);
        }
        cur = parent;
    }
    (None, missing)
}

/// `1.2 KiB`, `3 B`: sizes as a person reads them.
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: &[&str] = &["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Cut `line` to `max` characters, saying how many were cut.
pub(crate) fn cut_line(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        None => line.to_string(),
        Some((i, _)) => {
            let cut = line[i..].chars().count();
            format!("{}… [{cut} more chars]", &line[..i])
        }
    }
}
