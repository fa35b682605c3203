//! The `write` tool: create a file, or overwrite one read in this session and unchanged
//! since, keeping its encoding and line endings.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{
    BoxFuture, CallContext, Code, Tool, ToolError, ToolOutput, ToolResult, run_blocking,
};
use crate::guard::{Access, Allowed};
use crate::mutation::{Expect, Freshness};
use crate::text::{Document, Ending, diff, normalize_input};
use crate::tools::Env;
use crate::tools::common::{args, guarded, io_error};

use super::file::{Loaded, gb18030_text, load, reads_back, store, too_large};
use super::{SUMMARY_RESERVE, plural, style_name};

pub(crate) struct Write {
    pub(super) env: Arc<Env>,
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
        reads_back(
            &shown,
            &new_bytes,
            gb18030_text(&loaded.doc, content).as_deref(),
        )?;
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
