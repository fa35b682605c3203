//! The `search_files` tool: paths under a directory that match a glob (the whole
//! relative path when the glob has a `/`, else the name), sorted.

use std::io;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;

use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{BoxFuture, CallContext, Tool, ToolError, ToolOutput, ToolResult, run_blocking};
use crate::guard::beneath::Kind;
use crate::guard::{Allowed, PathGuard};
use crate::tools::Env;
use crate::tools::common::{args, walk_error};
use crate::tools::walk::{Visibility, skipped_note, walk_beneath_parallel};

use super::{cancelled, fit_rows, search_root};

const FILES_DEFAULT_MAX: usize = 500;

pub(crate) struct SearchFiles {
    pub(super) env: Arc<Env>,
}

#[derive(Deserialize)]
struct FilesArgs {
    pattern: String,
    path: Option<String>,
    max_results: Option<usize>,
}

impl Tool for SearchFiles {
    fn name(&self) -> &str {
        "search_files"
    }

    fn title(&self) -> Option<String> {
        Some("Find files by glob".into())
    }

    fn description(&self) -> String {
        "Find files and directories whose path matches a glob, sorted by path. A pattern \
         with a `/` matches the path relative to `path` (e.g. \"src/**/*.rs\", \"**/test_*.py\"); \
         one without matches the name at any depth (e.g. \"*.toml\", \"Cargo.*\"). Respects \
         .gitignore and skips hidden files. Directories are shown with a trailing `/`. To search \
         inside files use grep."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob, e.g. \"**/*.rs\" or \"*.md\"."},
                "path": {"type": "string", "description": "Directory to search (default: the workspace)."},
                "max_results": {"type": "integer", "minimum": 1, "description": "Most paths to show; default 500."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn run(self: Arc<Self>, input: Value, ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        run_blocking(move || self.search(args(input)?, &ctx))
    }
}

/// A compiled path glob: against the whole relative path, or the name only.
struct PathGlob {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl PathGlob {
    fn new(pattern: &str, root: &Path) -> Result<PathGlob, ToolError> {
        let mut pattern = pattern.trim().to_string();
        // An absolute pattern under the search root: make it relative.
        if pattern.starts_with('/') {
            let root_str = format!("{}/", root.display());
            match pattern.strip_prefix(&root_str) {
                Some(rest) => pattern = rest.to_string(),
                None => {
                    return Err(ToolError::invalid_input(
                        format!(
                            "the pattern {pattern:?} is an absolute path outside the search path {}",
                            root.display()
                        ),
                        "put the directory in `path` and a relative glob in `pattern` (e.g. path \"src\", pattern \"**/*.rs\")",
                    ));
                }
            }
        }
        let pattern = pattern.trim_start_matches("./").to_string();
        if pattern.is_empty() {
            return Err(ToolError::invalid_input(
                "the pattern is empty",
                "give a glob such as \"**/*.rs\"",
            ));
        }
        let glob = GlobBuilder::new(&pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| {
                ToolError::invalid_input(
                    format!("invalid glob {pattern:?}: {e}"),
                    "use glob syntax: `*` within a name, `**` across directories, `{a,b}` alternatives, `[abc]` classes",
                )
            })?;
        Ok(PathGlob {
            whole_path: pattern.contains('/'),
            matcher: glob.compile_matcher(),
        })
    }

    fn is_match(&self, rel: &Path) -> bool {
        if self.whole_path {
            self.matcher.is_match(rel)
        } else {
            rel.file_name().is_some_and(|n| self.matcher.is_match(n))
        }
    }
}

impl SearchFiles {
    fn search(&self, a: FilesArgs, ctx: &CallContext) -> ToolResult {
        let env = &self.env;
        let root = search_root(env, a.path.as_deref())?;
        if !root.abs.is_dir() {
            return Err(ToolError::invalid_input(
                format!("{} is a file, not a directory", root.shown),
                "give a directory as `path`",
            ));
        }
        let glob = PathGlob::new(&a.pattern, &root.abs)?;
        let max_results = a.max_results.unwrap_or(FILES_DEFAULT_MAX).max(1);
        let cancel = &ctx.cancel;
        let found = matching_paths(&env.guard, &root, &glob, || cancel.is_cancelled())
            .map_err(|e| walk_error(env, &root, e))?;
        let Some(mut found) = found else {
            return Err(cancelled("search_files"));
        };
        found.sort();
        let total = found.len();
        let rows: Vec<String> = found
            .iter()
            .take(max_results)
            .map(|(p, is_dir)| if *is_dir { format!("{p}/") } else { p.clone() })
            .collect();
        let budget = self.env.limits.max_chars().saturating_sub(400);
        let (mut text, shown) = fit_rows(&rows, budget);
        let data = json!({
            "pattern": a.pattern,
            "path": root.shown,
            "total": total,
            "shown": shown,
            "paths": rows[..shown],
        });
        if total == 0 {
            let note = skipped_note(Visibility::default()).unwrap_or("");
            text = format!(
                "No paths match {:?} under {} ({note}).",
                a.pattern, root.shown
            );
            if !glob.whole_path {
                text.push_str(
                    " The pattern has no `/`, so it was matched against file names only.",
                );
            }
        } else if shown < total {
            text.push_str(&format!(
                "… showed {shown} of {total} paths; narrow `path` or the pattern\n"
            ));
        }
        Ok(ToolOutput::new(text, data))
    }
}

/// The paths under `root` that `glob` matches, as the model sees them, each with
/// whether it is a directory; `None` when cancelled. Walked by descriptor beneath the
/// root that admitted it (on several threads, as ripgrep's walker), so a directory
/// swapped for a link is matched as the link and never searched through.
fn matching_paths(
    guard: &PathGuard,
    root: &Allowed,
    glob: &PathGlob,
    cancelled: impl Fn() -> bool + Sync,
) -> io::Result<Option<Vec<(String, bool)>>> {
    // In no order, on several threads: the caller sorts by path.
    let found = std::sync::Mutex::new(Vec::new());
    let stopped = std::sync::atomic::AtomicBool::new(false);
    walk_beneath_parallel(root, Visibility::default(), &|entry| {
        if cancelled() {
            stopped.store(true, std::sync::atomic::Ordering::Relaxed);
            return ControlFlow::Break(());
        }
        if glob.is_match(entry.rel) {
            let is_dir = entry.kind == Kind::Dir;
            let shown = guard.show(&root.abs.join(entry.rel));
            found
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((shown, is_dir));
        }
        ControlFlow::Continue(())
    })?;
    let found = found.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok((!stopped.into_inner()).then_some(found))
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::guard::Access;

    #[test]
    fn search_files_refuses_a_directory_swapped_for_a_link_after_the_check() {
        let f = crate::tools::walk::SwapFixture::new();
        let ws = &f.ws;
        let guard = PathGuard::new(ws, &[], &[]).unwrap();
        let top = guard.check(".", Access::Read).unwrap();
        let d = guard.check("d", Access::Read).unwrap();
        let all = PathGlob::new("**/*", &top.abs).unwrap();
        // The task's swap, between the guard's check and the walk.
        f.swap();
        // The control: a walk by the checked path follows the swap outside.
        let by_path: Vec<_> = fs::read_dir(&d.abs)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(by_path, ["secret"]);

        let refused = matching_paths(&guard, &d, &all, || false).unwrap_err();
        // ENOTDIR for the link itself (O_DIRECTORY|O_NOFOLLOW), ELOOP for one on the way.
        assert_eq!(
            refused.raw_os_error(),
            Some(nix::libc::ENOTDIR),
            "{refused}"
        );
        let mut found = matching_paths(&guard, &top, &all, || false)
            .unwrap()
            .unwrap();
        found.sort();
        assert_eq!(
            found,
            [
                ("d".to_string(), false),
                ("d.real".to_string(), true),
                ("d.real/inside".to_string(), false),
            ]
        );
    }
}
