//! Whitespace-relaxed, whole-line matching: a window of as many lines as the search,
//! where each line equals its search line after trimming trailing blanks (first pass) or
//! both ends (second pass). Comparison happens on a `view` of the file (the file itself,
//! or its unicode-folded twin, line for line), but the bytes written come from the file:
//! replacement lines equal to their search line are the file's own lines, changed lines
//! are written in the file's indentation (see `indent`).

use similar::{Algorithm, DiffOp, capture_diff_slices};

use super::indent::Reindent;
use super::{Failure, Found, Level, MAX_REPORTED, Tag};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Trim {
    End,
    Both,
}

impl Trim {
    fn apply(self, s: &str) -> &str {
        match self {
            Trim::End => s.trim_end(),
            Trim::Both => s.trim(),
        }
    }
}

/// A line of the file: where it starts and its text (without `\n`).
struct Line<'a> {
    start: usize,
    text: &'a str,
}

fn split_lines(text: &str) -> Vec<Line<'_>> {
    let mut lines = Vec::with_capacity(text.len() / 32 + 1);
    let mut start = 0;
    for part in text.split('\n') {
        lines.push(Line { start, text: part });
        start += part.len() + 1;
    }
    lines
}

/// Try both passes. `orig` is the file and `view` what is compared with `search` (the
/// same lines, possibly folded); `model_search` is the search as the model wrote it,
/// which decides the replacement lines it left unchanged. `level` names the result.
pub(super) fn find(
    orig: &str,
    view: &str,
    search: &str,
    model_search: &str,
    replace: &str,
    level: Level,
) -> Result<Option<Found>, Failure> {
    let search_nl = search.ends_with('\n');
    let search_core = if search_nl {
        &search[..search.len() - 1]
    } else {
        search
    };
    let search_lines: Vec<&str> = search_core.split('\n').collect();
    let model_core = model_search.strip_suffix('\n').unwrap_or(model_search);
    let mut model_lines: Vec<&str> = model_core.split('\n').collect();
    if model_lines.len() != search_lines.len() {
        model_lines = search_lines.clone();
    }
    if search_lines.iter().all(|l| l.trim().is_empty()) {
        // Blank lines match blank lines anywhere: never guess.
        return Ok(None);
    }
    let replace_nl = search_nl && replace.ends_with('\n');
    let replace_core = if replace_nl {
        &replace[..replace.len() - 1]
    } else {
        replace
    };

    let view_lines = split_lines(view);
    let orig_lines = if std::ptr::eq(orig, view) {
        None
    } else {
        Some(split_lines(orig))
    };
    let n = search_lines.len();
    for trim in [Trim::End, Trim::Both] {
        let first = trim.apply(search_lines[0]);
        let mut windows = Vec::new();
        let mut count = 0usize;
        if view_lines.len() >= n {
            for i in 0..=(view_lines.len() - n) {
                if trim.apply(view_lines[i].text) != first {
                    continue;
                }
                let all = (1..n)
                    .all(|k| trim.apply(view_lines[i + k].text) == trim.apply(search_lines[k]));
                if all {
                    count += 1;
                    if windows.len() < MAX_REPORTED {
                        windows.push(i);
                    }
                }
            }
        }
        match count {
            0 => continue,
            1 => {}
            _ => {
                return Err(Failure::NotUnique {
                    level,
                    lines: windows.iter().map(|i| i + 1).collect(),
                });
            }
        }
        let i = windows[0];
        let lines = orig_lines.as_ref().unwrap_or(&view_lines);
        let file_window: Vec<&str> = lines[i..i + n].iter().map(|l| l.text).collect();
        let view_window: Vec<&str> = view_lines[i..i + n].iter().map(|l| l.text).collect();
        let start = lines[i].start;
        let last = &lines[i + n - 1];
        let mut end = last.start + last.text.len();
        let has_nl = end < orig.len();
        if search_nl && has_nl {
            end += 1;
        }
        let replace_lines: Vec<&str> = if replace_core.is_empty() {
            Vec::new()
        } else {
            replace_core.split('\n').collect()
        };
        // Leading whitespace differed: changed lines are written in the file's indentation.
        let reindent = (trim == Trim::Both)
            .then(|| Reindent::learn(&view_window, &search_lines, &replace_lines, orig))
            .flatten();
        let mut out_lines: Vec<String> = Vec::with_capacity(replace_lines.len());
        let mut realigned_any = false;
        for op in capture_diff_slices(Algorithm::Myers, &model_lines, &replace_lines) {
            match op {
                DiffOp::Equal { old_index, len, .. } => {
                    for k in 0..len {
                        out_lines.push(file_window[old_index + k].to_string());
                    }
                }
                DiffOp::Delete { .. } => {}
                DiffOp::Insert { .. } | DiffOp::Replace { .. } => {
                    let new = op.new_range();
                    let lines = &replace_lines[new.clone()];
                    let fixed = match &reindent {
                        Some(r) => r.lines(new.start, lines, op.old_range()),
                        None => lines.iter().map(|l| l.to_string()).collect(),
                    };
                    realigned_any |= fixed.iter().zip(lines).any(|(f, l)| f != l);
                    out_lines.extend(fixed);
                }
            }
        }
        let mut replacement = out_lines.join("\n");
        if replace_nl && search_nl && has_nl {
            replacement.push('\n');
        }
        let mut tags = Vec::new();
        let whitespace_differs = view_window.iter().zip(&search_lines).any(|(f, s)| f != s);
        if whitespace_differs {
            tags.push(Tag::WhitespaceNormalized);
        }
        if realigned_any {
            tags.push(Tag::IndentationRealigned);
        }
        return Ok(Some(Found::one(
            start..end,
            replacement,
            level,
            tags,
            i + 1,
        )));
    }
    Ok(None)
}
