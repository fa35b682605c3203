//! A text file as the edit tools see it: decoded, with line endings normalized to `\n`
//! for matching, and everything needed to turn an edited text back into bytes that
//! differ from the original only where the text changed: the encoding, the BOM, and the
//! ending of every line (LF, CRLF or a lone CR, per line).
//!
//! Restoring: in a file with one line-ending style, every line gets that style. In a
//! mixed file, the new lines are aligned with the old ones ([`super::diff::align`]);
//! untouched lines keep their own ending, new lines take the ending of the line they
//! replace, else of their neighbour. A missing final newline stays missing unless the
//! edit itself adds one.

use std::borrow::Cow;

use encoding_rs::{GB18030, UTF_8, UTF_16BE, UTF_16LE};
use serde::Serialize;
use similar::DiffOp;

use super::diff::{Change, align_changed, changes_between};
use super::{DecodeError, Detected, Sniff, decode_text, sniff, utf8_string};

/// How one line ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    Lf,
    Crlf,
    Cr,
}

impl Ending {
    pub fn as_str(self) -> &'static str {
        match self {
            Ending::Lf => "\n",
            Ending::Crlf => "\r\n",
            Ending::Cr => "\r",
        }
    }
}

/// The line-ending style of a whole file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    /// No line break at all.
    None,
    Lf,
    Crlf,
    Cr,
    Mixed,
}

/// The original ending of each `\n` of the normalized text.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Endings {
    /// Every line break is this one (no per-line table needed).
    Uniform(Ending),
    /// Line by line, in order.
    PerLine(Vec<Ending>),
}

#[derive(Debug, Clone)]
pub struct Document {
    pub detected: Detected,
    /// The text with every line ending as `\n`.
    pub text: String,
    endings: Endings,
}

impl Document {
    /// Decode `bytes` strictly (see [`super::decode`]) and normalize line endings.
    pub fn decode(bytes: &[u8]) -> Result<Document, DecodeError> {
        let (text, detected) = decode_text(bytes)?;
        let (text, endings) = normalize(text);
        Ok(Document {
            detected,
            text,
            endings,
        })
    }

    /// [`Self::decode`], taking the bytes. For plain UTF-8 without BOM or `\r` (most
    /// files) the bytes become the text without a copy, and `None` is returned for the
    /// original (it is `doc.text`); otherwise the original bytes come back as well.
    pub fn decode_owned(bytes: Vec<u8>) -> Result<(Document, Option<Vec<u8>>), DecodeError> {
        if sniff(&bytes) == Sniff::Text && memchr::memchr(b'\r', &bytes).is_none() {
            match utf8_string(bytes) {
                Ok(text) => {
                    let doc = Document {
                        detected: Detected::UTF8,
                        text,
                        endings: Endings::Uniform(Ending::Lf),
                    };
                    return Ok((doc, None));
                }
                Err((bytes, _)) => {
                    let doc = Document::decode(&bytes)?;
                    return Ok((doc, Some(bytes)));
                }
            }
        }
        let doc = Document::decode(&bytes)?;
        Ok((doc, Some(bytes)))
    }

    /// A document for a file that does not exist yet: UTF-8 without BOM, with `ending`
    /// for every line.
    pub fn new_file(ending: Ending) -> Document {
        Document {
            detected: Detected::UTF8,
            text: String::new(),
            endings: Endings::Uniform(ending),
        }
    }

    pub fn style(&self) -> Style {
        match &self.endings {
            // A file without any line break has no style (a new, empty one has the
            // style it will be given).
            Endings::Uniform(_)
                if !self.text.is_empty()
                    && memchr::memchr(b'\n', self.text.as_bytes()).is_none() =>
            {
                Style::None
            }
            Endings::Uniform(e) => style_of(*e),
            Endings::PerLine(_) => Style::Mixed,
        }
    }

    /// The ending most lines have (LF on a tie or when there is none).
    pub fn dominant(&self) -> Ending {
        let per_line = match &self.endings {
            Endings::Uniform(e) => return *e,
            Endings::PerLine(v) => v,
        };
        let mut counts = [0usize; 3];
        for e in per_line {
            counts[*e as usize] += 1;
        }
        [Ending::Lf, Ending::Crlf, Ending::Cr]
            .into_iter()
            .max_by_key(|e| (counts[*e as usize], *e == Ending::Lf))
            .unwrap_or(Ending::Lf)
    }

    /// `new` (LF-normalized) with this file's line endings restored; `changes` are
    /// where `new` differs from this document's text.
    pub fn restore_endings<'a>(&self, new: &'a str, changes: &[Change]) -> Cow<'a, str> {
        match &self.endings {
            Endings::Uniform(Ending::Lf) => Cow::Borrowed(new),
            Endings::Uniform(e) => Cow::Owned(new.replace('\n', e.as_str())),
            Endings::PerLine(per_line) => Cow::Owned(self.restore_mixed(new, changes, per_line)),
        }
    }

    fn restore_mixed(&self, new: &str, changes: &[Change], per_line: &[Ending]) -> String {
        // A line break outside every change is the old one, moved: it keeps its ending.
        let kept = kept_line_breaks(&self.text, new, changes, per_line);
        // The line diff only chooses for line breaks the changes wrote.
        let aligned = align_changed(&self.text, new, changes, 0);
        // The new text's lines, consumed in order as the script walks them.
        let mut new_lines = Lines { rest: new };
        let dominant = self.dominant();
        let mut out = String::with_capacity(new.len() + new.len() / 16);
        let mut previous: Option<Ending> = None;
        let old_ending = |i: usize| per_line.get(i).copied();
        for op in &aligned.ops {
            let (old_range, new_range) = (op.old_range(), op.new_range());
            let equal = matches!(op, DiffOp::Equal { .. });
            for k in 0..new_range.len() {
                let Some(line) = new_lines.next() else { break };
                let Some(content) = line.strip_suffix('\n') else {
                    out.push_str(line);
                    continue;
                };
                let positional = old_range.start + k;
                let ending = if let Some(old) = kept[new_range.start + k] {
                    Some(old)
                } else if equal {
                    old_ending(positional)
                } else if positional < old_range.end {
                    // A changed line takes the ending of the old line in its place …
                    old_ending(positional)
                } else {
                    None
                }
                // … else its neighbours' (the line before, then the block's last old line).
                .or(previous)
                .or_else(|| old_range.end.checked_sub(1).and_then(old_ending))
                .or_else(|| old_ending(old_range.end))
                .unwrap_or(dominant);
                // An empty line ending in LF right after a CR would be read back as one
                // CRLF, and the line lost: it ends in CRLF instead (a CR would merge with
                // the next empty LF line in turn).
                let ending =
                    if content.is_empty() && ending == Ending::Lf && previous == Some(Ending::Cr) {
                        Ending::Crlf
                    } else {
                        ending
                    };
                out.push_str(content);
                out.push_str(ending.as_str());
                previous = Some(ending);
            }
        }
        out
    }

    /// Encode text (with its real line endings) the way this file is stored.
    pub fn encode(&self, text: &str) -> Vec<u8> {
        let enc = self.detected.encoding;
        let bom = self.detected.has_bom();
        if enc == UTF_16LE || enc == UTF_16BE {
            let mut out = Vec::with_capacity(2 + text.len() * 2);
            let little = enc == UTF_16LE;
            out.extend_from_slice(if little { &[0xFF, 0xFE] } else { &[0xFE, 0xFF] });
            for unit in text.encode_utf16() {
                let bytes = if little {
                    unit.to_le_bytes()
                } else {
                    unit.to_be_bytes()
                };
                out.extend_from_slice(&bytes);
            }
            return out;
        }
        if enc == GB18030 {
            // GB18030 maps every Unicode scalar value but U+E5E5 (WHATWG), which
            // encoding_rs writes as `&#58853;`: the edit tools refuse such a text.
            let (bytes, _, _) = GB18030.encode(text);
            return bytes.into_owned();
        }
        debug_assert_eq!(enc, UTF_8);
        let mut out = Vec::with_capacity(text.len() + 3);
        if bom {
            out.extend_from_slice(&[0xEF, 0xBB, 0xBF]);
        }
        out.extend_from_slice(text.as_bytes());
        out
    }

    /// The bytes to store for the LF-normalized text `new`.
    pub fn to_bytes(&self, new: &str) -> Vec<u8> {
        self.encode(&self.restore_endings(new, &changes_between(&self.text, new)))
    }

    /// [`Self::to_bytes`], reusing `new`'s buffer when the bytes are the text itself
    /// (UTF-8 without BOM and LF endings: most files), which saves a copy of the file.
    /// `changes` are where `new` differs from this document's text.
    pub fn into_bytes(&self, new: String, changes: &[Change]) -> Vec<u8> {
        let plain = self.detected.encoding == UTF_8 && !self.detected.has_bom();
        match self.restore_endings(&new, changes) {
            Cow::Borrowed(_) if plain => new.into_bytes(),
            Cow::Owned(restored) if plain => restored.into_bytes(),
            restored => self.encode(&restored),
        }
    }
}

/// For each line of `new`, the ending of the old line break that ends it when that break
/// lies outside every change (the old one, moved by the changes before it); None for a
/// break a change wrote, and for a last line without one. `changes` are in order.
fn kept_line_breaks(
    old: &str,
    new: &str,
    changes: &[Change],
    per_line: &[Ending],
) -> Vec<Option<Ending>> {
    let (ob, nb) = (old.as_bytes(), new.as_bytes());
    let mut kept = Vec::with_capacity(per_line.len() + 1);
    let mut old_break = 0; // old line breaks passed so far
    let mut new_at = 0;
    for change in changes {
        for _ in memchr::memchr_iter(b'\n', &nb[new_at..change.new.start]) {
            kept.push(per_line.get(old_break).copied());
            old_break += 1;
        }
        old_break += memchr::memchr_iter(b'\n', &ob[change.old.clone()]).count();
        kept.extend(memchr::memchr_iter(b'\n', &nb[change.new.clone()]).map(|_| None));
        new_at = change.new.end;
    }
    for _ in memchr::memchr_iter(b'\n', &nb[new_at..]) {
        kept.push(per_line.get(old_break).copied());
        old_break += 1;
    }
    kept.push(None);
    kept
}

fn style_of(e: Ending) -> Style {
    match e {
        Ending::Lf => Style::Lf,
        Ending::Crlf => Style::Crlf,
        Ending::Cr => Style::Cr,
    }
}

/// `\r\n`, `\n` and a lone `\r` all end a line; the result has `\n` only, plus the
/// original ending of each.
fn normalize(text: String) -> (String, Endings) {
    if memchr::memchr(b'\r', text.as_bytes()).is_none() {
        return (text, Endings::Uniform(Ending::Lf));
    }
    // Compact in place: CRLF loses its CR, a lone CR becomes LF. Only ASCII bytes are
    // removed or replaced, so the result is still UTF-8.
    let mut bytes = text.into_bytes();
    let mut endings = Vec::new();
    let (mut read, mut write) = (0, 0);
    while let Some(i) = memchr::memchr2(b'\r', b'\n', &bytes[read..]) {
        let at = read + i;
        // Classify before writing: `write` may equal `at`.
        let (ending, next) = if bytes[at] == b'\n' {
            (Ending::Lf, at + 1)
        } else if bytes.get(at + 1) == Some(&b'\n') {
            (Ending::Crlf, at + 2)
        } else {
            (Ending::Cr, at + 1)
        };
        bytes.copy_within(read..at, write);
        write += at - read;
        bytes[write] = b'\n';
        write += 1;
        endings.push(ending);
        read = next;
    }
    let len = bytes.len();
    bytes.copy_within(read..len, write);
    bytes.truncate(write + (len - read));
    let out = match utf8_string(bytes) {
        Ok(s) => s,
        // Unreachable: only ASCII bytes were touched. Stay lossless anyway.
        Err((bytes, _)) => String::from_utf8_lossy(&bytes).into_owned(),
    };
    let endings = match endings.first() {
        Some(&first) if endings.iter().all(|&e| e == first) => Endings::Uniform(first),
        None => Endings::Uniform(Ending::Lf),
        Some(_) => Endings::PerLine(endings),
    };
    (out, endings)
}

/// Lines with their `\n` (the last may have none), found with memchr.
struct Lines<'a> {
    rest: &'a str,
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        let end = memchr::memchr(b'\n', self.rest.as_bytes()).map_or(self.rest.len(), |i| i + 1);
        let (line, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(line)
    }
}

/// Normalize text the model sent (which may carry its own CRLFs) to `\n` endings.
pub fn normalize_input(text: &str) -> String {
    if text.contains('\r') {
        normalize(text.to_string()).0
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(bytes: &[u8]) {
        let doc = Document::decode(bytes).unwrap();
        assert_eq!(
            doc.to_bytes(&doc.text),
            bytes,
            "unchanged text gives the same bytes"
        );
    }

    /// Found by the multi_edit fuzz target: in a file mixing CR and LF endings, a line
    /// emptied by an edit kept its LF right after the CR of the line before, and the two
    /// were read back as one CRLF: the line was lost.
    #[test]
    fn an_emptied_line_after_a_cr_line_is_not_merged_into_a_crlf() {
        for (file, new) in [
            ("a\rab\n", "a\n\n"),
            ("a\rb\nab\n", "a\n\nab\n"),
            ("x\n\ry\rab\nz\n", "x\n\ny\n\nz\n"),
            ("a\rab\n\n\nb\n", "a\n\n\n\nb\n"),
        ] {
            let doc = Document::decode(file.as_bytes()).unwrap();
            let bytes = doc.to_bytes(new);
            let back = Document::decode(&bytes).unwrap();
            assert_eq!(back.text, new, "{file:?} edited to {new:?} wrote {bytes:?}");
            // Only the emptied line's ending changed: the CR lines keep theirs.
            let crs = file.matches('\r').count();
            assert_eq!(
                bytes.iter().filter(|&&b| b == b'\r').count(),
                crs + 1,
                "{bytes:?}"
            );
        }
    }

    /// The ending of every line break of `doc`, in order.
    fn endings_of(doc: &Document) -> Vec<Ending> {
        match &doc.endings {
            Endings::Uniform(e) => vec![*e; doc.text.matches('\n').count()],
            Endings::PerLine(v) => v.clone(),
        }
    }

    /// Every line break an edit did not touch keeps its ending, also where the edit
    /// leaves lines of the same text on either side (a line diff can pair the kept line
    /// with the removed one and hand it the removed one's ending). Every small file of
    /// mixed endings, every span replaced by each of a few texts.
    #[test]
    fn every_line_break_outside_the_change_keeps_its_ending() {
        let lines = ["a", "", "b"];
        let endings = ["\n", "\r\n", "\r"];
        let mut files = vec![String::new()];
        for _ in 0..3 {
            let mut longer = Vec::new();
            for f in &files {
                for l in lines {
                    for e in endings {
                        longer.push(format!("{f}{l}{e}"));
                    }
                }
            }
            files.extend(longer);
        }
        let mut checked = 0;
        for file in &files {
            let doc = Document::decode(file.as_bytes()).unwrap();
            let Endings::PerLine(old_endings) = &doc.endings else {
                continue;
            };
            let old = doc.text.as_str();
            for start in 0..=old.len() {
                for end in start..=old.len() {
                    for with in ["", "a", "\n", "a\n", "\na"] {
                        let new = format!("{}{with}{}", &old[..start], &old[end..]);
                        let change = Change {
                            old: start..end,
                            new: start..start + with.len(),
                        };
                        let bytes = doc.into_bytes(new.clone(), std::slice::from_ref(&change));
                        let back = Document::decode(&bytes).unwrap();
                        assert_eq!(
                            back.text, new,
                            "{file:?}: {start}..{end} -> {with:?}: {bytes:?}"
                        );
                        let written = endings_of(&back);
                        // Line breaks before the change, then after it (by their old index).
                        let before = old[..start].matches('\n').count();
                        let removed = old[start..end].matches('\n').count();
                        let added = with.matches('\n').count();
                        let kept = (0..before).map(|i| (i, i)).chain(
                            (before + removed..old_endings.len()).map(|i| (i, i - removed + added)),
                        );
                        for (was, now) in kept {
                            let want = old_endings[was];
                            // An LF line emptied right after a CR line becomes CRLF, or the
                            // two would be read back as one line break.
                            let emptied = new.split_inclusive('\n').nth(now) == Some("\n");
                            let merged = want == Ending::Lf
                                && written[now] == Ending::Crlf
                                && emptied
                                && now > 0
                                && written[now - 1] == Ending::Cr;
                            assert!(
                                written[now] == want || merged,
                                "{file:?}: {start}..{end} -> {with:?} wrote {bytes:?}: line break {was} \
                                 was {want:?}, is {:?}",
                                written[now]
                            );
                        }
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
    }

    #[test]
    fn every_encoding_and_ending_round_trips_byte_for_byte() {
        roundtrip(b"a\nb\n");
        roundtrip(b"a\r\nb\r\n");
        roundtrip(b"a\rb\r");
        roundtrip(b"a\r\nb\nc\rd");
        roundtrip(b"\xEF\xBB\xBFbom\r\n");
        roundtrip(b"no newline at all");
        roundtrip(b"");
        roundtrip(b"\r\r\n\n\r");
        let (gb, _, _) = GB18030.encode("中文\r\n行\n");
        roundtrip(&gb);
        let mut le = vec![0xFF, 0xFE];
        for u in "x\r\ny\n".encode_utf16() {
            le.extend_from_slice(&u.to_le_bytes());
        }
        roundtrip(&le);
    }

    #[test]
    fn uniform_files_give_new_lines_their_style() {
        let doc = Document::decode(b"a\r\nb\r\n").unwrap();
        assert_eq!(doc.to_bytes("a\nnew\nb\n"), b"a\r\nnew\r\nb\r\n");
        assert_eq!(doc.style(), Style::Crlf);
    }

    #[test]
    fn mixed_files_keep_untouched_endings_and_new_lines_take_neighbours() {
        let doc = Document::decode(b"one\r\ntwo\nthree\r\nfour\n").unwrap();
        assert_eq!(doc.style(), Style::Mixed);
        // Replace "three", insert after "two".
        let out = doc.to_bytes("one\ntwo\ninserted\nTHREE\nfour\n");
        // "inserted" and "THREE" replace "three": they take its CRLF.
        assert_eq!(out, b"one\r\ntwo\ninserted\r\nTHREE\r\nfour\n");
    }

    #[test]
    fn missing_final_newline_stays_missing() {
        let doc = Document::decode(b"a\r\nb").unwrap();
        assert_eq!(doc.to_bytes("A\nb"), b"A\r\nb");
    }

    #[test]
    fn dominant_ending_wins_ties_for_lf() {
        let doc = Document::decode(b"a\r\nb\nc\r\n").unwrap();
        assert_eq!(doc.dominant(), Ending::Crlf);
        let doc = Document::decode(b"a\r\nb\n").unwrap();
        assert_eq!(doc.dominant(), Ending::Lf);
    }
}
