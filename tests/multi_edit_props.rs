//! Property tests of multi_edit's single-pass engine (`edit::steps`): on random texts over
//! a small alphabet (so occurrences overlap, repeat and straddle earlier edits) and random
//! step lists, it gives exactly what applying the steps one by one to fresh copies gives:
//! the same text, the same line per step, the same failure at the same step.

use proptest::prelude::*;
use whalebox::edit::steps::{Step, apply_steps};
use whalebox::edit::{self, Failure};
use whalebox::text::Document;
use whalebox::text::diff::{Change, align_changed, align_texts, count_lines, lines_inclusive};

/// `changes` describe `old` → `new` exactly: outside them the texts are the same bytes,
/// and the alignment built from them covers every line, with equal runs truly equal.
fn check_changes(old: &str, new: &str, changes: &[Change]) -> Result<(), TestCaseError> {
    let mut rebuilt = String::new();
    let mut old_at = 0;
    for c in changes {
        prop_assert!(c.old.start >= old_at, "changes out of order: {:?}", changes);
        rebuilt.push_str(&old[old_at..c.old.start]);
        rebuilt.push_str(&new[c.new.clone()]);
        old_at = c.old.end;
    }
    rebuilt.push_str(&old[old_at..]);
    prop_assert_eq!(&rebuilt, new);
    for context in [0, 3] {
        let aligned = align_changed(old, new, changes, context);
        let (old_lines, new_lines) = (lines_inclusive(old), lines_inclusive(new));
        let old_total: usize = aligned.ops.iter().map(|o| o.old_range().len()).sum();
        let new_total: usize = aligned.ops.iter().map(|o| o.new_range().len()).sum();
        prop_assert_eq!((old_total, new_total), (count_lines(old), count_lines(new)));
        for op in &aligned.ops {
            if let similar::DiffOp::Equal {
                old_index,
                new_index,
                len,
            } = *op
            {
                prop_assert_eq!(
                    &old_lines[old_index..old_index + len],
                    &new_lines[new_index..new_index + len]
                );
            } else {
                for i in op.old_range() {
                    prop_assert_eq!(aligned.old_line(i), old_lines[i]);
                }
                for i in op.new_range() {
                    prop_assert_eq!(aligned.new_line(i), new_lines[i]);
                }
            }
        }
        // Never more changed lines than the one-window alignment finds.
        let changed = |ops: &[similar::DiffOp]| -> usize {
            ops.iter()
                .filter(|o| !matches!(o, similar::DiffOp::Equal { .. }))
                .map(|o| o.old_range().len() + o.new_range().len())
                .sum()
        };
        prop_assert!(
            changed(&aligned.ops)
                <= changed(&align_texts(old, new, context).ops) + 2 * changes.len(),
            "{} changed lines against {} for one window, {} changes, context {context}: {:?} -> {:?}; {:?}",
            changed(&aligned.ops),
            changed(&align_texts(old, new, context).ops),
            changes.len(),
            old,
            new,
            changes
        );
    }
    Ok(())
}

/// A step as drawn: where its search comes from and what replaces it.
#[derive(Debug, Clone)]
struct Draw {
    /// Take the search from the current text at this fraction and length (found), or
    /// use `invented` (often not found, or found in text inserted by earlier steps).
    from_text: bool,
    at: prop::sample::Index,
    len: usize,
    invented: String,
    replace: String,
    replace_all: bool,
    /// Strip the search's leading blanks of each line (the relaxed level finds it).
    unindent: bool,
}

fn draw() -> impl Strategy<Value = Draw> {
    (
        any::<bool>(),
        any::<prop::sample::Index>(),
        1usize..12,
        "[ab\n ]{1,4}",
        "[abc\n ]{0,6}",
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.15),
    )
        .prop_map(
            |(from_text, at, len, invented, replace, replace_all, unindent)| Draw {
                from_text,
                at,
                len,
                invented,
                replace,
                replace_all,
                unindent,
            },
        )
}

fn search_for(current: &str, d: &Draw) -> String {
    if !d.from_text || current.is_empty() {
        return d.invented.clone();
    }
    let chars: Vec<char> = current.chars().collect();
    let start = d.at.index(chars.len());
    let end = (start + d.len).min(chars.len());
    let s: String = chars[start..end].iter().collect();
    if d.unindent {
        s.split('\n')
            .map(str::trim_start)
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        s
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn single_pass_equals_one_by_one(
        text in "([ab ]{0,6}\n){0,12}[ab ]{0,6}",
        draws in prop::collection::vec(draw(), 1..8),
    ) {
        // The searches are drawn from the reference's evolving text, then both engines
        // run the same list.
        let mut reference = text.clone();
        let mut searches = Vec::new();
        let mut expected: Result<Vec<usize>, (usize, Failure)> = Ok(Vec::new());
        for (i, d) in draws.iter().enumerate() {
            let search = search_for(&reference, d);
            searches.push(search.clone());
            if let Ok(lines) = &mut expected {
                match edit::apply(&reference, &search, &d.replace, d.replace_all) {
                    Ok(a) => {
                        lines.push(a.line);
                        reference = a.text;
                    }
                    Err(f) => expected = Err((i, f)),
                }
            }
        }
        let steps: Vec<Step> = draws
            .iter()
            .zip(&searches)
            .map(|(d, s)| Step { search: s, replace: &d.replace, replace_all: d.replace_all })
            .collect();
        // Only the steps up to the first failure ran in the reference.
        let ran = match &expected { Ok(_) => steps.len(), Err((i, _)) => i + 1 };
        let ours = apply_steps(&text, &steps[..ran]);
        match (ours, expected) {
            (Ok(edited), Ok(lines)) => {
                prop_assert_eq!(&edited.text, &reference);
                check_changes(&text, &edited.text, &edited.changes)?;
                // Per-line endings restored through the changes keep every untouched
                // line's own ending.
                let mixed: String = text.split_inclusive('\n').enumerate()
                    .map(|(i, l)| if i % 2 == 0 { l.replace('\n', "\r\n") } else { l.to_string() })
                    .collect();
                let doc = Document::decode(mixed.as_bytes()).expect("decodes");
                let bytes = doc.into_bytes(edited.text.clone(), &edited.changes);
                let back = Document::decode(&bytes).expect("decodes");
                prop_assert_eq!(&back.text, &edited.text);
                let got: Vec<usize> = edited.steps.iter().map(|s| s.line).collect();
                prop_assert_eq!(got, lines);
            }
            (Err(got), Err(want)) => prop_assert_eq!(got, want),
            (got, want) => prop_assert!(false, "engines disagree: {:?} vs {:?}", got.map(|e| e.text), want),
        }
    }
}
