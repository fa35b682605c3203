//! Paged reading: decode a file as a stream and keep only one window of lines, so a
//! multi-gigabyte log can be read page by page without ever being held in memory.
//! The encoding is decided the same way as [`super::decode`]: BOM, else UTF-8, else
//! GB18030, all strict; a stream that turns out malformed is re-read in the next one.

use std::io::{self, Read, Seek, SeekFrom};

use encoding_rs::DecoderResult;
use sha2::{Digest, Sha256};

use super::{DecodeError, Detected, LineEndings, SNIFF_BYTES, Sniff, sniff};

const CHUNK: usize = 64 * 1024;

/// Which lines to keep.
#[derive(Debug, Clone)]
pub struct PageRequest {
    /// 1-based number of the first line to keep.
    pub first_line: u64,
    /// How many lines to keep.
    pub max_lines: u64,
    /// Longer lines are cut to this many characters.
    pub max_line_chars: usize,
    /// After the window, keep counting lines for at most this many more bytes, so the
    /// total is known for ordinary files but a huge one does not cost a full scan.
    pub count_budget_bytes: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PageLine {
    pub number: u64,
    pub text: String,
    /// Characters cut from the end of this line (0 when shown whole).
    pub cut_chars: usize,
}

#[derive(Debug, Clone)]
pub struct Page {
    pub detected: Detected,
    pub lines: Vec<PageLine>,
    /// Total lines in the file; `None` when counting stopped at the budget.
    pub total_lines: Option<u64>,
    /// Line endings seen in the part that was scanned.
    pub line_endings: LineEndings,
    /// Bytes decoded (the whole file unless counting stopped early).
    pub scanned_bytes: u64,
    /// sha256 of the whole file, when the whole file was read.
    pub sha256: Option<[u8; 32]>,
}

#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Read the window `req` asks for from `file` (positioned anywhere).
pub fn read_page<F: Read + Seek>(file: &mut F, req: &PageRequest) -> Result<Page, PageError> {
    let mut head = vec![0u8; SNIFF_BYTES];
    file.seek(SeekFrom::Start(0))?;
    let n = read_full(file, &mut head)?;
    head.truncate(n);
    let candidates: Vec<Detected> = match sniff(&head) {
        Sniff::Binary => return Err(DecodeError::Binary.into()),
        Sniff::Bom(d) => vec![d],
        Sniff::Text => vec![Detected::UTF8, Detected::GB18030],
    };
    let mut first_error = None;
    for detected in candidates {
        file.seek(SeekFrom::Start(detected.bom_len as u64))?;
        let mut hasher = Sha256::new();
        hasher.update(&head[..detected.bom_len.min(head.len())]);
        match scan(file, detected, req, hasher)? {
            Ok(page) => return Ok(page),
            Err(offset) => {
                first_error.get_or_insert(offset + detected.bom_len as u64);
            }
        }
    }
    Err(DecodeError::Undecodable {
        offset: first_error.unwrap_or(0) as usize,
    }
    .into())
}

fn read_full<F: Read>(file: &mut F, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Line bookkeeping while the decoded text streams past.
struct Lines<'r> {
    req: &'r PageRequest,
    number: u64,
    has_content: bool,
    ends_with_cr: bool,
    kept: String,
    kept_chars: usize,
    total_chars: usize,
    lf: u64,
    crlf: u64,
    out: Vec<PageLine>,
}

impl Lines<'_> {
    /// First line number after the window (saturating: `limit` may be any u64).
    fn window_end(&self) -> u64 {
        self.req.first_line.saturating_add(self.req.max_lines)
    }

    fn in_window(&self) -> bool {
        self.number >= self.req.first_line && self.number < self.window_end()
    }

    fn window_done(&self) -> bool {
        self.number >= self.window_end()
    }

    fn feed(&mut self, segment: &str) {
        if segment.is_empty() {
            return;
        }
        self.has_content = true;
        self.ends_with_cr = segment.ends_with('\r');
        if !self.in_window() {
            return;
        }
        let chars = segment.chars().count();
        let room = self.req.max_line_chars.saturating_sub(self.kept_chars);
        if room >= chars {
            self.kept.push_str(segment);
            self.kept_chars += chars;
        } else if room > 0 {
            let end = segment
                .char_indices()
                .nth(room)
                .map(|(i, _)| i)
                .unwrap_or(segment.len());
            self.kept.push_str(&segment[..end]);
            self.kept_chars += room;
        }
        self.total_chars += chars;
    }

    /// The current line ends (at a `\n`, or at end of file when `at_newline` is false).
    fn end_line(&mut self, at_newline: bool) {
        if at_newline {
            if self.ends_with_cr {
                self.crlf += 1;
            } else {
                self.lf += 1;
            }
        }
        if self.in_window() {
            let mut total = self.total_chars;
            if at_newline && self.ends_with_cr {
                // The `\r` of a CRLF is part of the line break, not the line.
                total -= 1;
                if self.kept.ends_with('\r') {
                    self.kept.pop();
                    self.kept_chars -= 1;
                }
            }
            self.out.push(PageLine {
                number: self.number,
                text: std::mem::take(&mut self.kept),
                cut_chars: total - self.kept_chars,
            });
        }
        self.number += 1;
        self.has_content = false;
        self.ends_with_cr = false;
        self.kept_chars = 0;
        self.total_chars = 0;
    }

    fn process(&mut self, text: &str) {
        let mut rest = text;
        while let Some(i) = rest.find('\n') {
            self.feed(&rest[..i]);
            self.end_line(true);
            rest = &rest[i + 1..];
        }
        self.feed(rest);
    }
}

/// One decoding pass. `Ok(Err(offset))`: the stream is malformed at `offset` (relative
/// to the start of the body) in this encoding.
fn scan<F: Read>(
    file: &mut F,
    detected: Detected,
    req: &PageRequest,
    mut hasher: Sha256,
) -> io::Result<Result<Page, u64>> {
    let mut decoder = detected.encoding.new_decoder_without_bom_handling();
    let mut input = vec![0u8; CHUNK];
    let mut decoded = String::new();
    let mut lines = Lines {
        req,
        number: 1,
        has_content: false,
        ends_with_cr: false,
        kept: String::new(),
        kept_chars: 0,
        total_chars: 0,
        lf: 0,
        crlf: 0,
        out: Vec::new(),
    };
    let mut offset: u64 = 0;
    let mut stop_counting_at: Option<u64> = None;
    let mut complete = true;
    loop {
        let n = read_full(file, &mut input)?;
        hasher.update(&input[..n]);
        let last = n < input.len();
        let mut consumed = 0;
        loop {
            decoded.clear();
            let needed = decoder
                .max_utf8_buffer_length_without_replacement(n - consumed)
                .unwrap_or(CHUNK * 4);
            decoded.reserve(needed);
            let (result, read) = decoder.decode_to_string_without_replacement(
                &input[consumed..n],
                &mut decoded,
                last,
            );
            consumed += read;
            lines.process(&decoded);
            match result {
                DecoderResult::InputEmpty => break,
                DecoderResult::OutputFull => continue,
                DecoderResult::Malformed(bad, extra) => {
                    let at = offset + consumed as u64 - bad as u64 - extra as u64;
                    return Ok(Err(at));
                }
            }
        }
        offset += n as u64;
        if last {
            break;
        }
        if lines.window_done() {
            let limit =
                *stop_counting_at.get_or_insert(offset.saturating_add(req.count_budget_bytes));
            if offset >= limit {
                complete = false;
                break;
            }
        }
    }
    if complete && lines.has_content {
        lines.end_line(false);
    }
    let total_lines = complete.then(|| lines.number - 1);
    Ok(Ok(Page {
        detected,
        line_endings: LineEndings::from_counts(lines.lf, lines.crlf),
        lines: lines.out,
        total_lines,
        scanned_bytes: offset + detected.bom_len as u64,
        sha256: complete.then(|| hasher.finalize().into()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn req(first: u64, max: u64) -> PageRequest {
        PageRequest {
            first_line: first,
            max_lines: max,
            max_line_chars: 10,
            count_budget_bytes: u64::MAX,
        }
    }

    fn page(bytes: &[u8], r: &PageRequest) -> Page {
        read_page(&mut Cursor::new(bytes.to_vec()), r).unwrap()
    }

    #[test]
    fn window_and_total_lines() {
        let text: String = (1..=100).map(|i| format!("l{i}\n")).collect();
        let p = page(text.as_bytes(), &req(10, 3));
        let got: Vec<_> = p
            .lines
            .iter()
            .map(|l| (l.number, l.text.as_str()))
            .collect();
        assert_eq!(got, vec![(10, "l10"), (11, "l11"), (12, "l12")]);
        assert_eq!(p.total_lines, Some(100));
        assert_eq!(p.line_endings, LineEndings::Lf);
    }

    #[test]
    fn crlf_is_not_part_of_the_line_and_last_line_without_newline_counts() {
        let p = page(b"a\r\nb\r\nc", &req(1, 10));
        let got: Vec<_> = p.lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(got, vec!["a", "b", "c"]);
        assert_eq!(p.total_lines, Some(3));
        assert_eq!(p.line_endings, LineEndings::Crlf);
    }

    #[test]
    fn long_lines_are_cut_and_the_cut_is_counted() {
        let p = page("ééééééééééééééé\r\nshort\n".as_bytes(), &req(1, 10));
        assert_eq!(p.lines[0].text, "éééééééééé");
        assert_eq!(p.lines[0].cut_chars, 5);
        assert_eq!(p.lines[1].cut_chars, 0);
    }

    #[test]
    fn lines_spanning_chunks_are_whole() {
        let long = "x".repeat(CHUNK * 2 + 7);
        let text = format!("first\n{long}\nlast\n");
        let mut r = req(1, 10);
        r.max_line_chars = usize::MAX;
        let p = page(text.as_bytes(), &r);
        assert_eq!(p.lines[1].text.len(), long.len());
        assert_eq!(p.lines[2].text, "last");
    }

    #[test]
    fn gb18030_is_detected_after_utf8_fails_deep_in_the_file() {
        let mut text = "ascii line\n".repeat(20_000);
        text.push_str("最后一行\n");
        let (bytes, _, _) = encoding_rs::GB18030.encode(&text);
        let p = page(&bytes, &req(20_001, 1));
        assert_eq!(p.detected, Detected::GB18030);
        assert_eq!(p.lines[0].text, "最后一行");
    }

    #[test]
    fn counting_stops_at_the_budget() {
        let text: String = (1..=100_000).map(|i| format!("line {i}\n")).collect();
        let mut r = req(1, 5);
        r.count_budget_bytes = 1;
        let p = page(text.as_bytes(), &r);
        assert_eq!(p.lines.len(), 5);
        assert_eq!(p.total_lines, None);
    }

    #[test]
    fn extreme_offsets_and_limits_do_not_overflow() {
        let p = page(b"a\nb\n", &req(u64::MAX, u64::MAX));
        assert!(p.lines.is_empty());
        assert_eq!(p.total_lines, Some(2));
        let p = page(b"a\nb\n", &req(2, u64::MAX));
        assert_eq!(p.lines.len(), 1);
    }

    #[test]
    fn the_hash_covers_every_byte_including_the_bom() {
        let bytes = b"\xEF\xBB\xBFa\r\nb\n";
        let p = page(bytes, &req(1, 1));
        assert_eq!(p.sha256, Some(Sha256::digest(bytes).into()));
        let mut r = req(1, 1);
        r.count_budget_bytes = 0;
        let big = "x\n".repeat(100_000);
        assert_eq!(
            page(big.as_bytes(), &r).sha256,
            None,
            "not read whole: no hash"
        );
    }

    #[test]
    fn empty_file_has_no_lines() {
        let p = page(b"", &req(1, 10));
        assert_eq!(p.total_lines, Some(0));
        assert!(p.lines.is_empty());
    }

    #[test]
    fn binary_and_undecodable() {
        let e = read_page(&mut Cursor::new(b"a\0b".to_vec()), &req(1, 1)).unwrap_err();
        assert!(matches!(e, PageError::Decode(DecodeError::Binary)));
        let e = read_page(&mut Cursor::new(b"abc\xff\xfe\xfd".to_vec()), &req(1, 1)).unwrap_err();
        assert!(matches!(
            e,
            PageError::Decode(DecodeError::Undecodable { offset: 3 })
        ));
    }
}
