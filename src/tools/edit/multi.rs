//! The `multi_edit` tool: several search/replace steps on one file, all or nothing.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{BoxFuture, CallContext, Tool, ToolResult, run_blocking};
use crate::tools::Env;
use crate::tools::common::args;

use super::apply::edit_file;
use super::edit_schema_item;

pub(crate) struct MultiEdit {
    pub(super) env: Arc<Env>,
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
