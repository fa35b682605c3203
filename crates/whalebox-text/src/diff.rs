//! Line alignment and unified diffs (the `similar` crate). Alignment first narrows the
//! texts to the window where they differ (common prefix and suffix found with memcmp, cut
//! at line boundaries), so an edit in one place of a huge file costs a few linear scans;
//! the window is diffed with patience (unique-line anchors), which stays near
//! O(n log n) on scattered edits; a deadline bounds pathological inputs.

use std::ops::Range;
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

/// A changed region: bytes `old` of the old text became bytes `new` of the new text.
/// Outside a list of these (ascending, disjoint) the two texts are the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub old: Range<usize>,
    pub new: Range<usize>,
}

/// The one region where `old` and `new` differ, between their common prefix and suffix
/// (none when they are equal). An editor that knows its changes passes them instead.
pub fn changes_between(old: &str, new: &str) -> Vec<Change> {
    let (ob, nb) = (old.as_bytes(), new.as_bytes());
    let prefix = common_prefix(ob, nb);
    if prefix == ob.len() && prefix == nb.len() {
        return Vec::new();
    }
    let suffix = common_suffix(ob, nb, ob.len().min(nb.len()) - prefix);
    vec![Change {
        old: prefix..ob.len() - suffix,
        new: prefix..nb.len() - suffix,
    }]
}

/// The lines of one changed window of each text.
struct Window<'a> {
    /// Index of the window's first line in each text.
    old_base: usize,
    new_base: usize,
    old: Vec<&'a str>,
    new: Vec<&'a str>,
}

/// Two texts aligned line by line: the script covers every line of both, but only the
/// lines of the changed windows (each change with `context` lines around it) are held.
pub struct Aligned<'a> {
    pub ops: Vec<DiffOp>,
    windows: Vec<Window<'a>>,
}

impl<'a> Aligned<'a> {
    /// Old line `i`; only lines in a window (where every changed line and its context
    /// lie) can be asked for.
    pub fn old_line(&self, i: usize) -> &'a str {
        let k = self
            .windows
            .partition_point(|w| w.old_base + w.old.len() <= i);
        let w = &self.windows[k];
        w.old[i - w.old_base]
    }

    pub fn new_line(&self, i: usize) -> &'a str {
        let k = self
            .windows
            .partition_point(|w| w.new_base + w.new.len() <= i);
        let w = &self.windows[k];
        w.new[i - w.new_base]
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

/// True when byte offset `at` is where a line ends (after a `\n`, or the text's end).
fn at_line_end(text: &[u8], at: usize) -> bool {
    at == text.len() || (at > 0 && text[at - 1] == b'\n')
}

/// Align `old` and `new` (whole texts), keeping `context` lines around the changes.
pub fn align_texts<'a>(old: &'a str, new: &'a str, context: usize) -> Aligned<'a> {
    align_changed(old, new, &changes_between(old, new), context)
}

/// Align `old` and `new`, which differ only in `changes`: each change is widened to whole
/// lines with `context` lines around it, windows that touch are joined, and only the
/// windows are diffed, so scattered edits in a huge file cost a few linear scans.
pub fn align_changed<'a>(
    old: &'a str,
    new: &'a str,
    changes: &[Change],
    context: usize,
) -> Aligned<'a> {
    let (ob, nb) = (old.as_bytes(), new.as_bytes());
    // Byte windows, in both texts. Past a change, a new offset is its old offset plus
    // `shift`, the growth of the changes so far.
    let mut spans: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    let mut shift: isize = 0;
    for (k, change) in changes.iter().enumerate() {
        let start_old = back_lines(ob, change.old.start, context);
        let start_new = start_old.checked_add_signed(shift).unwrap_or(0);
        shift += change.new.len() as isize - change.old.len() as isize;
        let end_old = forward_lines(ob, change.old.end.saturating_sub(1).max(start_old), context)
            .max(change.old.end);
        match spans.last_mut() {
            // Within reach of the window before: one window.
            Some((o, _)) if start_old <= o.end => o.end = o.end.max(end_old),
            _ => spans.push((start_old..end_old, start_new..start_new)),
        }
        // A window must end at a line end in both texts (a change can end mid-line in
        // the new text while ending a line in the old). A window that reaches the next
        // change is joined with it and settled then.
        let next_start = changes.get(k + 1).map(|c| c.old.start);
        let (o, n) = spans.last_mut().expect("a window was just pushed");
        let mut end_new = o.end.saturating_add_signed(shift);
        while o.end < ob.len()
            && next_start.is_none_or(|s| s > o.end)
            && !(at_line_end(ob, o.end) && at_line_end(nb, end_new))
        {
            o.end = forward_lines(ob, o.end, 0);
            end_new = o.end.saturating_add_signed(shift);
        }
        n.end = end_new;
    }
    let mut ops = Vec::new();
    let mut windows = Vec::with_capacity(spans.len());
    let (mut old_at, mut new_at) = (0usize, 0usize); // bytes aligned so far
    let (mut old_line, mut new_line) = (0usize, 0usize); // lines aligned so far
    for (o, n) in spans {
        let same = count_lines(&old[old_at..o.start]);
        if same > 0 {
            push_merged(
                &mut ops,
                DiffOp::Equal {
                    old_index: old_line,
                    new_index: new_line,
                    len: same,
                },
            );
        }
        old_line += same;
        new_line += same;
        let window = Window {
            old_base: old_line,
            new_base: new_line,
            old: lines_inclusive(&old[o.clone()]),
            new: lines_inclusive(&new[n.clone()]),
        };
        for op in align(&window.old, &window.new) {
            push_merged(&mut ops, shift_op(op, old_line, new_line));
        }
        old_line += window.old.len();
        new_line += window.new.len();
        windows.push(window);
        (old_at, new_at) = (o.end, n.end);
    }
    debug_assert_eq!(old.len() - old_at, new.len() - new_at);
    let tail = count_lines(&old[old_at..]);
    if tail > 0 {
        push_merged(
            &mut ops,
            DiffOp::Equal {
                old_index: old_line,
                new_index: new_line,
                len: tail,
            },
        );
    }
    Aligned { ops, windows }
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

fn shift_op(op: DiffOp, old_by: usize, new_by: usize) -> DiffOp {
    match op {
        DiffOp::Equal {
            old_index,
            new_index,
            len,
        } => DiffOp::Equal {
            old_index: old_index + old_by,
            new_index: new_index + new_by,
            len,
        },
        DiffOp::Delete {
            old_index,
            old_len,
            new_index,
        } => DiffOp::Delete {
            old_index: old_index + old_by,
            old_len,
            new_index: new_index + new_by,
        },
        DiffOp::Insert {
            old_index,
            new_index,
            new_len,
        } => DiffOp::Insert {
            old_index: old_index + old_by,
            new_index: new_index + new_by,
            new_len,
        },
        DiffOp::Replace {
            old_index,
            old_len,
            new_index,
            new_len,
        } => DiffOp::Replace {
            old_index: old_index + old_by,
            old_len,
            new_index: new_index + new_by,
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
    unified_changed(old, new, &changes_between(old, new), label, max_chars)
}

/// [`unified`] for texts known to differ only in `changes`.
pub fn unified_changed(
    old: &str,
    new: &str,
    changes: &[Change],
    label: &str,
    max_chars: usize,
) -> (String, DiffStats) {
    let aligned = align_changed(old, new, changes, 3);
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

    #[test]
    fn a_change_ending_mid_line_in_the_new_text_takes_the_whole_line() {
        let (diff, stats) = unified("a\nfoo\nbar\n", "a\nXbar\n", "f", 10_000);
        assert_eq!(
            diff,
            "--- a/f\n+++ b/f\n@@ -1,3 +1,2 @@\n a\n-foo\n-bar\n+Xbar\n"
        );
        assert_eq!(
            stats,
            DiffStats {
                added: 1,
                removed: 2
            }
        );
    }

    #[test]
    fn scattered_changes_are_diffed_window_by_window() {
        let old: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let new = old
            .replace("line 10\n", "ten\n")
            .replace("line 50\n", "")
            .replace("line 90\n", "line 90\nninety-one\n");
        let at = |t: &str, s: &str| t.find(s).unwrap();
        let changes = vec![
            Change {
                old: at(&old, "line 10\n")..at(&old, "line 11\n"),
                new: at(&new, "ten\n")..at(&new, "line 11\n"),
            },
            Change {
                old: at(&old, "line 50\n")..at(&old, "line 51\n"),
                new: at(&new, "line 51\n")..at(&new, "line 51\n"),
            },
            Change {
                old: at(&old, "line 91\n")..at(&old, "line 91\n"),
                new: at(&new, "ninety-one\n")..at(&new, "line 91\n"),
            },
        ];
        let (by_changes, stats) = unified_changed(&old, &new, &changes, "f", 10_000);
        let (whole, _) = unified(&old, &new, "f", 10_000);
        assert_eq!(by_changes, whole);
        assert_eq!(
            stats,
            DiffStats {
                added: 2,
                removed: 2
            }
        );
        let aligned = align_changed(&old, &new, &changes, 0);
        assert_eq!(aligned.windows.len(), 3);
    }
}
