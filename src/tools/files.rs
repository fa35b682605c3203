//! Group `files`: read_file and list_dir (load_skill lives in `skills`).

use nix::fcntl::OFlag;
use std::io;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{
    BoxFuture, CallContext, Code, Registry, RegistryError, Tool, ToolError, ToolOutput, ToolResult,
    run_blocking,
};
use crate::guard::beneath::Kind;
use crate::guard::{Access, Allowed};
use crate::mutation::Fingerprint;
use crate::text::{DecodeError, Page, PageError, PageRequest, read_page};

use super::Env;
use super::common::{args, guarded, human_size, io_error, walk_error};
use super::skills::LoadSkill;
use super::walk::{Visibility, skipped_note, walk_beneath};

pub(crate) fn register(env: &Arc<Env>, registry: &mut Registry) -> Result<(), RegistryError> {
    registry.register(
        "files",
        Arc::new(ReadFile {
            env: Arc::clone(env),
        }),
    )?;
    registry.register(
        "files",
        Arc::new(ListDir {
            env: Arc::clone(env),
        }),
    )?;
    registry.register("files", Arc::new(LoadSkill::new(Arc::clone(env))))?;
    Ok(())
}

const DEFAULT_LIMIT: u64 = 2000;
const MAX_LINE_CHARS: usize = 2000;
/// After the page, count lines for at most this many bytes so the total is known.
const COUNT_BUDGET_BYTES: u64 = 64 * 1024 * 1024;

pub(crate) struct ReadFile {
    env: Arc<Env>,
}

#[derive(Deserialize)]
struct ReadArgs {
    file_path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}

impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }

    fn title(&self) -> Option<String> {
        Some("Read file".into())
    }

    fn description(&self) -> String {
        format!(
            "Read a text file as numbered lines (`cat -n` style: line number, tab, text). \
             Shows up to {DEFAULT_LIMIT} lines from `offset` (1-based); lines over \
             {MAX_LINE_CHARS} characters are cut with a marker. Decodes UTF-8, UTF-8/UTF-16 \
             with BOM and GB18030 (the encoding is reported); binary files are refused, \
             never dumped. Long files are paged: the result says which offset continues. \
             Paths are relative to the workspace ({}) or absolute inside an allowed root.",
            self.env.guard.workspace().display()
        )
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "File to read, relative to the workspace or absolute."},
                "offset": {"type": "integer", "minimum": 0, "description": "1-based line to start at (default 1)."},
                "limit": {"type": "integer", "minimum": 1, "description": "How many lines to show (default 2000)."}
            },
            "required": ["file_path"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn run(self: Arc<Self>, input: Value, _ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        run_blocking(move || self.read(args(input)?))
    }
}

impl ReadFile {
    fn read(&self, a: ReadArgs) -> ToolResult {
        let env = &self.env;
        let allowed = guarded(env, &a.file_path, Access::Read)?;
        let shown = allowed.shown.clone();
        // Opened beneath its root without following a link: what the guard checked is
        // what is read, even if a task swaps a directory on the way for a link meanwhile.
        // Non-blocking, so a FIFO is refused below instead of hanging the call.
        let mut file = allowed
            .open(OFlag::O_RDONLY | OFlag::O_NONBLOCK)
            .map_err(|e| io_error(env, &allowed, e))?;
        let meta = file.metadata().map_err(|e| io_error(env, &allowed, e))?;
        if meta.is_dir() {
            return Err(ToolError::new(
                Code::IsDirectory,
                format!("{shown} is a directory, not a file"),
                format!(
                    "list it with list_dir {{\"path\": \"{shown}\"}}, or read a file inside it"
                ),
            ));
        }
        if !meta.is_file() {
            return Err(ToolError::invalid_input(
                format!("{shown} is not a regular file (a device, socket or pipe)"),
                "read_file only reads regular files",
            ));
        }
        let size = meta.len();
        let first = a.offset.unwrap_or(1).max(1);
        let limit = a.limit.unwrap_or(DEFAULT_LIMIT).max(1);
        let request = PageRequest {
            first_line: first,
            max_lines: limit,
            max_line_chars: MAX_LINE_CHARS,
            count_budget_bytes: COUNT_BUDGET_BYTES,
        };
        let page = read_page(&mut file, &request).map_err(|e| match e {
            PageError::Decode(DecodeError::Binary) => binary_file(&shown, size),
            PageError::Decode(DecodeError::Undecodable { offset }) => ToolError::new(
                Code::Undecodable,
                format!(
                    "{shown} is not text in UTF-8 (first invalid byte at offset {offset}), \
                     UTF-16 with a BOM, or GB18030; it is not shown through a lossy decode"
                ),
                "if it is in another legacy encoding, convert it to UTF-8 first (e.g. with iconv); \
                 otherwise treat it as binary",
            )
            .with_data(json!({"path": shown, "offset": offset, "size_bytes": size})),
            PageError::Io(e) => io_error(env, &allowed, e),
        })?;
        if let Some(sha) = page.sha256 {
            // What the model has now seen: a later write over it is not stale. The
            // fingerprint counts only if the file held still while it was read.
            let fingerprint = file
                .metadata()
                .ok()
                .map(|after| Fingerprint::of(&after))
                .filter(|after| *after == Fingerprint::of(&meta));
            env.ledger.record_read(&allowed.abs, sha, fingerprint);
        }
        self.render(&shown, size, first, &page)
    }

    fn render(&self, shown: &str, size: u64, first: u64, page: &Page) -> ToolResult {
        let mut data = json!({
            "path": shown,
            "encoding": page.detected.name(),
            "bom": page.detected.has_bom(),
            "line_endings": page.line_endings,
            "size_bytes": size,
            "total_lines": page.total_lines,
        });
        if page.total_lines == Some(0) {
            data["lines_shown"] = json!(0);
            return Ok(ToolOutput::new(
                format!("({shown} is empty: 0 bytes)"),
                data,
            ));
        }
        if page.lines.is_empty() {
            let total = page.total_lines.unwrap_or(first - 1);
            return Err(ToolError::invalid_input(
                format!("offset {first} is past the end of {shown}, which has {total} lines"),
                format!("use an offset between 1 and {total}"),
            )
            .with_data(data));
        }
        // Stop adding lines before the envelope cap would cut the listing in the middle;
        // the footer then says where to continue.
        let budget = self.env.limits.max_chars().saturating_sub(400);
        let mut text = String::new();
        let mut shown_chars = 0usize;
        let mut last = first - 1;
        let mut cut_lines = 0u64;
        for line in &page.lines {
            let mut row = format!("{:>6}\t{}", line.number, line.text);
            if line.cut_chars > 0 {
                cut_lines += 1;
                row.push_str(&format!("… [line cut: {} more chars]", line.cut_chars));
            }
            row.push('\n');
            let row_chars = row.chars().count();
            if shown_chars + row_chars > budget && last >= first {
                break;
            }
            shown_chars += row_chars;
            text.push_str(&row);
            last = line.number;
        }
        let next = last + 1;
        let more = match page.total_lines {
            Some(total) => total > last,
            None => true,
        };
        if more {
            let why = if last < page.lines.last().map_or(last, |l| l.number) {
                "output limit reached"
            } else {
                "limit reached"
            };
            let total = match page.total_lines {
                Some(t) => format!("{t} lines in all"),
                None => format!("file is {} and continues", human_size(size)),
            };
            text.push_str(&format!(
                "… {why}: showed lines {first}–{last} ({total}); continue with offset={next}\n"
            ));
        }
        data["first_line"] = json!(first);
        data["last_line"] = json!(last);
        data["lines_shown"] = json!(last + 1 - first);
        data["lines_cut"] = json!(cut_lines);
        data["next_offset"] = if more { json!(next) } else { Value::Null };
        Ok(ToolOutput::new(text, data))
    }
}

fn binary_file(shown: &str, size: u64) -> ToolError {
    ToolError::new(
        Code::BinaryFile,
        format!(
            "{shown} is a binary file ({}, {size} bytes); it is not shown as text",
            human_size(size)
        ),
        "if you need its contents, inspect it with a purpose-built tool (e.g. `file`, `xxd | head`) \
         through the shell; to find text, use grep, which skips binary files",
    )
    .with_data(json!({"path": shown, "size_bytes": size}))
}

const DEFAULT_DEPTH: usize = 2;
const MAX_ENTRIES: usize = 1000;

pub(crate) struct ListDir {
    env: Arc<Env>,
}

#[derive(Deserialize)]
struct ListArgs {
    path: Option<String>,
    depth: Option<usize>,
    #[serde(default)]
    include_hidden: bool,
    #[serde(default)]
    include_ignored: bool,
}

impl Tool for ListDir {
    fn name(&self) -> &str {
        "list_dir"
    }

    fn title(&self) -> Option<String> {
        Some("List directory".into())
    }

    fn description(&self) -> String {
        format!(
            "List a directory as an indented tree: directories end with `/`, files show \
             their size, symlinks their target. `depth` levels deep (default {DEFAULT_DEPTH}); \
             .gitignore'd and hidden entries are skipped unless asked for. At most \
             {MAX_ENTRIES} entries, with a note of what was left out. Default path: the workspace."
        )
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory to list (default: the workspace)."},
                "depth": {"type": "integer", "minimum": 1, "maximum": 32, "description": "Levels to descend (1 = only direct entries; default 2)."},
                "include_hidden": {"type": "boolean", "description": "Also list dotfiles and dot-directories."},
                "include_ignored": {"type": "boolean", "description": "Also list entries excluded by .gitignore/.ignore."}
            },
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn run(self: Arc<Self>, input: Value, ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        run_blocking(move || self.list(args(input)?, &ctx))
    }
}

struct Entry {
    rel: String,
    depth: usize,
    kind: &'static str,
    size: Option<u64>,
    link: Option<String>,
    /// For directories at the depth limit: how many entries they hold.
    inside: Option<usize>,
}

impl ListDir {
    fn list(&self, a: ListArgs, ctx: &CallContext) -> ToolResult {
        let env = &self.env;
        let raw = a.path.as_deref().unwrap_or(".");
        let allowed = guarded(env, raw, Access::Read)?;
        let meta = std::fs::metadata(&allowed.abs).map_err(|e| io_error(env, &allowed, e))?;
        if !meta.is_dir() {
            return Err(ToolError::invalid_input(
                format!("{} is a file, not a directory", allowed.shown),
                format!(
                    "read it with read_file {{\"file_path\": \"{}\"}}",
                    allowed.shown
                ),
            ));
        }
        let depth = a.depth.unwrap_or(DEFAULT_DEPTH).max(1);
        let visibility = Visibility {
            hidden: a.include_hidden,
            ignored: a.include_ignored,
        };
        let cancel = &ctx.cancel;
        let (entries, complete) =
            list_entries(&allowed, depth, visibility, || cancel.is_cancelled())
                .map_err(|e| walk_error(env, &allowed, e))?
                .ok_or_else(|| {
                    ToolError::new(
                        Code::Cancelled,
                        "list_dir was cancelled",
                        "list a smaller directory",
                    )
                })?;
        let mut text = format!("{}/\n", allowed.shown.trim_end_matches('/'));
        for e in &entries {
            let indent = "  ".repeat(e.depth);
            let name = e.rel.rsplit('/').next().unwrap_or(&e.rel);
            let line = match e.kind {
                "dir" => match e.inside {
                    Some(0) => format!("{indent}{name}/ (empty)"),
                    Some(n) => format!("{indent}{name}/ ({n} entries, not listed)"),
                    None => format!("{indent}{name}/"),
                },
                "file" => format!("{indent}{name}  ({})", human_size(e.size.unwrap_or(0))),
                "symlink" => format!("{indent}{name} -> {}", e.link.as_deref().unwrap_or("?")),
                _ => format!("{indent}{name} (special file)"),
            };
            text.push_str(&line);
            text.push('\n');
        }
        if entries.is_empty() {
            text.push_str("  (no entries)\n");
        }
        if !complete {
            text.push_str(&format!(
                "… stopped at {MAX_ENTRIES} entries; list a subdirectory or use a smaller depth\n"
            ));
        }
        if let Some(note) = skipped_note(visibility) {
            text.push_str(&format!("({note})\n"));
        }
        let data = json!({
            "path": allowed.shown,
            "depth": depth,
            "complete": complete,
            "count": entries.len(),
            "entries": entries.iter().map(|e| json!({
                "path": e.rel, "kind": e.kind, "size": e.size, "target": e.link,
            })).collect::<Vec<_>>(),
        });
        Ok(ToolOutput::new(text, data))
    }
}

/// The entries under `allowed` (a directory), `depth` levels deep in name order, and
/// whether all fitted in [`MAX_ENTRIES`]; `None` when cancelled. Walked by descriptor
/// beneath the root that admitted it: a directory swapped for a link is shown as the
/// link, never listed through.
fn list_entries(
    allowed: &Allowed,
    depth: usize,
    visibility: Visibility,
    cancelled: impl Fn() -> bool,
) -> io::Result<Option<(Vec<Entry>, bool)>> {
    let mut entries = Vec::new();
    let mut complete = true;
    let mut stopped = false;
    walk_beneath(allowed, visibility, Some(depth), |found| {
        if cancelled() {
            stopped = true;
            return ControlFlow::Break(());
        }
        if entries.len() >= MAX_ENTRIES {
            complete = false;
            return ControlFlow::Break(());
        }
        let (kind, size, link) = match found.kind {
            Kind::Symlink => (
                "symlink",
                None,
                found
                    .dir
                    .read_link(found.name)
                    .ok()
                    .map(|t| t.display().to_string()),
            ),
            Kind::Dir => ("dir", None, None),
            Kind::File => (
                "file",
                found
                    .dir
                    .stat(found.name)
                    .ok()
                    .flatten()
                    .map(|st| st.st_size as u64),
                None,
            ),
            Kind::Other => ("other", None, None),
        };
        // A directory at the depth limit: how many entries it holds, counted through
        // a descriptor opened beneath its parent (a link there counts nothing).
        let inside = (kind == "dir" && found.depth == depth)
            .then(|| {
                let sub = found.dir.sub(Path::new(found.name)).ok()?;
                sub.entries().ok().map(|names| names.len())
            })
            .flatten();
        entries.push(Entry {
            rel: found.rel.display().to_string(),
            depth: found.depth,
            kind,
            size,
            link,
            inside,
        });
        ControlFlow::Continue(())
    })?;
    Ok((!stopped).then_some((entries, complete)))
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::guard::PathGuard;

    #[test]
    fn list_dir_refuses_a_directory_swapped_for_a_link_after_the_check() {
        let f = crate::tools::walk::SwapFixture::new();
        let ws = &f.ws;
        let guard = PathGuard::new(ws, &[], &[]).unwrap();
        let top = guard.check(".", Access::Read).unwrap();
        let d = guard.check("d", Access::Read).unwrap();
        // The task's swap, between the guard's check and the walk.
        f.swap();
        // The control: a walk by the checked path follows the swap outside.
        let by_path: Vec<_> = fs::read_dir(&d.abs)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(by_path, ["secret"]);

        let Err(refused) = list_entries(&d, 2, Visibility::default(), || false) else {
            panic!("the swapped start was walked");
        };
        // ENOTDIR for the link itself (O_DIRECTORY|O_NOFOLLOW), ELOOP for one on the way.
        assert_eq!(
            refused.raw_os_error(),
            Some(nix::libc::ENOTDIR),
            "{refused}"
        );
        let (entries, complete) = list_entries(&top, 2, Visibility::default(), || false)
            .unwrap()
            .unwrap();
        assert!(complete);
        let listed: Vec<_> = entries
            .iter()
            .map(|e| (e.rel.as_str(), e.kind, e.link.clone()))
            .collect();
        assert_eq!(
            listed,
            [
                ("d", "symlink", Some(f.out.display().to_string())),
                ("d.real", "dir", None),
                ("d.real/inside", "file", None),
            ]
        );
    }
}
