//! The edit engine: find the text a model meant by `search` in an LF-normalized file and
//! replace it, exactly once, even when the model wrote it from memory a little wrong.
//!
//! Levels, in order; the first that finds anything decides:
//! 1. exact: non-overlapping occurrences; several need `replace_all`;
//! 2. whitespace-relaxed whole lines (trailing blanks, then both ends), with the
//!    replacement's changed lines written in the file's indentation (its unit, and the
//!    depth the model meant relative to its search lines);
//! 3. escape-unwrapped: literal `\n`, `\t`, `\"` … in search and replace are unescaped
//!    and levels 1–2 retried;
//! 4. unicode-normalized: curly quotes, dashes and odd spaces folded to ASCII;
//! 5. nothing: a divergence diagnosis naming the closest region.
//!
//! Fuzzy levels act only on a unique match, and replace the file's own bytes: lines of
//! the replacement that equal the corresponding search lines are kept exactly as the
//! file has them, so only the lines the model changed are touched.
//!
//! The model: the engine works on text, never on bytes. A caller decodes the file into a
//! [`whalebox_text::Document`] (LF text, the file's encoding and endings remembered),
//! LF-normalizes the model's `search` and `replace` ([`whalebox_text::normalize_input`]),
//! and applies them: [`apply`] for one edit (an [`Applied`]: the new text, the [`Level`]
//! that found it, the repairs as [`Tag`]s, the line), or [`steps::apply_steps`] for
//! several in order ([`steps::Edited`], which also carries the changed regions). Nothing
//! found, several matches where one is needed, or a request that makes no sense is a
//! [`Failure`] the model can act on. The document then turns the new text back into
//! bytes that differ from the file only where the edit changed it.
//!
//! ```rust
//! use whalebox_edit::steps::{Step, apply_steps};
//! use whalebox_edit::{Failure, Level, Tag};
//! use whalebox_text::{Document, normalize_input};
//!
//! // A CRLF file indented with 4 spaces, one line with trailing blanks.
//! let file = b"fn main() {\r\n    let x = 1;\r\n    println!(\"{x}\");  \r\n}\r\n";
//! let doc = Document::decode(file)?;
//!
//! // The model quotes the lines from memory: 2-space indentation, no trailing blanks.
//! let search = normalize_input("  let x = 1;\r\n  println!(\"{x}\");");
//! let replace = normalize_input("  let x = 2;\r\n  println!(\"{x}\");");
//! let step = Step { search: &search, replace: &replace, replace_all: false };
//! let edited = apply_steps(&doc.text, &[step]).expect("found once");
//! assert_eq!(edited.steps[0].level, Level::WhitespaceRelaxed);
//! assert_eq!(edited.steps[0].tags, [Tag::WhitespaceNormalized, Tag::IndentationRealigned]);
//! assert_eq!(edited.steps[0].line, 2);
//!
//! // Only the changed line differs: written in the file's indentation and line endings;
//! // the line the model did not change keeps its own bytes.
//! let bytes = doc.into_bytes(edited.text, &edited.changes);
//! assert_eq!(bytes, b"fn main() {\r\n    let x = 2;\r\n    println!(\"{x}\");  \r\n}\r\n");
//!
//! // A search that matches twice changes nothing and names both lines.
//! let twice = whalebox_edit::apply("a = 1\nb = 2\na = 1\n", "a = 1", "a = 3", false);
//! assert_eq!(twice.unwrap_err(), Failure::NotUnique { level: Level::Exact, lines: vec![1, 3] });
//! # Ok::<(), whalebox_text::DecodeError>(())
//! ```

mod diagnose;
mod fold;
mod indent;
mod pieces;
mod relaxed;
pub mod steps;

use std::ops::Range;

use serde::Serialize;

use whalebox_text::diff::Change;

/// How the search text was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Exact,
    WhitespaceRelaxed,
    EscapeUnwrapped,
    UnicodeNormalized,
}

impl Level {
    pub fn describe(self) -> &'static str {
        match self {
            Level::Exact => "exact match",
            Level::WhitespaceRelaxed => "whitespace-relaxed match",
            Level::EscapeUnwrapped => "match after unescaping \\n, \\t, \\\" …",
            Level::UnicodeNormalized => "match after folding quotes, dashes and spaces",
        }
    }
}

/// What a fuzzy level did, reported as repairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tag {
    WhitespaceNormalized,
    IndentationRealigned,
    JsonEscapeUnwrapped,
    UnicodeNormalized,
}

/// The outcome of one edit on a text: the new text and how it was found.
#[derive(Debug, Clone)]
pub struct Applied {
    pub text: String,
    pub replacements: usize,
    pub level: Level,
    pub tags: Vec<Tag>,
    /// 1-based line where the (first) replacement starts.
    pub line: usize,
}

/// Where an edit applies, before any text is built: `ranges` of the searched text (in
/// ascending order, never overlapping) each become `with`. A single edit builds its text
/// from it; a multi-step edit applies it to its piece table.
#[derive(Debug, Clone)]
pub struct Found {
    pub ranges: Vec<Range<usize>>,
    pub with: String,
    pub level: Level,
    pub tags: Vec<Tag>,
    /// 1-based line where the first range starts.
    pub line: usize,
}

impl Found {
    fn one(range: Range<usize>, with: String, level: Level, tags: Vec<Tag>, line: usize) -> Self {
        Found {
            ranges: vec![range],
            with,
            level,
            tags,
            line,
        }
    }

    /// `text` with every range replaced.
    fn build(&self, text: &str) -> String {
        let mut out = String::new();
        let removed: usize = self.ranges.iter().map(|r| r.len()).sum();
        out.reserve(text.len() - removed + self.ranges.len() * self.with.len());
        let mut last = 0;
        for range in &self.ranges {
            out.push_str(&text[last..range.start]);
            out.push_str(&self.with);
            last = range.end;
        }
        out.push_str(&text[last..]);
        out
    }

    /// The changed regions, in the old text and in the text [`Self::build`] makes.
    fn changes(&self) -> Vec<Change> {
        let mut shift = 0isize;
        self.ranges
            .iter()
            .map(|r| {
                let start = r.start.saturating_add_signed(shift);
                shift += self.with.len() as isize - r.len() as isize;
                Change {
                    old: r.clone(),
                    new: start..start + self.with.len(),
                }
            })
            .collect()
    }

    fn into_applied(self, text: &str) -> Applied {
        Applied {
            text: self.build(text),
            replacements: self.ranges.len(),
            level: self.level,
            tags: self.tags,
            line: self.line,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The request itself makes no sense (empty search, search == replace …).
    Invalid { message: String, next_step: String },
    /// Found nowhere; `message` is the diagnosis, `line`/`span` the region to reread.
    NotFound {
        message: String,
        line: Option<usize>,
        span: usize,
        long_search: bool,
    },
    /// Found more than once where a unique match is needed.
    NotUnique { level: Level, lines: Vec<usize> },
}

/// Searches longer than this get "split it" advice when they are not found.
const LONG_SEARCH_LINES: usize = 40;
/// Candidate lines reported for an ambiguous match.
pub(crate) const MAX_REPORTED: usize = 20;

/// Apply one edit to `text`. `search` and `replace` must already be LF-normalized.
pub fn apply(
    text: &str,
    search: &str,
    replace: &str,
    replace_all: bool,
) -> Result<Applied, Failure> {
    Ok(find(text, search, replace, replace_all)?.into_applied(text))
}

/// Where `search` is in `text` and what replaces it, by the first level that finds it.
pub fn find(text: &str, search: &str, replace: &str, replace_all: bool) -> Result<Found, Failure> {
    check_request(search, replace)?;
    if let Some(found) = exact(text, search, replace, replace_all, Level::Exact)? {
        return Ok(found);
    }
    find_inexact(text, search, replace)
}

/// The request errors every level shares.
pub(crate) fn check_request(search: &str, replace: &str) -> Result<(), Failure> {
    if search.is_empty() {
        return Err(Failure::Invalid {
            message: "`search` is empty".into(),
            next_step: "put the exact text to replace in `search`; to create or overwrite a whole file use write".into(),
        });
    }
    if search == replace {
        return Err(Failure::Invalid {
            message: "`search` and `replace` are identical: nothing would change".into(),
            next_step: "put the new text in `replace`".into(),
        });
    }
    Ok(())
}

/// Levels 2 to 5, for a search with no exact occurrence in `text`.
pub(crate) fn find_inexact(text: &str, search: &str, replace: &str) -> Result<Found, Failure> {
    if let Some(found) = relaxed::find(
        text,
        text,
        search,
        search,
        replace,
        Level::WhitespaceRelaxed,
    )? {
        return Ok(found);
    }
    if let Some((search_u, replace_u)) = unescape_pair(search, replace) {
        let found = match exact(text, &search_u, &replace_u, false, Level::EscapeUnwrapped)? {
            Some(f) => Some(f),
            None => relaxed::find(
                text,
                text,
                &search_u,
                &search_u,
                &replace_u,
                Level::EscapeUnwrapped,
            )?,
        };
        if let Some(mut found) = found {
            found.tags.insert(0, Tag::JsonEscapeUnwrapped);
            return Ok(found);
        }
    }
    if let Some(found) = fold::find(text, search, replace)? {
        return Ok(found);
    }
    let d = diagnose::diagnose(text, search);
    Err(Failure::NotFound {
        message: d.message,
        line: d.line,
        span: d.span,
        long_search: search.lines().count() > LONG_SEARCH_LINES,
    })
}

/// Level 1 (and 3's first try): plain substring occurrences, chosen left to right.
fn exact(
    text: &str,
    search: &str,
    replace: &str,
    replace_all: bool,
    level: Level,
) -> Result<Option<Found>, Failure> {
    let finder = memchr::memmem::Finder::new(search.as_bytes());
    let all = non_overlapping(&finder, text.as_bytes(), search.len());
    choose(
        all,
        search.len(),
        replace,
        replace_all,
        level,
        |at| line_of(text, at),
        |offsets| lines_of(text, offsets),
    )
}

/// The exact level's decision over the non-overlapping occurrences `at` (ascending):
/// none, one, all of them with `replace_all`, or an ambiguity naming their lines.
pub(crate) fn choose(
    mut at: impl Iterator<Item = usize> + Clone,
    len: usize,
    replace: &str,
    replace_all: bool,
    level: Level,
    line_of: impl Fn(usize) -> usize,
    lines_of: impl FnOnce(&mut dyn Iterator<Item = usize>) -> Vec<usize>,
) -> Result<Option<Found>, Failure> {
    let all = at.clone();
    let Some(first) = at.next() else {
        return Ok(None);
    };
    let line = line_of(first);
    if at.next().is_none() {
        return Ok(Some(Found::one(
            first..first + len,
            replace.to_string(),
            level,
            Vec::new(),
            line,
        )));
    }
    if !replace_all {
        let lines = lines_of(&mut all.clone());
        return Err(Failure::NotUnique { level, lines });
    }
    Ok(Some(Found {
        ranges: all.map(|s| s..s + len).collect(),
        with: replace.to_string(),
        level,
        tags: Vec::new(),
        line,
    }))
}

/// Start offsets of the non-overlapping occurrences of the finder's needle.
fn non_overlapping<'a>(
    finder: &'a memchr::memmem::Finder<'a>,
    hay: &'a [u8],
    len: usize,
) -> impl Iterator<Item = usize> + Clone + 'a {
    let mut from = 0;
    std::iter::from_fn(move || {
        let at = from + finder.find(hay.get(from..)?)?;
        from = at + len.max(1);
        Some(at)
    })
}

/// 1-based line number of byte `offset`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    bytecount::count(&text.as_bytes()[..offset], b'\n') + 1
}

/// 1-based line numbers of ascending byte offsets (at most [`MAX_REPORTED`]).
pub(crate) fn lines_of(text: &str, offsets: &mut dyn Iterator<Item = usize>) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut line = 1;
    let mut pos = 0;
    let mut out = Vec::new();
    for offset in offsets.take(MAX_REPORTED) {
        line += bytecount::count(&bytes[pos..offset], b'\n');
        pos = offset;
        out.push(line);
    }
    out
}

/// Unescape search and replace when search holds literal escapes (`\n`, `\t`, `\r`,
/// `\"`, `\\`), as models produce when they double-encode JSON. `None` when there is
/// nothing to unescape.
fn unescape_pair(search: &str, replace: &str) -> Option<(String, String)> {
    let search_u = unescape(search);
    (search_u != search).then(|| (search_u, unescape(replace)))
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('"') => out.push('"'),
            Some('\\') => out.push('\\'),
            _ => {
                out.push('\\');
                continue;
            }
        }
        chars.next();
    }
    // A literal `\r\n` that became CRLF is still a line break.
    out.replace("\r\n", "\n")
}

#[cfg(test)]
mod tests;
