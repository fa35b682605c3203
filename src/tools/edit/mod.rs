//! Group `edit`: edit, multi_edit and write. Each is one read-modify-write under the
//! file's stripe lock: read the bytes, decode them into a [`Document`], compute the new
//! text with the edit engine, restore encoding and line endings, and [`commit`] only if
//! the file still holds the bytes that were read.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{
    BoxFuture, CallContext, Code, Registry, RegistryError, Repair, RepairKind, Tool, ToolError,
    ToolOutput, ToolResult, run_blocking,
};
use crate::edit::steps::{Edited, Step};
use crate::edit::{self, Failure, Level, Tag};
use crate::guard::{Access, Allowed};
use crate::mutation::{CommitError, Expect, Fingerprint, Freshness, commit};
use crate::text::{DecodeError, Document, Ending, Style, diff, normalize_input};

use super::Env;
use super::common::{args, guarded, human_size, io_error};

pub(crate) fn register(env: &Arc<Env>, registry: &mut Registry) -> Result<(), RegistryError> {
    registry.register(
        "edit",
        Arc::new(Edit {
            env: Arc::clone(env),
        }),
    )?;
    registry.register(
        "edit",
        Arc::new(MultiEdit {
            env: Arc::clone(env),
        }),
    )?;
    registry.register(
        "edit",
        Arc::new(Write {
            env: Arc::clone(env),
        }),
    )?;
    Ok(())
}

/// Room left for the diff in a result, after the summary lines.
const SUMMARY_RESERVE: usize = 1500;

fn edit_schema_item() -> Value {
    json!({
        "search": {"type": "string", "description": "Text to find, copied from the file (whitespace, escapes and quotes that are slightly off still match when the match is unique)."},
        "replace": {"type": "string", "description": "Text to put in its place."},
        "replace_all": {"type": "boolean", "description": "Replace every exact occurrence instead of requiring exactly one."}
    })
}

/// A file loaded for editing: its resolved path, its bytes as read, and the document.
struct Loaded {
    allowed: Allowed,
    doc: Document,
    /// The file's bytes when they are not simply `doc.text` (see [`Document::decode_owned`]).
    original: Option<Vec<u8>>,
    /// The file's fingerprint, if it held still while it was read.
    fingerprint: Option<Fingerprint>,
}

impl Loaded {
    /// The bytes as read from disk.
    fn bytes(&self) -> &[u8] {
        self.original.as_deref().unwrap_or(self.doc.text.as_bytes())
    }

    fn freshness(&self, env: &Env) -> Freshness {
        env.ledger
            .freshness(&self.allowed.abs, self.fingerprint, self.bytes())
    }
}

fn decode_error(shown: &str, size: u64, e: DecodeError) -> ToolError {
    match e {
        DecodeError::Binary => ToolError::new(
            Code::BinaryFile,
            format!(
                "{shown} is a binary file ({}); it is never edited as text",
                human_size(size)
            ),
            "edit text files only; binary files need purpose-built tools",
        ),
        DecodeError::Undecodable { offset } => ToolError::new(
            Code::Undecodable,
            format!(
                "{shown} is not valid UTF-8 (first bad byte at offset {offset}), UTF-16 with a BOM, \
                 or GB18030; it is not rewritten, since that would change bytes you did not edit"
            ),
            "convert the file to UTF-8 first (e.g. with iconv), then edit it",
        ),
    }
}

fn too_large(shown: &str, size: u64, max: u64) -> ToolError {
    ToolError::new(
        Code::TooLarge,
        format!(
            "{shown} would be {} ({size} bytes), over the {} limit (`[edit] max_file_bytes`)",
            human_size(size),
            human_size(max)
        ),
        "edit a smaller file, or raise `max_file_bytes` in the profile's [edit] section",
    )
}

/// Read and decode an existing file for a read-modify-write, after checking it is a
/// regular file within the size limit.
fn load(env: &Env, allowed: Allowed) -> Result<Loaded, ToolError> {
    let shown = allowed.shown.clone();
    let meta = match std::fs::metadata(&allowed.abs) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut err = io_error(env, &allowed, e);
            err.next_step = format!(
                "{}; to create the file use write {{\"file_path\": \"{shown}\", \"content\": …}}",
                err.next_step
            );
            return Err(err);
        }
        Err(e) => return Err(io_error(env, &allowed, e)),
    };
    if meta.is_dir() {
        return Err(ToolError::new(
            Code::IsDirectory,
            format!("{shown} is a directory, not a file"),
            "give the path of a file inside it",
        ));
    }
    if !meta.is_file() {
        return Err(ToolError::invalid_input(
            format!("{shown} is not a regular file"),
            "only regular files can be edited",
        ));
    }
    let max = env.profile.edit.max_file_bytes;
    if meta.len() > max {
        return Err(too_large(&shown, meta.len(), max));
    }
    let bytes = std::fs::read(&allowed.abs).map_err(|e| io_error(env, &allowed, e))?;
    let fingerprint = std::fs::metadata(&allowed.abs)
        .ok()
        .map(|after| Fingerprint::of(&after))
        .filter(|after| *after == Fingerprint::of(&meta));
    let size = bytes.len() as u64;
    let (doc, original) =
        Document::decode_owned(bytes).map_err(|e| decode_error(&allowed.shown, size, e))?;
    Ok(Loaded {
        allowed,
        doc,
        original,
        fingerprint,
    })
}

/// Commit `new_bytes` where `expect` holds, and remember them as seen (their hash is
/// computed in the background).
fn store(
    env: &Env,
    allowed: &Allowed,
    expect: Expect<'_>,
    new_bytes: Vec<u8>,
) -> Result<(), ToolError> {
    commit(&allowed.abs, expect, &new_bytes).map_err(|e| match e {
        CommitError::Conflict => ToolError::new(
            Code::WriteConflict,
            format!(
                "{} changed on disk while the change was being made (another program wrote it); nothing was written",
                allowed.shown
            ),
            "read the file again and redo the change on its current content",
        ),
        CommitError::Io(e) => io_error(env, allowed, e),
    })?;
    let fingerprint = std::fs::metadata(&allowed.abs)
        .ok()
        .map(|m| Fingerprint::of(&m));
    env.ledger
        .record_written(&allowed.abs, new_bytes, fingerprint);
    Ok(())
}

fn style_name(style: Style) -> &'static str {
    match style {
        Style::None => "none",
        Style::Lf => "lf",
        Style::Crlf => "crlf",
        Style::Cr => "cr",
        Style::Mixed => "mixed",
    }
}

fn repair_kind(tag: Tag) -> (RepairKind, &'static str) {
    match tag {
        Tag::WhitespaceNormalized => (
            RepairKind::WhitespaceNormalized,
            "matched after relaxing whitespace at line ends; unchanged lines keep the file's own bytes",
        ),
        Tag::IndentationRealigned => (
            RepairKind::IndentationRealigned,
            "the replacement's changed lines were written in the file's indentation (its tabs or spaces, and the depth meant)",
        ),
        Tag::JsonEscapeUnwrapped => (
            RepairKind::JsonEscapeUnwrapped,
            "literal \\n, \\t, \\\" … in search and replace were unescaped",
        ),
        Tag::UnicodeNormalized => (
            RepairKind::UnicodeNormalized,
            "curly quotes, dashes and odd spaces were folded to ASCII to find the match",
        ),
    }
}

fn repairs_for(tags: &[Tag], field: &str) -> Vec<Repair> {
    tags.iter()
        .map(|&tag| {
            let (kind, detail) = repair_kind(tag);
            Repair::new(kind, field, detail)
        })
        .collect()
}

/// Turn an engine failure into an error with the next step. `step` names the
/// multi_edit step, if any.
fn failure(shown: &str, f: Failure, step: Option<(usize, usize)>) -> ToolError {
    let prefix = match step {
        Some((i, n)) => format!(
            "edits[{i}] (step {} of {n}) failed, so no edit was applied: ",
            i + 1
        ),
        None => String::new(),
    };
    let mut err = match f {
        Failure::Invalid { message, next_step } => {
            ToolError::invalid_input(format!("{prefix}{message}"), next_step)
        }
        Failure::NotFound {
            message,
            line,
            span,
            long_search,
        } => {
            let mut next = match line {
                Some(l) => format!(
                    "read that region with read_file {{\"file_path\": \"{shown}\", \"offset\": {l}, \"limit\": {}}} \
                     and copy the text exactly into search",
                    span + 6
                ),
                None => format!(
                    "read {shown} with read_file (or find the text with grep) and copy it exactly into search"
                ),
            };
            if long_search {
                next.push_str(
                    "; the search block is over 40 lines: split it into smaller edits, or use multi_edit",
                );
            }
            ToolError::new(
                Code::SearchNotFound,
                format!("{prefix}search text not found in {shown}: {message}"),
                next,
            )
            .with_data(json!({"closest_line": line}))
        }
        Failure::NotUnique { level, lines } => {
            let list = lines
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let (message, next) = if level == Level::Exact {
                (
                    format!("{prefix}search text occurs {} times in {shown} (lines {list})", lines.len()),
                    "add surrounding lines to search so it matches exactly once, or set replace_all: true to change every occurrence".to_string(),
                )
            } else {
                (
                    format!(
                        "{prefix}search text has no exact match in {shown}, and the {} is ambiguous: candidates at lines {list}",
                        level.describe()
                    ),
                    "copy the exact text of the occurrence you mean, with a line of context, into search".to_string(),
                )
            };
            ToolError::new(Code::SearchNotUnique, message, next).with_data(json!({"lines": lines}))
        }
    };
    if let Some((i, _)) = step
        && let Value::Object(map) = &mut err.data
    {
        map.insert("step".into(), json!(i));
    } else if let Some((i, _)) = step {
        err.data = json!({"step": i});
    }
    err
}

/// Note for a file that changed on disk since this session last saw it.
fn freshness_note(loaded: &Loaded, freshness: Freshness) -> (Option<String>, Value) {
    match freshness {
        Freshness::Changed => (
            Some(format!(
                "Note: {} changed on disk since you last read it; the edit was applied to its current content.",
                loaded.allowed.shown
            )),
            json!(true),
        ),
        Freshness::Same => (None, json!(false)),
        Freshness::Unseen => (None, Value::Null),
    }
}

/// Apply the steps to the file, write once, and describe the result.
fn edit_file(
    env: &Env,
    file_path: &str,
    steps: &[(String, String, bool)],
    multi: bool,
) -> ToolResult {
    let started = Instant::now();
    let allowed = guarded(env, file_path, Access::Write)?;
    let _lock = env.stripes.lock(&[&allowed.abs]);
    let loaded = load(env, allowed)?;
    let loaded_at = started.elapsed();
    let result = apply_steps(env, &loaded, steps, multi);
    tracing::debug!(
        path = %loaded.allowed.shown,
        bytes = loaded.bytes().len(),
        load_us = loaded_at.as_micros() as u64,
        total_us = started.elapsed().as_micros() as u64,
        "edit timings"
    );
    result
}

fn apply_steps(
    env: &Env,
    loaded: &Loaded,
    steps: &[(String, String, bool)],
    multi: bool,
) -> ToolResult {
    let shown = loaded.allowed.shown.clone();
    let normalized: Vec<(String, String, bool)> = steps
        .iter()
        .map(|(search, replace, all)| (normalize_input(search), normalize_input(replace), *all))
        .collect();
    let engine_steps: Vec<Step<'_>> = normalized
        .iter()
        .map(|(search, replace, all)| Step {
            search,
            replace,
            replace_all: *all,
        })
        .collect();
    let Edited {
        text,
        steps: results,
        changes,
    } = edit::steps::apply_steps(&loaded.doc.text, &engine_steps)
        .map_err(|(i, f)| failure(&shown, f, multi.then_some((i, steps.len()))))?;
    let repairs: Vec<Repair> = results
        .iter()
        .enumerate()
        .flat_map(|(i, outcome)| {
            let field = if multi {
                format!("/edits/{i}/search")
            } else {
                "/search".to_string()
            };
            repairs_for(&outcome.tags, &field)
        })
        .collect();
    if text == loaded.doc.text {
        return Err(ToolError::invalid_input(
            format!("the edit would not change {shown}: the replacement equals what is there"),
            "put the new text in replace",
        ));
    }
    let applied_at = Instant::now();
    let budget = env.limits.max_chars().saturating_sub(SUMMARY_RESERVE);
    let (diff_text, stats) =
        diff::unified_changed(&loaded.doc.text, &text, &changes, &shown, budget);
    let diffed_at = Instant::now();
    let new_bytes = loaded.doc.into_bytes(text, &changes);
    let max = env.profile.edit.max_file_bytes;
    if new_bytes.len() as u64 > max {
        return Err(too_large(&shown, new_bytes.len() as u64, max));
    }
    let (note, changed_since_read) = freshness_note(loaded, loaded.freshness(env));
    let bytes_after = new_bytes.len();
    let checked_at = Instant::now();
    store(
        env,
        &loaded.allowed,
        Expect::Bytes(loaded.bytes()),
        new_bytes,
    )?;
    tracing::debug!(
        diff_us = (diffed_at - applied_at).as_micros() as u64,
        freshness_us = (checked_at - diffed_at).as_micros() as u64,
        commit_us = checked_at.elapsed().as_micros() as u64,
        "edit phases"
    );

    let total: usize = results.iter().map(|a| a.replacements).sum();
    let mut out = if multi {
        let mut s = format!(
            "Edited {shown}: {} edits, {total} replacement{} in all.\n",
            results.len(),
            plural(total)
        );
        for (i, a) in results.iter().enumerate() {
            s.push_str(&format!(
                "  {}. line {}: {} replacement{} ({})\n",
                i + 1,
                a.line,
                a.replacements,
                plural(a.replacements),
                a.level.describe()
            ));
        }
        s
    } else {
        let a = &results[0];
        format!(
            "Edited {shown}: {} replacement{} ({}) at line {}.\n",
            a.replacements,
            plural(a.replacements),
            a.level.describe(),
            a.line
        )
    };
    if let Some(note) = note {
        out.push_str(&note);
        out.push('\n');
    }
    out.push_str(&diff_text);
    let data = json!({
        "path": shown,
        "replacements": total,
        "steps": results.iter().map(|a| json!({
            "level": a.level, "replacements": a.replacements, "line": a.line,
        })).collect::<Vec<_>>(),
        "encoding": loaded.doc.detected.name(),
        "line_endings": style_name(loaded.doc.style()),
        "bytes_before": loaded.bytes().len(),
        "bytes_after": bytes_after,
        "lines_added": stats.added,
        "lines_removed": stats.removed,
        "changed_since_read": changed_since_read,
    });
    Ok(ToolOutput::new(out, data).with_repairs(repairs))
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

pub(crate) struct Edit {
    env: Arc<Env>,
}

#[derive(Deserialize)]
struct EditArgs {
    file_path: String,
    search: String,
    replace: String,
    #[serde(default)]
    replace_all: bool,
}

impl Tool for Edit {
    fn name(&self) -> &str {
        "edit"
    }

    fn changes_workspace(&self, input: &Value) -> Option<String> {
        input["file_path"].as_str().map(str::to_string)
    }

    fn title(&self) -> Option<String> {
        Some("Edit file".into())
    }

    fn description(&self) -> String {
        "Replace text in a file: `search` must match exactly once (or set `replace_all`). \
         When it does not match exactly, a unique match that differs only in whitespace at line \
         ends or indentation, in literal \\n/\\t escapes, or in curly quotes/dashes is used \
         instead (reported in `repairs`); an ambiguous match is never applied. Keeps the file's \
         encoding, BOM and line endings; lines you did not change keep their exact bytes. \
         Answers with a unified diff. On a miss, it says where the closest text diverges."
            .into()
    }

    fn parameters(&self) -> Value {
        let mut props = edit_schema_item();
        props["file_path"] =
            json!({"type": "string", "description": "File to edit (inside the workspace)."});
        json!({
            "type": "object",
            "properties": props,
            "required": ["file_path", "search", "replace"],
            "additionalProperties": false
        })
    }

    fn run(self: Arc<Self>, input: Value, _ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        run_blocking(move || {
            let a: EditArgs = args(input)?;
            edit_file(
                &self.env,
                &a.file_path,
                &[(a.search, a.replace, a.replace_all)],
                false,
            )
        })
    }
}

pub(crate) struct MultiEdit {
    env: Arc<Env>,
}

#[derive(Deserialize)]
struct EditItem {
    search: String,
    replace: String,
    #[serde(default)]
    replace_all: bool,
}

#[derive(Deserialize)]
struct MultiArgs {
    file_path: String,
    edits: Vec<EditItem>,
}

impl Tool for MultiEdit {
    fn name(&self) -> &str {
        "multi_edit"
    }

    fn changes_workspace(&self, input: &Value) -> Option<String> {
        input["file_path"].as_str().map(|p| {
            let n = input["edits"].as_array().map_or(0, Vec::len);
            format!("{p}: {n} edit(s)")
        })
    }

    fn title(&self) -> Option<String> {
        Some("Edit file in several steps".into())
    }

    fn description(&self) -> String {
        "Apply several edits to one file in order, each on the result of the previous one, \
         with the same matching rules as edit. All or nothing: if any step fails, the error \
         names the step and the file is left untouched. One write at the end, one diff."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "File to edit (inside the workspace)."},
                "edits": {
                    "type": "array",
                    "minItems": 1,
                    "description": "Edits applied in order.",
                    "items": {
                        "type": "object",
                        "properties": edit_schema_item(),
                        "required": ["search", "replace"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["file_path", "edits"],
            "additionalProperties": false
        })
    }

    fn run(self: Arc<Self>, input: Value, _ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        run_blocking(move || {
            let a: MultiArgs = args(input)?;
            let steps: Vec<(String, String, bool)> = a
                .edits
                .into_iter()
                .map(|s| (s.search, s.replace, s.replace_all))
                .collect();
            edit_file(&self.env, &a.file_path, &steps, true)
        })
    }
}

pub(crate) struct Write {
    env: Arc<Env>,
}

#[derive(Deserialize)]
struct WriteArgs {
    file_path: String,
    content: String,
}

impl Tool for Write {
    fn name(&self) -> &str {
        "write"
    }

    fn changes_workspace(&self, input: &Value) -> Option<String> {
        input["file_path"].as_str().map(|p| {
            let n = input["content"].as_str().map_or(0, str::len);
            format!("{p} ({n} bytes)")
        })
    }

    fn title(&self) -> Option<String> {
        Some("Write file".into())
    }

    fn description(&self) -> String {
        "Create a file (and its parent directories, inside the workspace) or overwrite one. \
         New files get LF line endings (.bat/.cmd: CRLF) and UTF-8. Overwriting keeps the \
         file's encoding, BOM and line endings, and needs the file to have been read in this \
         session and unchanged since (else `stale_file`). To change part of a file prefer edit."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "File to create or overwrite (inside the workspace)."},
                "content": {"type": "string", "description": "The whole new content."}
            },
            "required": ["file_path", "content"],
            "additionalProperties": false
        })
    }

    fn idempotent(&self) -> bool {
        true
    }

    fn run(self: Arc<Self>, input: Value, _ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        run_blocking(move || self.write(args(input)?))
    }
}

/// The ending a new file gets, by its extension.
fn new_file_ending(path: &Path) -> Ending {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match ext.as_deref() {
        Some("bat") | Some("cmd") => Ending::Crlf,
        _ => Ending::Lf,
    }
}

impl Write {
    fn write(&self, a: WriteArgs) -> ToolResult {
        let env = &self.env;
        let allowed = guarded(env, &a.file_path, Access::Write)?;
        let shown = allowed.shown.clone();
        let max = env.profile.edit.max_file_bytes;
        if a.content.len() as u64 > max {
            return Err(too_large(&shown, a.content.len() as u64, max));
        }
        let content = normalize_input(&a.content);
        let _lock = env.stripes.lock(&[&allowed.abs]);
        match std::fs::symlink_metadata(&allowed.abs) {
            Ok(meta) if meta.is_dir() => Err(ToolError::new(
                Code::IsDirectory,
                format!("{shown} is a directory"),
                "give the path of a file, not a directory",
            )),
            Ok(_) => self.overwrite(load(env, allowed)?, &content),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.create(allowed, &content),
            Err(e) => Err(io_error(env, &allowed, e)),
        }
    }

    fn create(&self, allowed: Allowed, content: &str) -> ToolResult {
        let env = &self.env;
        if let Some(parent) = allowed.abs.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_error(env, &allowed, e))?;
        }
        let ending = new_file_ending(&allowed.abs);
        let doc = Document::new_file(ending);
        let bytes = doc.to_bytes(content);
        let size = bytes.len();
        store(env, &allowed, Expect::Absent, bytes)?;
        let lines = content.lines().count();
        let text = format!(
            "Created {} ({lines} line{}, {} bytes, UTF-8, {} line endings).",
            allowed.shown,
            plural(lines),
            size,
            if ending == Ending::Crlf { "CRLF" } else { "LF" }
        );
        Ok(ToolOutput::new(
            text,
            json!({
                "path": allowed.shown, "created": true, "bytes": size, "lines": lines,
                "encoding": "utf-8", "line_endings": style_name(doc.style()),
            }),
        ))
    }

    fn overwrite(&self, loaded: Loaded, content: &str) -> ToolResult {
        let env = &self.env;
        let shown = loaded.allowed.shown.clone();
        if env.profile.edit.write_requires_read {
            match loaded.freshness(env) {
                Freshness::Unseen => {
                    return Err(ToolError::new(
                        Code::StaleFile,
                        format!(
                            "{shown} exists and has not been read in this session; overwriting it could lose content you have not seen"
                        ),
                        format!(
                            "read it first with read_file {{\"file_path\": \"{shown}\"}}, then write; to change part of it use edit"
                        ),
                    ));
                }
                Freshness::Changed => {
                    return Err(ToolError::new(
                        Code::StaleFile,
                        format!(
                            "{shown} changed on disk since you last read it; overwriting it would lose those changes"
                        ),
                        format!(
                            "read it again with read_file {{\"file_path\": \"{shown}\"}}, then write"
                        ),
                    ));
                }
                Freshness::Same => {}
            }
        }
        if content == loaded.doc.text {
            return Ok(ToolOutput::new(
                format!("{shown} already has this content; nothing was written."),
                json!({"path": shown, "created": false, "changed": false}),
            ));
        }
        let new_bytes = loaded.doc.to_bytes(content);
        let bytes_after = new_bytes.len();
        store(
            env,
            &loaded.allowed,
            Expect::Bytes(loaded.bytes()),
            new_bytes,
        )?;
        let budget = env.limits.max_chars().saturating_sub(SUMMARY_RESERVE);
        let (diff_text, stats) = diff::unified(&loaded.doc.text, content, &shown, budget);
        let text = format!(
            "Overwrote {shown} ({} bytes; kept encoding {} and {} line endings).\n{diff_text}",
            bytes_after,
            loaded.doc.detected.name(),
            style_name(loaded.doc.style()),
        );
        Ok(ToolOutput::new(
            text,
            json!({
                "path": shown, "created": false, "changed": true,
                "bytes_before": loaded.bytes().len(), "bytes_after": bytes_after,
                "encoding": loaded.doc.detected.name(),
                "line_endings": style_name(loaded.doc.style()),
                "lines_added": stats.added, "lines_removed": stats.removed,
            }),
        ))
    }
}
