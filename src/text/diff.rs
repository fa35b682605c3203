//! Line alignment and unified diffs (the `similar` crate). Alignment first narrows the
//! texts to the window where they differ (common prefix and suffix found with memcmp, cut
//! at line boundaries), so an edit in one place of a huge file costs a few linear scans;
//! the window is diffed with patience (unique-line anchors), which stays near
//! O(n log n) on scattered edits; a deadline bounds pathological inputs.

use std::time::Duration;

use similar::{Algorithm, DiffOp, DiffTag, capture_diff_deadline, group_diff_ops};

/// How long an alignment may search for a minimal script before settling for a valid,
/// possibly longer one.
const DEADLINE: Duration = Duration::from_secs(2);

/// Lines of `text`, each with its `\n` (the last one may have none). An empty text has
/// no lines.
pub fn lines_inclusive(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// How many lines [`lines_inclusive`] would give.
pub fn count_lines(text: &str) -> usize {
    bytecount::count(text.as_bytes(), b'\n')
        + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// Align `old` with `new` line slices: a complete script of equal/changed runs.
pub fn align<'a>(old: &[&'a str], new: &[&'a str]) -> Vec<DiffOp> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let max_suffix = old.len().min(new.len()) - prefix;
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    let mut ops = Vec::new();
    if prefix > 0 {
        ops.push(DiffOp::Equal {
            old_index: 0,
            new_index: 0,
            len: prefix,
        });
    }
    let (old_end, new_end) = (old.len() - suffix, new.len() - suffix);
    if prefix < old_end || prefix < new_end {
        let deadline = std::time::Instant::now().checked_add(DEADLINE);
        ops.extend(capture_diff_deadline(
            Algorithm::Patience,
            old,
            prefix..old_end,
            new,
            prefix..new_end,
            deadline,
        ));
    }
    if suffix > 0 {
        ops.push(DiffOp::Equal {
            old_index: old_end,
            new_index: new_end,
            len: suffix,
        });
    }
    ops
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 4096;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + CHUNK <= n && a[i..i + CHUNK] == b[i..i + CHUNK] {
        i += CHUNK;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

fn common_suffix(a: &[u8], b: &[u8], limit: usize) -> usize {
    const CHUNK: usize = 4096;
    let (la, lb) = (a.len(), b.len());
    let mut i = 0;
    while i + CHUNK <= limit && a[la - i - CHUNK..la - i] == b[lb - i - CHUNK..lb - i] {
        i += CHUNK;
    }
    while i < limit && a[la - i - 1] == b[lb - i - 1] {
        i += 1;
    }
    i
}

/// Two texts aligned line by line: the script covers every line of both, but only the
/// lines of the changed window (plus `context` lines around it) are held.
pub struct Aligned<'a> {
    pub ops: Vec<DiffOp>,
    old_window: Vec<&'a str>,
    new_window: Vec<&'a str>,
    /// Index of the window's first line (the same in both texts: the prefix is common).
    base: usize,
}

impl<'a> Aligned<'a> {
    /// Old line `i`; only lines in the window (where every changed line and its
    /// context lie) can be asked for.
    pub fn old_line(&self, i: usize) -> &'a str {
        self.old_window[i - self.base]
    }

    pub fn new_line(&self, i: usize) -> &'a str {
        self.new_window[i - self.base]
    }
}

/// Start of the line `n` lines before the line containing byte `at`. Works on bytes:
/// `at` may fall inside a multi-byte character; the result is always a line start.
fn back_lines(text: &[u8], at: usize, n: usize) -> usize {
    let mut start = memchr::memrchr(b'\n', &text[..at]).map_or(0, |i| i + 1);
    for _ in 0..n {
        if start == 0 {
            break;
        }
        start = memchr::memrchr(b'\n', &text[..start - 1]).map_or(0, |i| i + 1);
    }
    start
}

/// Just past the `\n` ending the line containing byte `at`, then `n` lines further.
fn forward_lines(text: &[u8], at: usize, n: usize) -> usize {
    let mut end = at;
    for _ in 0..=n {
        match memchr::memchr(b'\n', &text[end..]) {
            Some(i) => end += i + 1,
            None => return text.len(),
        }
    }
    end
}

/// Align `old` and `new` (whole texts), keeping `context` lines around the changes.
pub fn align_texts<'a>(old: &'a str, new: &'a str, context: usize) -> Aligned<'a> {
    let (ob, nb) = (old.as_bytes(), new.as_bytes());
    let prefix = common_prefix(ob, nb);
    if prefix == ob.len() && prefix == nb.len() {
        let lines = count_lines(old);
        return Aligned {
            ops: if lines > 0 {
                vec![DiffOp::Equal {
                    old_index: 0,
                    new_index: 0,
                    len: lines,
                }]
            } else {
                Vec::new()
            },
            old_window: Vec::new(),
            new_window: Vec::new(),
            base: 0,
        };
    }
    let suffix = common_suffix(ob, nb, ob.len().min(nb.len()) - prefix);
    let start = back_lines(ob, prefix, context);
    // The window ends after a `\n` inside the common suffix (or at the end), so what
    // follows it is the same lines in both texts.
    let (old_end, new_end) = {
        let changed_old_end = ob.len() - suffix;
        let end = forward_lines(ob, changed_old_end.saturating_sub(1).max(start), context);
        let end = end.max(changed_old_end);
        let tail = ob.len() - end;
        (end, nb.len() - tail)
    };
    let base = count_lines(&old[..start]);
    let old_window = lines_inclusive(&old[start..old_end]);
    let new_window = lines_inclusive(&new[start..new_end]);
    let mut ops = Vec::new();
    if base > 0 {
        ops.push(DiffOp::Equal {
            old_index: 0,
            new_index: 0,
            len: base,
        });
    }
    for op in align(&old_window, &new_window) {
        push_merged(&mut ops, shift(op, base));
    }
    let tail_lines = count_lines(&old[old_end..]);
    if tail_lines > 0 {
        push_merged(
            &mut ops,
            DiffOp::Equal {
                old_index: base + old_window.len(),
                new_index: base + new_window.len(),
                len: tail_lines,
            },
        );
    }
    Aligned {
        ops,
        old_window,
        new_window,
        base,
    }
}

/// Append `op`, joining it to a preceding equal run (grouping looks at one run only).
fn push_merged(ops: &mut Vec<DiffOp>, op: DiffOp) {
    if let (Some(DiffOp::Equal { len, .. }), DiffOp::Equal { len: more, .. }) =
        (ops.last_mut(), &op)
    {
        *len += more;
        return;
    }
    ops.push(op);
}

fn shift(op: DiffOp, by: usize) -> DiffOp {
    match op {
        DiffOp::Equal {
            old_index,
            new_index,
            len,
        } => DiffOp::Equal {
            old_index: old_index + by,
            new_index: new_index + by,
            len,
        },
        DiffOp::Delete {
            old_index,
            old_len,
            new_index,
        } => DiffOp::Delete {
            old_index: old_index + by,
            old_len,
            new_index: new_index + by,
        },
        DiffOp::Insert {
            old_index,
            new_index,
            new_len,
        } => DiffOp::Insert {
            old_index: old_index + by,
            new_index: new_index + by,
            new_len,
        },
        DiffOp::Replace {
            old_index,
            old_len,
            new_index,
            new_len,
        } => DiffOp::Replace {
            old_index: old_index + by,
            old_len,
            new_index: new_index + by,
            new_len,
        },
    }
}

/// Lines added and removed by a change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DiffStats {
    pub added: usize,
    pub removed: usize,
}

/// A unified diff of `old` → `new` (both LF-normalized) with 3 lines of context, cut
/// after `max_chars` characters with a note of how many hunks were left out.
pub fn unified(old: &str, new: &str, label: &str, max_chars: usize) -> (String, DiffStats) {
    let aligned = align_texts(old, new, 3);
    let ops = aligned.ops.clone();
    let mut stats = DiffStats::default();
    for op in &ops {
        match op.tag() {
            DiffTag::Equal => {}
            _ => {
                stats.removed += op.old_range().len();
                stats.added += op.new_range().len();
            }
        }
    }
    let groups = group_diff_ops(ops, 3);
    let mut out = format!("--- a/{label}\n+++ b/{label}\n");
    let total_groups = groups.len();
    for (shown, group) in groups.iter().enumerate() {
        if out.len() > max_chars {
            out.push_str(&format!(
                "… diff cut: {} more hunks not shown\n",
                total_groups - shown
            ));
            break;
        }
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_start = first.old_range().start;
        let new_start = first.new_range().start;
        let old_len = last.old_range().end - old_start;
        let new_len = last.new_range().end - new_start;
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            hunk_range(old_start, old_len),
            hunk_range(new_start, new_len)
        ));
        for op in group {
            for i in op.old_range() {
                if op.tag() == DiffTag::Equal {
                    push_line(&mut out, ' ', aligned.old_line(i));
                } else {
                    push_line(&mut out, '-', aligned.old_line(i));
                }
            }
            if op.tag() != DiffTag::Equal {
                for i in op.new_range() {
                    push_line(&mut out, '+', aligned.new_line(i));
                }
            }
        }
    }
    (out, stats)
}

fn hunk_range(start: usize, len: usize) -> String {
    // Unified diff convention: an empty range names the line before it.
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        n => format!("{},{n}", start + 1),
    }
}

fn push_line(out: &mut String, mark: char, line: &str) {
    out.push(mark);
    match line.strip_suffix('\n') {
        Some(content) => {
            out.push_str(content);
            out.push('\n');
        }
        None => {
            out.push_str(line);
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unified_diff_has_headers_hunks_and_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        let (diff, stats) = unified(old, new, "x.txt", 10_000);
        assert_eq!(
            diff,
            "--- a/x.txt\n+++ b/x.txt\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
        assert_eq!(
            stats,
            DiffStats {
                added: 1,
                removed: 1
            }
        );
    }

    #[test]
    fn missing_final_newline_is_marked() {
        let (diff, _) = unified("a\nb", "a\nc", "f", 10_000);
        assert!(
            diff.contains("-b\n\\ No newline at end of file\n+c\n\\ No newline"),
            "{diff}"
        );
    }

    #[test]
    fn align_covers_both_sides_completely() {
        let old = lines_inclusive("1\n2\n3\n4\n5\n");
        let new = lines_inclusive("1\nx\n3\n4\ny\n5\n");
        let ops = align(&old, &new);
        let old_total: usize = ops.iter().map(|o| o.old_range().len()).sum();
        let new_total: usize = ops.iter().map(|o| o.new_range().len()).sum();
        assert_eq!((old_total, new_total), (5, 6));
    }

    #[test]
    fn windowed_alignment_matches_full_alignment() {
        let cases = [
            ("a\nb\nc\n", "a\nB\nc\n"),
            ("a\nb\nc\n", "a\nb\nc\nd\n"),
            ("a\nb\nc", "a\nb\nc\n"),
            ("", "x\n"),
            ("x\n", ""),
            ("same\n", "same\n"),
            ("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\nX\n4\n5\n6\n7\nY\n9\n"),
            ("aa\naa\naa\n", "aa\naa\n"),
            ("p\nq", "p\nqq"),
            ("L0:é\nL1:\n", "L0:è\nL1:\n"),
            ("aé\n", "bé\n"),
        ];
        for (old, new) in cases {
            let aligned = align_texts(old, new, 1);
            let full = align(&lines_inclusive(old), &lines_inclusive(new));
            let total = |ops: &[DiffOp]| -> (usize, usize) {
                (
                    ops.iter().map(|o| o.old_range().len()).sum(),
                    ops.iter().map(|o| o.new_range().len()).sum(),
                )
            };
            assert_eq!(total(&aligned.ops), total(&full), "{old:?} -> {new:?}");
            assert_eq!(total(&aligned.ops), (count_lines(old), count_lines(new)));
            // Every changed line is reachable in the window and matches the text.
            for op in &aligned.ops {
                if op.tag() != DiffTag::Equal {
                    for i in op.old_range() {
                        assert_eq!(aligned.old_line(i), lines_inclusive(old)[i]);
                    }
                    for i in op.new_range() {
                        assert_eq!(aligned.new_line(i), lines_inclusive(new)[i]);
                    }
                }
            }
        }
    }

    #[test]
    fn long_diffs_are_cut_with_a_note() {
        let old: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let new: String = (0..1000)
            .map(|i| {
                if i % 10 == 0 {
                    format!("changed {i}\n")
                } else {
                    format!("line {i}\n")
                }
            })
            .collect();
        let (diff, stats) = unified(&old, &new, "f", 500);
        assert!(diff.contains("more hunks not shown"), "{diff}");
        assert_eq!(stats.added, 100);
    }
}
