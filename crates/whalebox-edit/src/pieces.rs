//! The evolving text of a multi-step edit as a piece table: runs of the original text and
//! of an append-only buffer of inserted text. A step's replacement changes a few pieces,
//! never copies the document; the text is built once, at the end.

use std::borrow::Cow;
use std::ops::Range;

use whalebox_text::diff::Change;

/// Where a piece's bytes live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Base,
    Added,
}

#[derive(Debug, Clone, Copy)]
struct Piece {
    source: Source,
    start: usize,
    end: usize,
    /// `\n` bytes in the piece, so line numbers need no scan of the text.
    newlines: usize,
}

impl Piece {
    fn len(&self) -> usize {
        self.end - self.start
    }
}

/// Newlines of the original text counted per block, for line numbers of base ranges.
struct LineIndex {
    /// `before[k]`: newlines in `base[..k * BLOCK]`.
    before: Vec<usize>,
}

const BLOCK: usize = 1 << 16;

impl LineIndex {
    fn new(base: &str) -> Self {
        let mut before = Vec::with_capacity(base.len() / BLOCK + 2);
        let mut total = 0;
        before.push(0);
        for chunk in base.as_bytes().chunks(BLOCK) {
            total += bytecount::count(chunk, b'\n');
            before.push(total);
        }
        LineIndex { before }
    }

    /// Newlines in `base[..at]`.
    fn upto(&self, base: &str, at: usize) -> usize {
        let block = at / BLOCK;
        self.before[block] + bytecount::count(&base.as_bytes()[block * BLOCK..at], b'\n')
    }
}

pub(crate) struct Pieces<'a> {
    base: &'a str,
    added: String,
    pieces: Vec<Piece>,
    /// Where each piece starts in the current text.
    starts: Vec<usize>,
    len: usize,
    lines: LineIndex,
}

impl<'a> Pieces<'a> {
    pub(crate) fn new(base: &'a str) -> Self {
        let lines = LineIndex::new(base);
        let whole = Piece {
            source: Source::Base,
            start: 0,
            end: base.len(),
            newlines: lines.upto(base, base.len()),
        };
        Pieces {
            base,
            added: String::new(),
            pieces: if base.is_empty() { vec![] } else { vec![whole] },
            starts: if base.is_empty() { vec![] } else { vec![0] },
            len: base.len(),
            lines,
        }
    }

    /// The original text, while no step has changed it.
    pub(crate) fn untouched(&self) -> Option<&'a str> {
        let whole = matches!(
            self.pieces.as_slice(),
            [] | [Piece {
                source: Source::Base,
                start: 0,
                ..
            }]
        );
        (whole && self.len == self.base.len()).then_some(self.base)
    }

    fn bytes(&self, piece: &Piece) -> &[u8] {
        match piece.source {
            Source::Base => &self.base.as_bytes()[piece.start..piece.end],
            Source::Added => &self.added.as_bytes()[piece.start..piece.end],
        }
    }

    fn piece(&self, source: Source, start: usize, end: usize) -> Piece {
        let newlines = match source {
            Source::Base => self.lines.upto(self.base, end) - self.lines.upto(self.base, start),
            Source::Added => bytecount::count(&self.added.as_bytes()[start..end], b'\n'),
        };
        Piece {
            source,
            start,
            end,
            newlines,
        }
    }

    /// The pieces with the offset each starts at in the current text.
    fn placed(&self) -> impl Iterator<Item = (usize, &Piece)> {
        self.starts.iter().copied().zip(&self.pieces)
    }

    /// The pieces from the one holding offset `at` on.
    fn placed_from(&self, at: usize) -> impl Iterator<Item = (usize, &Piece)> {
        let k = self.starts.partition_point(|&s| s <= at).saturating_sub(1);
        self.placed().skip(k)
    }

    /// The whole current text, written into `out`.
    pub(crate) fn text_into(&self, out: &mut String) {
        out.clear();
        out.reserve(self.len);
        for p in &self.pieces {
            let s = match p.source {
                Source::Base => &self.base[p.start..p.end],
                Source::Added => &self.added[p.start..p.end],
            };
            out.push_str(s);
        }
    }

    /// The bytes of `range` of the current text (borrowed when one piece holds them).
    pub(crate) fn slice(&self, range: Range<usize>) -> Cow<'_, [u8]> {
        let mut out: Vec<u8> = Vec::new();
        for (at, p) in self.placed_from(range.start) {
            let end = at + p.len();
            if end <= range.start {
                continue;
            }
            if at >= range.end {
                break;
            }
            let from = range.start.max(at) - at;
            let to = range.end.min(end) - at;
            let part = &self.bytes(p)[from..to];
            if out.is_empty() && from + at == range.start && to + at == range.end {
                return Cow::Borrowed(part);
            }
            out.extend_from_slice(part);
        }
        Cow::Owned(out)
    }

    /// Where the current text differs from the original: the gaps between the runs of
    /// the original it still holds (runs never move, so they are in order in both).
    pub(crate) fn changes(&self) -> Vec<Change> {
        let mut out = Vec::new();
        let (mut old_at, mut new_at) = (0, 0);
        for (at, p) in self.placed() {
            if p.source != Source::Base {
                continue;
            }
            if p.start != old_at || at != new_at {
                out.push(Change {
                    old: old_at..p.start,
                    new: new_at..at,
                });
            }
            old_at = p.end;
            new_at = at + p.len();
        }
        if old_at != self.base.len() || new_at != self.len {
            out.push(Change {
                old: old_at..self.base.len(),
                new: new_at..self.len,
            });
        }
        out
    }

    /// 1-based line number of offset `at` of the current text.
    pub(crate) fn line_of(&self, at: usize) -> usize {
        let mut newlines = 0;
        for (start, p) in self.placed() {
            if start + p.len() <= at {
                newlines += p.newlines;
                continue;
            }
            newlines += bytecount::count(&self.bytes(p)[..at - start], b'\n');
            break;
        }
        newlines + 1
    }

    /// Replace each of `ranges` (ascending, disjoint, current offsets) by `with`. The
    /// inserted text is stored once, however many ranges it replaces.
    pub(crate) fn replace(&mut self, ranges: &[Range<usize>], with: &str) {
        let with_start = self.added.len();
        self.added.push_str(with);
        let inserted =
            (!with.is_empty()).then(|| self.piece(Source::Added, with_start, self.added.len()));
        let old = std::mem::take(&mut self.pieces);
        let mut out: Vec<Piece> = Vec::with_capacity(old.len() + 2 * ranges.len() + 1);
        let mut next = 0; // the first range not yet passed
        let mut emitted = false; // whether `ranges[next]`'s insertion is in `out`
        let mut at = 0;
        for p in &old {
            let end = at + p.len();
            let mut cursor = at;
            // Keep what no range covers; put the insertion where each range begins.
            while cursor < end {
                let Some(r) = ranges.get(next).filter(|r| r.start < end) else {
                    out.push(self.piece(p.source, p.start + (cursor - at), p.end));
                    break;
                };
                if cursor < r.start {
                    out.push(self.piece(
                        p.source,
                        p.start + (cursor - at),
                        p.start + (r.start - at),
                    ));
                    cursor = r.start;
                }
                if !emitted {
                    out.extend(inserted);
                    emitted = true;
                }
                cursor = cursor.max(r.end.min(end));
                if r.end > end {
                    break;
                }
                next += 1;
                emitted = false;
            }
            at = end;
        }
        // Ranges at the very end of the text.
        for _ in ranges.get(next..).unwrap_or_default() {
            if !emitted {
                out.extend(inserted);
            }
            emitted = false;
        }
        self.pieces = coalesce(out);
        self.starts = self
            .pieces
            .iter()
            .scan(0, |at, p| {
                let start = *at;
                *at += p.len();
                Some(start)
            })
            .collect();
        let removed: usize = ranges.iter().map(|r| r.len()).sum();
        self.len = self.len - removed + ranges.len() * with.len();
    }

    /// Every occurrence (overlapping ones too) of `needle` in the current text, ascending,
    /// given `base_hits`, every occurrence of it in the original text (ascending).
    pub(crate) fn occurrences(&self, needle: &[u8], base_hits: &[usize]) -> Vec<usize> {
        let n = needle.len();
        let mut inside = Vec::new();
        // Occurrences wholly inside one run of the original: from the original's hits.
        for (at, p) in self.placed() {
            if p.source != Source::Base || p.len() < n {
                continue;
            }
            let first = base_hits.partition_point(|&h| h < p.start);
            for &h in base_hits[first..].iter().take_while(|&&h| h + n <= p.end) {
                inside.push(at + (h - p.start));
            }
        }
        // Occurrences touching inserted text or crossing a cut: searched in small
        // windows around each seam.
        let mut seams: Vec<Range<usize>> = Vec::new();
        let mut prev: Option<&Piece> = None;
        for (at, p) in self.placed() {
            let cut = match prev {
                Some(q) => {
                    !(q.source == Source::Base && p.source == Source::Base && q.end == p.start)
                }
                None => false,
            };
            let span = match p.source {
                Source::Added => Some(at..at + p.len()),
                Source::Base if cut => Some(at..at),
                Source::Base => None,
            };
            if let Some(s) = span {
                let window = s.start.saturating_sub(n - 1)..(s.end + n - 1).min(self.len);
                match seams.last_mut() {
                    Some(last) if last.end >= window.start => last.end = last.end.max(window.end),
                    _ => seams.push(window),
                }
            }
            prev = Some(p);
        }
        let finder = memchr::memmem::Finder::new(needle);
        let mut across = Vec::new();
        for window in seams {
            let bytes = self.slice(window.clone());
            let mut from = 0;
            while let Some(i) = finder.find(&bytes[from..]) {
                let at = window.start + from + i;
                if !self.inside_one_base_run(at, n) {
                    across.push(at);
                }
                from += i + 1;
            }
        }
        merge_sorted(inside, across)
    }

    /// True when `[at, at + n)` lies within a single piece of the original.
    fn inside_one_base_run(&self, at: usize, n: usize) -> bool {
        for (start, p) in self.placed_from(at) {
            if start + p.len() > at {
                return p.source == Source::Base && at + n <= start + p.len();
            }
        }
        false
    }
}

/// Join neighbouring pieces that continue each other.
fn coalesce(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::with_capacity(pieces.len());
    for p in pieces {
        match out.last_mut() {
            Some(q) if q.source == p.source && q.end == p.start && p.source == Source::Base => {
                q.end = p.end;
                q.newlines += p.newlines;
            }
            _ => out.push(p),
        }
    }
    out
}

fn merge_sorted(a: Vec<usize>, b: Vec<usize>) -> Vec<usize> {
    if b.is_empty() {
        return a;
    }
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}
