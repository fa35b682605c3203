//! The edit engine's outcomes in the model's words: the repairs a match needed, and
//! each failure as an error with its next step.

use serde_json::{Value, json};

use crate::core::{Code, Repair, RepairKind, ToolError};
use crate::edit::{Failure, Level, Tag};

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

pub(super) fn repairs_for(tags: &[Tag], field: &str) -> Vec<Repair> {
    tags.iter()
        .map(|&tag| {
            let (kind, detail) = repair_kind(tag);
            Repair::new(kind, field, detail)
        })
        .collect()
}

/// Turn an engine failure into an error with the next step. `step` names the
/// multi_edit step, if any.
pub(super) fn failure(shown: &str, f: Failure, step: Option<(usize, usize)>) -> ToolError {
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
