//! Re-indenting the lines a model changed when its search block was found only after
//! relaxing leading whitespace: each changed line is written in the file's own
//! indentation. The matched lines teach how the model's indentation maps to the file's
//! (four spaces → one tab, six spaces → eight…); a changed line at a depth the model used
//! in its search gets that line's indentation, other depths are counted in the model's
//! indentation unit from the nearest known depth and written in the file's unit.

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
    /// Model indentation → file indentation, from the matched lines, by model columns.
    known: Vec<(&'a str, &'a str)>,
    /// When the model began its search at the first non-blank character of a line, the
    /// indentation that line keeps.
    first_line: Option<&'a str>,
    model_level: usize,
    unit: Unit,
}

impl<'a> Reindent<'a> {
    /// Learn the mapping from the matched `window` (the file's lines) and the model's
    /// `search` lines; `None` when the two disagree in a way that is not a re-indentation
    /// (the model's depths out of order against the file's): then nothing is guessed.
    pub(super) fn learn(
        window: &[&'a str],
        search: &[&'a str],
        replace: &[&str],
        file: &str,
    ) -> Option<Reindent<'a>> {
        let pairs: Vec<(&str, &str)> = search
            .iter()
            .zip(window)
            .filter(|(s, _)| !s.trim().is_empty())
            .map(|(s, f)| (leading_ws(s), leading_ws(f)))
            .collect();
        let (known, first_line) = match mapping(&pairs) {
            Some(known) => (known, None),
            None => {
                let first_unindented = pairs
                    .first()
                    .is_some_and(|(s, f)| s.is_empty() && !f.is_empty());
                if !first_unindented {
                    return None;
                }
                (mapping(&pairs[1..])?, Some(pairs[0].1))
            }
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
            known,
            first_line,
            model_level,
            unit: unit.unwrap_or(Unit::Spaces(model_level)),
        })
    }

    /// Replacement line `index` (0-based), as the model wrote it, in the file's
    /// indentation.
    pub(super) fn line(&self, index: usize, line: &str) -> String {
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
        if let Some((_, file)) = self.known.iter().find(|(m, _)| *m == indent) {
            return format!("{file}{body}");
        }
        // The nearest known depth at or above this one, else the shallowest known.
        let want = cols(indent);
        let Some(&(model, file)) = self
            .known
            .iter()
            .rev()
            .find(|(m, _)| cols(m) <= want)
            .or(self.known.first())
        else {
            return line.to_string();
        };
        let (from, to) = (cols(model), want);
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
