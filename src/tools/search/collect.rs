//! What grep keeps of one file: the searcher's sink, collecting matches and context
//! lines (a long line as a window around its match) under a cap on the lines held
//! across all files, or only counting, as the output mode asks.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use grep_matcher::Matcher;
use grep_regex::RegexMatcher;
use grep_searcher::{Searcher, Sink, SinkContext, SinkContextKind, SinkMatch};
use serde::Deserialize;

/// Matched lines longer than this are shown as a window around the match.
const MAX_MATCH_LINE_CHARS: usize = 500;
/// Lines kept in memory across all files before further lines are only counted.
const MAX_STORED_LINES: usize = 200_000;

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Default, Debug)]
#[serde(rename_all = "snake_case")]
pub(super) enum OutputMode {
    #[default]
    Content,
    FilesWithMatches,
    Count,
}

#[derive(Debug, Clone)]
pub(super) struct Line {
    pub(super) number: u64,
    pub(super) text: String,
    pub(super) is_match: bool,
}

/// One file's results. `lines` holds matches and context, with `None` as a break
/// between non-adjacent groups.
#[derive(Debug)]
pub(super) struct FileHits {
    pub(super) path: String,
    pub(super) matches: u64,
    pub(super) lines: Vec<Option<Line>>,
}

/// Collects one file's matches (and context) from the searcher.
pub(super) struct Collector<'a> {
    pub(super) matcher: &'a RegexMatcher,
    pub(super) mode: OutputMode,
    pub(super) matches: u64,
    pub(super) lines: Vec<Option<Line>>,
    pub(super) stored: &'a AtomicUsize,
    pub(super) overflow: &'a AtomicBool,
}

impl Collector<'_> {
    fn keep(&mut self, line: Option<Line>) {
        if self.stored.fetch_add(1, Ordering::Relaxed) >= MAX_STORED_LINES {
            self.overflow.store(true, Ordering::Relaxed);
        } else {
            self.lines.push(line);
        }
    }
}

fn line_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    String::from_utf8_lossy(bytes).into_owned()
}

/// A long line shown as a window around its first match.
fn snippet(matcher: &RegexMatcher, line: &str) -> String {
    let total = line.chars().count();
    if total <= MAX_MATCH_LINE_CHARS {
        return line.to_string();
    }
    let start_byte = matcher
        .find(line.as_bytes())
        .ok()
        .flatten()
        .map(|m| m.start())
        .unwrap_or(0);
    let start_char = line[..floor_char_boundary(line, start_byte)]
        .chars()
        .count();
    let from = start_char.saturating_sub(MAX_MATCH_LINE_CHARS / 5);
    let to = (from + MAX_MATCH_LINE_CHARS).min(total);
    let body: String = line.chars().skip(from).take(to - from).collect();
    let before = if from > 0 {
        format!("[{from} chars] …")
    } else {
        String::new()
    };
    let after = if to < total {
        format!("… [{} more chars]", total - to)
    } else {
        String::new()
    };
    format!("{before}{body}{after}")
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

impl Sink for Collector<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.matches += 1;
        match self.mode {
            OutputMode::FilesWithMatches => return Ok(false),
            OutputMode::Count => return Ok(true),
            OutputMode::Content => {}
        }
        let first = m.line_number().unwrap_or(0);
        for (number, raw) in (first..).zip(m.lines()) {
            let text = snippet(self.matcher, &line_text(raw));
            self.keep(Some(Line {
                number,
                text,
                is_match: true,
            }));
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.mode == OutputMode::Content && !matches!(c.kind(), SinkContextKind::Other) {
            let text = line_text(c.bytes());
            let text = crate::tools::common::cut_line(&text, MAX_MATCH_LINE_CHARS);
            self.keep(Some(Line {
                number: c.line_number().unwrap_or(0),
                text,
                is_match: false,
            }));
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if self.mode == OutputMode::Content {
            self.keep(None);
        }
        Ok(true)
    }
}
