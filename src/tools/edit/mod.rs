//! Group `edit`: edit, multi_edit and write. Each is one read-modify-write under the
//! file's stripe lock: read the bytes, decode them into a [`Document`], compute the new
//! text with the edit engine, restore encoding and line endings, and [`commit`] only if
//! the file still holds the bytes that were read.
//!
//! This module registers the tools and owns the wording and schema they share; `file`
//! loads and stores, `apply` runs the steps of edit (`single`) and multi_edit (`multi`)
//! with `outcome` putting the engine's results into words, and `write` writes whole files.
//!
//! [`Document`]: crate::text::Document
//! [`commit`]: crate::mutation::commit

mod apply;
mod file;
mod multi;
mod outcome;
mod single;
mod write;

use std::sync::Arc;

use serde_json::{Value, json};

use crate::core::{Registry, RegistryError};
use crate::text::Style;

use super::Env;
use multi::MultiEdit;
use single::Edit;
use write::Write;

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

fn style_name(style: Style) -> &'static str {
    match style {
        Style::None => "none",
        Style::Lf => "lf",
        Style::Crlf => "crlf",
        Style::Cr => "cr",
        Style::Mixed => "mixed",
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
