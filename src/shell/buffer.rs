//! The bounded output buffer of one task: the first quarter of its capacity is kept as
//! the head, the rest as a ring holding the newest bytes, so whatever a command prints,
//! memory stays bounded while the start (the command's banner, the first error) and the
//! end (the last error, the prompt) survive. Readers take what arrived since their last
//! read; a gap where bytes were dropped is reported, and no read splits a UTF-8 character.

use std::collections::VecDeque;

#[derive(Debug)]
pub struct OutputBuffer {
    head: Vec<u8>,
    head_cap: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    /// Bytes ever pushed; the tail ends at this offset.
    total: u64,
    /// Newlines ever pushed.
    lines: u64,
    /// Offset of the next byte the reader has not seen.
    cursor: u64,
}

/// What one read returns.
#[derive(Debug, Default, PartialEq)]
pub struct Chunk {
    pub bytes: Vec<u8>,
    /// Bytes between the previous read and this one that were not kept.
    pub dropped: u64,
    /// Where in `bytes` the dropped stretch was (when `dropped > 0`).
    pub gap_at: usize,
}

impl OutputBuffer {
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(64);
        let head_cap = capacity / 4;
        OutputBuffer {
            head: Vec::new(),
            head_cap,
            tail: VecDeque::new(),
            tail_cap: capacity - head_cap,
            total: 0,
            lines: 0,
            cursor: 0,
        }
    }

    pub fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        self.lines += bytecount::count(data, b'\n') as u64;
        if self.head.len() < self.head_cap {
            let take = (self.head_cap - self.head.len()).min(data.len());
            self.head.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        if data.len() >= self.tail_cap {
            data = &data[data.len() - self.tail_cap..];
            self.tail.clear();
        } else {
            let overflow = (self.tail.len() + data.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
        }
        self.tail.extend(data);
    }

    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    pub fn total_lines(&self) -> u64 {
        self.lines
    }

    /// Bytes never kept so far (the stretch between head and tail).
    pub fn dropped(&self) -> u64 {
        self.total - self.head.len() as u64 - self.tail.len() as u64
    }

    /// The last `n` bytes kept (for diagnosing prompts), lossily decoded.
    pub fn tail_text(&self, n: usize) -> String {
        let kept: Vec<u8> = if self.tail.is_empty() {
            self.head[self.head.len().saturating_sub(n)..].to_vec()
        } else {
            let skip = self.tail.len().saturating_sub(n);
            self.tail.iter().skip(skip).copied().collect()
        };
        String::from_utf8_lossy(trim_partial_start(&kept)).into_owned()
    }

    /// Everything since the last read. Unless `last` (the task ended), an incomplete
    /// UTF-8 character at the end stays for the next read.
    pub fn read_new(&mut self, last: bool) -> Chunk {
        let mut chunk = Chunk::default();
        let head_len = self.head.len() as u64;
        let tail_start = self.total - self.tail.len() as u64;
        if self.cursor < head_len {
            chunk
                .bytes
                .extend_from_slice(&self.head[self.cursor as usize..]);
            self.cursor = head_len;
        }
        if self.cursor < tail_start {
            chunk.dropped = tail_start - self.cursor;
            chunk.gap_at = chunk.bytes.len();
            // The head may end mid-character: drop its partial end, and the tail's
            // partial start, so both sides of the gap decode.
            let cut = partial_end(&chunk.bytes);
            chunk.bytes.truncate(chunk.bytes.len() - cut);
            chunk.gap_at = chunk.bytes.len();
            self.cursor = tail_start;
        }
        let from = (self.cursor - tail_start) as usize;
        let mut rest: Vec<u8> = self.tail.iter().skip(from).copied().collect();
        if chunk.dropped > 0 {
            let skip = rest.len() - trim_partial_start(&rest).len();
            rest.drain(..skip);
        }
        chunk.bytes.extend_from_slice(&rest);
        // Hold back an incomplete last character (never past the gap) for the next read.
        let keep_back = if last {
            0
        } else {
            partial_end(&chunk.bytes[chunk.gap_at.min(chunk.bytes.len())..])
        };
        chunk.bytes.truncate(chunk.bytes.len() - keep_back);
        self.cursor = self.total - keep_back as u64;
        chunk
    }
}

/// Skip UTF-8 continuation bytes at the start (the rest of a character cut off).
fn trim_partial_start(b: &[u8]) -> &[u8] {
    let n = b.iter().take(3).take_while(|&&c| c & 0xC0 == 0x80).count();
    &b[n..]
}

/// How many bytes at the end form an incomplete UTF-8 character.
fn partial_end(b: &[u8]) -> usize {
    for back in 1..=3.min(b.len()) {
        let c = b[b.len() - back];
        if c & 0xC0 == 0x80 {
            continue;
        }
        let need = match c {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => return 0,
        };
        return if need > back { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_return_what_is_new() {
        let mut b = OutputBuffer::new(1024);
        b.push(b"one\ntwo\n");
        assert_eq!(b.read_new(false).bytes, b"one\ntwo\n");
        assert_eq!(b.read_new(false).bytes, b"");
        b.push(b"three");
        assert_eq!(b.read_new(false).bytes, b"three");
        assert_eq!(b.total_lines(), 2);
    }

    #[test]
    fn a_character_split_across_pushes_is_read_whole() {
        let mut b = OutputBuffer::new(1024);
        let e = "é".as_bytes();
        b.push(&e[..1]);
        assert_eq!(b.read_new(false).bytes, b"");
        b.push(&e[1..]);
        assert_eq!(b.read_new(false).bytes, e);
        b.push(&"中".as_bytes()[..2]);
        assert_eq!(b.read_new(true).bytes, &"中".as_bytes()[..2]);
    }

    #[test]
    fn a_partial_character_in_the_head_waits_too() {
        let mut b = OutputBuffer::new(1 << 20);
        b.push(&"中".as_bytes()[..2]);
        assert_eq!(b.read_new(false).bytes, b"");
        b.push(&"中".as_bytes()[2..]);
        assert_eq!(b.read_new(false).bytes, "中".as_bytes());
    }

    #[test]
    fn memory_stays_bounded_and_both_ends_survive() {
        let mut b = OutputBuffer::new(1000);
        b.push(b"START");
        for _ in 0..10_000 {
            b.push(b"0123456789");
        }
        b.push(b"END");
        assert!(b.head.len() + b.tail.len() <= 1000);
        let c = b.read_new(true);
        assert!(c.bytes.starts_with(b"START"));
        assert!(c.bytes.ends_with(b"END"));
        assert!(c.dropped > 0);
        assert_eq!(c.dropped + c.bytes.len() as u64, b.total_bytes());
    }

    #[test]
    fn the_gap_never_splits_a_character() {
        let mut b = OutputBuffer::new(64);
        b.push("x".repeat(10).as_bytes());
        b.push("中".repeat(40).as_bytes());
        let c = b.read_new(false);
        let text = String::from_utf8(c.bytes.clone()).expect("valid UTF-8 on both sides");
        assert!(text.ends_with('中'));
        assert!(c.dropped > 0);
    }
}
