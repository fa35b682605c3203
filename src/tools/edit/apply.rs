//! The search/replace steps of edit and multi_edit applied to one file: under its
//! stripe lock, loaded, edited by the engine, checked, stored once, and described with a
//! diff.

use std::time::Instant;

use serde_json::{Value, json};

use crate::core::{Repair, ToolError, ToolOutput, ToolResult};
use crate::edit;
use crate::edit::steps::{Edited, Step};
use crate::guard::Access;
use crate::mutation::{Expect, Freshness};
use crate::text::{diff, normalize_input};
use crate::tools::Env;
use crate::tools::common::guarded;

use super::file::{Loaded, gb18030_text, load, reads_back, store, too_large};
use super::outcome::{failure, repairs_for};
use super::{SUMMARY_RESERVE, plural, style_name};

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
pub(super) fn edit_file(
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
    let check = gb18030_text(&loaded.doc, &text);
    let new_bytes = loaded.doc.into_bytes(text, &changes);
    reads_back(&shown, &new_bytes, check.as_deref())?;
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
