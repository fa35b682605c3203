//! Re-indenting the lines a model changed when its search block was found only after
//! relaxing leading whitespace: each changed line is written in the file's own
//! indentation. The matched lines teach how the model's indentation maps to the file's
//! (four spaces → one tab, six spaces → eight…); a changed line at a depth the model used
//! in its search gets that line's indentation, other depths are counted in the model's
//! indentation unit from the nearest known depth and written in the file's unit. When the
//! model wrote at one depth lines the file has at two (`if x:` and its body), there is no
//! such mapping: each changed line is counted instead from its nearest matched neighbour.

use std::ops::Range;

/// Columns a tab counts for when comparing depths.
const TAB_COLS: usize = 4;

pub(super) fn leading_ws(s: &str) -> &str {
    &s[..s.len() - s.trim_start().len()]
}

fn cols(indent: &str) -> usize {
    indent
        .chars()
        .map(|c| if c == '\t' { TAB_COLS } else { 1 })
        .sum()
}

/// One level of the file's indentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Tab,
    Spaces(usize),
}

impl Unit {
    fn cols(self) -> usize {
        match self {
            Unit::Tab => TAB_COLS,
            Unit::Spaces(w) => w,
        }
    }
}

/// The width of one level among `indents`: the gcd of their differences, when some differ.
fn level_width(indents: impl Iterator<Item = usize>) -> Option<usize> {
    let widths: Vec<usize> = indents.collect();
    let min = *widths.iter().min()?;
    let g = widths
        .iter()
        .map(|w| w - min)
        .filter(|d| *d > 0)
        .fold(0, gcd);
    (g > 0).then_some(g)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The file's unit: from the matched block, else from the file's consecutive lines.
fn file_unit(window: &[&str], file: &str) -> Option<Unit> {
    let indents = || {
        window
            .iter()
            .filter(|l| !l.trim().is_empty())
            .map(|l| leading_ws(l))
    };
    if indents().any(|i| i.starts_with('\t')) {
        return Some(Unit::Tab);
    }
    if let Some(w) = level_width(indents().map(cols)) {
        return Some(Unit::Spaces(w));
    }
    // The block is all at one depth: the most common step between neighbouring lines.
    let mut counts = [0usize; 9];
    let mut previous: Option<&str> = None;
    let mut tabs = 0usize;
    for line in file.lines().filter(|l| !l.trim().is_empty()).take(20_000) {
        let indent = leading_ws(line);
        tabs += usize::from(indent.starts_with('\t'));
        if let Some(p) = previous {
            let (a, b) = (cols(p), cols(indent));
            if b > a && b - a < counts.len() {
                counts[b - a] += 1;
            }
        }
        previous = Some(indent);
    }
    let (step, n) = counts
        .iter()
        .enumerate()
        .skip(2)
        .max_by_key(|(_, n)| **n)
        .map(|(s, n)| (s, *n))?;
    if tabs > n {
        return Some(Unit::Tab);
    }
    (n > 0).then_some(Unit::Spaces(step))
}

/// How the model's indentation becomes the file's.
#[derive(Debug)]
pub(super) struct Reindent<'a> {
    depths: Depths<'a>,
    /// When the model began its search at the first non-blank character of a line, the
    /// indentation that line keeps.
    first_line: Option<&'a str>,
    model_level: usize,
    unit: Unit,
}

/// What the matched lines teach of the model's depths.
#[derive(Debug)]
enum Depths<'a> {
    /// Model indentation → file indentation, one for one, by model columns.
    Mapped(Vec<(&'a str, &'a str)>),
    /// The model wrote at one depth lines the file has at several (`if x:` and its body
    /// both at four spaces), in the file's order otherwise. A changed line is placed
    /// from the search line it replaces, or from its nearest matched neighbour.
    Neighbours {
        /// Per search line, its model and file indentation (`None` when blank).
        depths: Vec<Option<(&'a str, &'a str)>>,
        /// The search lines.
        lines: &'a [&'a str],
    },
}

impl<'a> Reindent<'a> {
    /// Learn the mapping from the matched `window` (the file's lines) and the model's
    /// `search` lines; `None` when the two disagree in a way that is not a re-indentation
    /// (the model's depths out of order against the file's): then nothing is guessed.
    pub(super) fn learn(
        window: &[&'a str],
        search: &'a [&'a str],
        replace: &[&str],
        file: &str,
    ) -> Option<Reindent<'a>> {
        let lines: Vec<Option<(&str, &str)>> = search
            .iter()
            .zip(window)
            .map(|(s, f)| (!s.trim().is_empty()).then(|| (leading_ws(s), leading_ws(f))))
            .collect();
        let pairs: Vec<(&str, &str)> = lines.iter().flatten().copied().collect();
        let first_unindented = pairs
            .first()
            .is_some_and(|(s, f)| s.is_empty() && !f.is_empty());
        let (depths, first_line) = if let Some(known) = mapping(&pairs) {
            (Depths::Mapped(known), None)
        } else if let Some(known) = first_unindented.then(|| mapping(&pairs[1..])).flatten() {
            (Depths::Mapped(known), Some(pairs[0].1))
        } else if collapsed(&pairs) {
            (
                Depths::Neighbours {
                    depths: lines,
                    lines: search,
                },
                None,
            )
        } else {
            return None;
        };
        let model_indents = || {
            search
                .iter()
                .chain(replace)
                .filter(|l| !l.trim().is_empty())
                .map(|l| leading_ws(l))
        };
        let unit = file_unit(window, file);
        let model_tabs = model_indents().any(|i| i.starts_with('\t'));
        let model_level = (model_tabs.then_some(TAB_COLS))
            .or(level_width(model_indents().map(cols)).filter(|w| *w > 1))
            .or(unit.map(Unit::cols))
            .unwrap_or(4);
        Some(Reindent {
            depths,
            first_line,
            model_level,
            unit: unit.unwrap_or(Unit::Spaces(model_level)),
        })
    }

    /// The replacement's lines `lines` (the first is line `first`, 0-based), as the model
    /// wrote them, in the file's indentation; they stand where the search lines
    /// `replaced` stood (an empty range: they are inserted there).
    pub(super) fn lines(
        &self,
        first: usize,
        lines: &[&str],
        replaced: Range<usize>,
    ) -> Vec<String> {
        let (depths, search) = match &self.depths {
            Depths::Mapped(known) => {
                return lines
                    .iter()
                    .enumerate()
                    .map(|(k, line)| self.mapped(known, first + k, line))
                    .collect();
            }
            Depths::Neighbours { depths, lines } => (depths, lines),
        };
        let place = |line: &str, from: Option<(&str, &str)>| match from {
            Some((model, file)) if !line.trim().is_empty() => self.shift(model, file, line),
            _ => line.to_string(),
        };
        // A line that replaces a search line is placed from it; a run of lines that
        // replace none, all from one neighbour of their gap, so they keep their depths
        // relative to each other.
        let counterparts = pair(&search[replaced.clone()], lines);
        let mut out = Vec::with_capacity(lines.len());
        let mut k = 0;
        while k < lines.len() {
            if let Some(j) = counterparts[k] {
                out.push(place(lines[k], depths[replaced.start + j]));
                k += 1;
                continue;
            }
            let end = (k..lines.len())
                .find(|&e| counterparts[e].is_some())
                .unwrap_or(lines.len());
            let gap = replaced.start
                + counterparts[..k]
                    .iter()
                    .rev()
                    .flatten()
                    .next()
                    .map_or(0, |j| j + 1);
            let run = &lines[k..end];
            let from = run
                .iter()
                .find(|l| !l.trim().is_empty())
                .and_then(|l| neighbour(depths, gap, cols(leading_ws(l))));
            out.extend(run.iter().map(|l| place(l, from)));
            k = end;
        }
        out
    }

    /// Replacement line `index` (0-based) by the one-for-one mapping of depths.
    fn mapped(&self, known: &[(&str, &str)], index: usize, line: &str) -> String {
        if line.trim().is_empty() {
            return line.to_string();
        }
        let indent = leading_ws(line);
        let body = &line[indent.len()..];
        if index == 0
            && indent.is_empty()
            && let Some(lead) = self.first_line
        {
            return format!("{lead}{body}");
        }
        if let Some((_, file)) = known.iter().find(|(m, _)| *m == indent) {
            return format!("{file}{body}");
        }
        // The nearest known depth at or above this one, else the shallowest known.
        let want = cols(indent);
        match known
            .iter()
            .rev()
            .find(|(m, _)| cols(m) <= want)
            .or(known.first())
        {
            Some(&(model, file)) => self.shift(model, file, line),
            None => line.to_string(),
        }
    }

    /// `line`, whose model indentation is counted from a line the model indented with
    /// `model` and the file with `file`, in the file's indentation: as many of the
    /// model's levels deeper or shallower than that line, in the file's unit.
    fn shift(&self, model: &str, file: &str, line: &str) -> String {
        let indent = leading_ws(line);
        let body = &line[indent.len()..];
        let (from, to) = (cols(model), cols(indent));
        let mut out = file.to_string();
        if to >= from {
            let levels = (to - from) / self.model_level;
            let rest = (to - from) % self.model_level;
            for _ in 0..levels {
                match self.unit {
                    Unit::Tab => out.push('\t'),
                    Unit::Spaces(w) => out.push_str(&" ".repeat(w)),
                }
            }
            out.push_str(&" ".repeat(rest));
        } else {
            let levels = (from - to).div_ceil(self.model_level);
            for _ in 0..levels {
                match self.unit {
                    Unit::Tab if out.ends_with('\t') => {
                        out.pop();
                    }
                    Unit::Spaces(w) if out.ends_with(&" ".repeat(w)) => {
                        out.truncate(out.len() - w);
                    }
                    _ => out.clear(),
                }
            }
        }
        out.push_str(body);
        out
    }
}

/// Beyond this many line pairs, replaced and replacing lines pair by position.
const MAX_PAIRING: usize = 10_000;

/// Each replacement line's counterpart among the lines it replaces (index into `old`):
/// the order-keeping pairing that shares the most text, of lines sharing at least half
/// of the longer one; by position when there are too many lines to compare.
fn pair(old: &[&str], new: &[&str]) -> Vec<Option<usize>> {
    let (o, n) = (old.len(), new.len());
    if o.saturating_mul(n) > MAX_PAIRING {
        return (0..n).map(|k| (k < o).then_some(k)).collect();
    }
    let shared: Vec<Vec<usize>> = old
        .iter()
        .map(|a| new.iter().map(|b| resemblance(a, b)).collect())
        .collect();
    // best[i][j]: the most text shared by a pairing of old[i..] with new[j..].
    let mut best = vec![vec![0usize; n + 1]; o + 1];
    for i in (0..o).rev() {
        for j in (0..n).rev() {
            let both = match shared[i][j] {
                0 => 0,
                s => s + best[i + 1][j + 1],
            };
            best[i][j] = both.max(best[i + 1][j]).max(best[i][j + 1]);
        }
    }
    let mut out = vec![None; n];
    let (mut i, mut j) = (0, 0);
    while i < o && j < n {
        if shared[i][j] > 0 && best[i][j] == shared[i][j] + best[i + 1][j + 1] {
            out[j] = Some(i);
            (i, j) = (i + 1, j + 1);
        } else if best[i][j] == best[i + 1][j] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// The characters two lines share at their start and end (without indentation), when
/// that is at least half the longer one; else 0.
fn resemblance(a: &str, b: &str) -> usize {
    let (a, b) = (a.trim(), b.trim());
    let prefix = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let (la, lb) = (a.chars().count(), b.chars().count());
    let suffix = a
        .chars()
        .rev()
        .zip(b.chars().rev())
        .take(la.min(lb) - prefix)
        .take_while(|(x, y)| x == y)
        .count();
    let shared = prefix + suffix;
    if 2 * shared >= la.max(lb) { shared } else { 0 }
}

/// The search line a changed line at model depth `depth` is placed from, of the nearest
/// non-blank search lines before and after `gap`: the one at the deepest model depth not
/// deeper than the line (else the shallower one); of two at one model depth, the one
/// after when the file has it deeper (the line before opens its block: a line put
/// between `if x:` and its body is in the body), else the one before (the line follows
/// it).
fn neighbour<'a>(
    search: &[Option<(&'a str, &'a str)>],
    gap: usize,
    depth: usize,
) -> Option<(&'a str, &'a str)> {
    let before = search[..gap].iter().rev().flatten().next().copied();
    let after = search[gap..].iter().flatten().next().copied();
    let (Some(b), Some(a)) = (before, after) else {
        return before.or(after);
    };
    let (mb, ma) = (cols(b.0), cols(a.0));
    let take_after = if mb == ma {
        cols(a.1) > cols(b.1)
    } else if mb.max(ma) <= depth {
        ma > mb
    } else if mb.min(ma) <= depth {
        ma <= depth
    } else {
        ma < mb
    };
    Some(if take_after { a } else { b })
}

/// Whether the model wrote at one indentation lines the file has at different ones,
/// keeping the file's order otherwise: no line the model put deeper than another is
/// shallower than it in the file.
fn collapsed(pairs: &[(&str, &str)]) -> bool {
    let mut by_indent = pairs.to_vec();
    by_indent.sort_unstable();
    by_indent.dedup();
    let collapses = by_indent.windows(2).any(|w| w[0].0 == w[1].0);
    let mut by_cols: Vec<(usize, usize)> =
        by_indent.iter().map(|(m, f)| (cols(m), cols(f))).collect();
    by_cols.sort_unstable();
    // The deepest file depth of the model depths shallower than the current one, and of
    // the current one so far.
    let (mut shallower, mut current, mut depth) = (0, 0, None);
    for (m, f) in by_cols {
        if depth != Some(m) {
            shallower = shallower.max(current);
            depth = Some(m);
        }
        if f < shallower {
            return false;
        }
        current = current.max(f);
    }
    collapses
}

/// Each model indentation seen → the one file indentation it stands for, ordered by
/// depth; `None` when one model depth stands for two file depths, or depths swap order.
fn mapping<'a>(pairs: &[(&'a str, &'a str)]) -> Option<Vec<(&'a str, &'a str)>> {
    let mut known: Vec<(&str, &str)> = Vec::new();
    for &(model, file) in pairs {
        match known.iter().find(|(m, _)| *m == model) {
            Some((_, f)) if *f != file => return None,
            Some(_) => {}
            None => known.push((model, file)),
        }
    }
    known.sort_by_key(|(m, _)| cols(m));
    let ordered = known
        .windows(2)
        .all(|w| cols(w[0].0) < cols(w[1].0) && cols(w[0].1) < cols(w[1].1));
    ordered.then_some(known)
}
