//! The `edit` tool: one search/replace step on one file.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{BoxFuture, CallContext, Tool, ToolResult, run_blocking};
use crate::tools::Env;
use crate::tools::common::args;

use super::apply::edit_file;
use super::edit_schema_item;

pub(crate) struct Edit {
    pub(super) env: Arc<Env>,
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
