//! Line alignment and unified diffs (the `similar` crate). Alignment trims the common
//! prefix and suffix first, so an edit in one place of a huge file costs a linear scan,
//! and diffs what is left with patience (unique-line anchors), which stays near
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

/// Align `old` with `new`: a complete script of equal/changed runs covering both.
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

/// Lines added and removed by a change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DiffStats {
    pub added: usize,
    pub removed: usize,
}

/// A unified diff of `old` → `new` (both LF-normalized) with 3 lines of context, cut
/// after `max_chars` characters with a note of how many hunks were left out.
pub fn unified(old: &str, new: &str, label: &str, max_chars: usize) -> (String, DiffStats) {
    let old_lines = lines_inclusive(old);
    let new_lines = lines_inclusive(new);
    let ops = align(&old_lines, &new_lines);
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
                    push_line(&mut out, ' ', old_lines[i]);
                } else {
                    push_line(&mut out, '-', old_lines[i]);
                }
            }
            if op.tag() != DiffTag::Equal {
                for i in op.new_range() {
                    push_line(&mut out, '+', new_lines[i]);
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
