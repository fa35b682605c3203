//! Several edits applied in order, each found on the text the steps before it left, in
//! one pass: the original is scanned once for every step's search (Aho-Corasick), the
//! evolving text is a piece table, and a step's exact occurrences are the original's
//! that its pieces still hold plus those found in small windows around what earlier
//! steps changed. No step copies the document; the result is built once. A step that
//! needs the inexact levels works on the text built at that point (those levels scan
//! every line anyway), and the result is the same as applying the steps one by one.

use aho_corasick::{AhoCorasick, MatchKind};
use std::collections::HashMap;

use super::pieces::Pieces;
use super::{Failure, Found, Level, MAX_REPORTED, Tag, check_request, choose, find, find_inexact};
use whalebox_text::diff::Change;

/// One step: `search` and `replace` already LF-normalized.
#[derive(Debug, Clone, Copy)]
pub struct Step<'s> {
    pub search: &'s str,
    pub replace: &'s str,
    pub replace_all: bool,
}

/// How one step applied.
#[derive(Debug, Clone)]
pub struct StepOutcome {
    pub replacements: usize,
    pub level: Level,
    pub tags: Vec<Tag>,
    /// 1-based line, in the text as the step found it, where its first replacement starts.
    pub line: usize,
}

#[derive(Debug)]
pub struct Edited {
    pub text: String,
    pub steps: Vec<StepOutcome>,
    /// Where `text` differs from the original, for the diff and for line endings.
    pub changes: Vec<Change>,
}

/// A step's failure, with the step's index.
pub type StepFailure = (usize, Failure);

/// Apply `steps` in order to `text`: all of them, or the first failure.
pub fn apply_steps(text: &str, steps: &[Step<'_>]) -> Result<Edited, StepFailure> {
    if let [step] = steps {
        let found = find(text, step.search, step.replace, step.replace_all).map_err(|f| (0, f))?;
        return Ok(Edited {
            text: found.build(text),
            steps: vec![outcome(&found)],
            changes: found.changes(),
        });
    }
    let hits = BaseHits::scan(text, steps);
    let mut pieces = Pieces::new(text);
    let mut whole = Whole::default();
    let mut outcomes = Vec::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        let found = find_step(&pieces, &hits, i, step, &mut whole).map_err(|f| (i, f))?;
        outcomes.push(outcome(&found));
        if !found.ranges.is_empty() {
            pieces.replace(&found.ranges, &found.with);
            whole.current = false;
        }
    }
    let mut out = String::new();
    pieces.text_into(&mut out);
    Ok(Edited {
        text: out,
        steps: outcomes,
        changes: pieces.changes(),
    })
}

fn outcome(found: &Found) -> StepOutcome {
    StepOutcome {
        replacements: found.ranges.len(),
        level: found.level,
        tags: found.tags.clone(),
        line: found.line,
    }
}

fn find_step(
    pieces: &Pieces<'_>,
    hits: &BaseHits,
    index: usize,
    step: &Step<'_>,
    whole: &mut Whole,
) -> Result<Found, Failure> {
    check_request(step.search, step.replace)?;
    let Some(base_hits) = hits.of(index) else {
        // Too many occurrences to track: the step works on the built text.
        return find(
            whole.of(pieces),
            step.search,
            step.replace,
            step.replace_all,
        );
    };
    let n = step.search.len();
    let occurrences = pieces.occurrences(step.search.as_bytes(), base_hits);
    let chosen = non_overlapping(&occurrences, n);
    let exact = choose(
        chosen.iter().copied(),
        n,
        step.replace,
        step.replace_all,
        Level::Exact,
        |at| pieces.line_of(at),
        |offsets| {
            offsets
                .take(MAX_REPORTED)
                .map(|at| pieces.line_of(at))
                .collect()
        },
    )?;
    match exact {
        Some(found) => Ok(found),
        None => find_inexact(whole.of(pieces), step.search, step.replace),
    }
}

/// Occurrences chosen left to right, each after the end of the one before (what a
/// search resumed after each match finds).
fn non_overlapping(all: &[usize], len: usize) -> Vec<usize> {
    let mut out = Vec::with_capacity(all.len().min(64));
    let mut from = 0;
    for &at in all {
        if at >= from {
            out.push(at);
            from = at + len;
        }
    }
    out
}

/// The current text built whole, for the steps that need it, rebuilt only after a change.
#[derive(Default)]
struct Whole {
    text: String,
    /// `text` is the current text.
    current: bool,
}

impl Whole {
    fn of<'t>(&'t mut self, pieces: &'t Pieces<'_>) -> &'t str {
        if let Some(base) = pieces.untouched() {
            return base;
        }
        if !self.current {
            pieces.text_into(&mut self.text);
            self.current = true;
        }
        &self.text
    }
}

/// Every occurrence of each step's search in the original text, found in one scan.
struct BaseHits {
    /// Per step, the index of its search in `hits`.
    pattern_of_step: Vec<usize>,
    /// Per distinct search, its occurrences (overlapping ones too), ascending; `None`
    /// when there were more than [`MAX_TRACKED`].
    hits: Vec<Option<Vec<usize>>>,
}

/// Beyond this many occurrences of one search, its step works on the built text
/// (bounds the memory of the scan; such a search is a replace_all or an ambiguity).
const MAX_TRACKED: usize = 4096;

impl BaseHits {
    fn scan(text: &str, steps: &[Step<'_>]) -> Self {
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut patterns: Vec<&str> = Vec::new();
        let pattern_of_step = steps
            .iter()
            .map(|s| {
                *index.entry(s.search).or_insert_with(|| {
                    patterns.push(s.search);
                    patterns.len() - 1
                })
            })
            .collect();
        let mut hits: Vec<Option<Vec<usize>>> = vec![Some(Vec::new()); patterns.len()];
        // Empty searches are refused per step; they must not reach the automaton.
        let searchable: Vec<(usize, &str)> = patterns
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, p)| !p.is_empty())
            .collect();
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .build(searchable.iter().map(|(_, p)| p));
        match automaton {
            Ok(ac) => {
                for m in ac.find_overlapping_iter(text) {
                    let pattern = searchable[m.pattern().as_usize()].0;
                    if let Some(list) = &mut hits[pattern] {
                        if list.len() == MAX_TRACKED {
                            hits[pattern] = None;
                        } else {
                            list.push(m.start());
                        }
                    }
                }
            }
            // Too large an automaton: every step works on the built text.
            Err(_) => hits.iter_mut().for_each(|h| *h = None),
        }
        BaseHits {
            pattern_of_step,
            hits,
        }
    }

    fn of(&self, step: usize) -> Option<&[usize]> {
        self.hits[self.pattern_of_step[step]].as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step<'s>(search: &'s str, replace: &'s str) -> Step<'s> {
        Step {
            search,
            replace,
            replace_all: false,
        }
    }

    /// The reference: each step applied to a fresh copy of the text.
    fn one_by_one(text: &str, steps: &[Step<'_>]) -> Result<(String, Vec<usize>), StepFailure> {
        let mut current = text.to_string();
        let mut lines = Vec::new();
        for (i, s) in steps.iter().enumerate() {
            let a = super::super::apply(&current, s.search, s.replace, s.replace_all)
                .map_err(|f| (i, f))?;
            lines.push(a.line);
            current = a.text;
        }
        Ok((current, lines))
    }

    fn same_as_one_by_one(text: &str, steps: &[Step<'_>]) {
        let reference = one_by_one(text, steps);
        let ours = apply_steps(text, steps).map(|e| {
            let lines = e.steps.iter().map(|s| s.line).collect();
            (e.text, lines)
        });
        assert_eq!(ours, reference, "text {text:?} steps {steps:?}");
    }

    #[test]
    fn later_steps_see_earlier_steps_text() {
        same_as_one_by_one(
            "a\nb\nc\n",
            &[step("b", "B1"), step("B1", "B2"), step("a\nB2", "A")],
        );
    }

    #[test]
    fn an_occurrence_made_by_an_edit_makes_a_later_search_ambiguous() {
        let text = "x = 1\ny = 2\n";
        let steps = [step("y = 2", "x = 1"), step("x = 1", "z")];
        same_as_one_by_one(text, &steps);
        let (i, f) = apply_steps(text, &steps).unwrap_err();
        assert_eq!(i, 1);
        assert!(matches!(f, Failure::NotUnique { lines, .. } if lines == vec![1, 2]));
    }

    #[test]
    fn an_occurrence_across_a_deletion_is_found() {
        same_as_one_by_one("abXcd\n", &[step("X", ""), step("bc", "BC")]);
    }

    #[test]
    fn replace_all_across_pieces_and_overlaps() {
        let mut all = step("aa", "b");
        all.replace_all = true;
        same_as_one_by_one("aaa aaaa\n", &[step(" ", "aa"), all]);
    }

    #[test]
    fn inexact_steps_between_exact_ones() {
        same_as_one_by_one(
            "fn a() {\n    one();\n}\nfn b() {}\n",
            &[
                step("fn b() {}", "fn b() { two(); }"),
                step("fn a() {\none();\n}", "fn a() {\none();\nthree();\n}"),
                step("three();", "four();"),
            ],
        );
    }

    #[test]
    fn a_search_too_frequent_to_track_works_on_the_built_text() {
        let text = "a b\n".repeat(MAX_TRACKED + 10);
        let mut all = step("a", "c");
        all.replace_all = true;
        let steps = [step("b\na b\n", "B\n"), all, step("c B", "D")];
        same_as_one_by_one(&text, &steps);
        assert!(BaseHits::scan(&text, &steps).of(1).is_none());
    }
}
