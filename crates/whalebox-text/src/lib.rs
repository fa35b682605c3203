//! Text on disk: which encoding a file is in (BOM'd UTF-8/UTF-16, UTF-8, GB18030), whether
//! it is binary, and its line endings, so tools can show text exactly and (later) write it
//! back byte for byte ([`Document`]). Decoding is strict: a file is never shown or written
//! through a lossy decode.
//!
//! The model: bytes go in, and come back out changed only where the text changed. To
//! show a file, [`decode`] gives a [`Decoded`]: the text exactly as stored, the
//! [`Detected`] encoding and the file's [`LineEndings`] (a [`DecodeError`] for binary or
//! undecodable bytes). To edit one, [`Document::decode`] keeps the text with every line
//! ending as `\n` (what matching works on) and remembers the encoding, the byte-order mark
//! and each line's own ending; the edited text goes back through [`Document::to_bytes`]
//! (or [`Document::into_bytes`] with the changed regions an editor already knows), which
//! restores all three. [`diff`] aligns two texts and writes unified diffs, and
//! [`read_page`] reads a window of lines from a large file without decoding all of it.
//!
//! ```rust
//! use whalebox_text::{DecodeError, Document, LineEndings, Style, decode, diff};
//!
//! // A UTF-8 file with a byte-order mark and Windows line endings.
//! let bytes = b"\xEF\xBB\xBFname = 1\r\nsize = 2\r\n";
//!
//! // Shown: the text exactly as stored.
//! let shown = decode(bytes)?;
//! assert_eq!(shown.detected.name(), "utf-8-bom");
//! assert_eq!(shown.line_endings, LineEndings::Crlf);
//! assert_eq!(shown.text, "name = 1\r\nsize = 2\r\n");
//!
//! // Edited: LF text in, the file's own encoding, BOM and endings out.
//! let doc = Document::decode(bytes)?;
//! assert_eq!((doc.text.as_str(), doc.style()), ("name = 1\nsize = 2\n", Style::Crlf));
//! let edited = doc.text.replace("size = 2\n", "size = 3\nmode = 4\n");
//! assert_eq!(doc.to_bytes(&edited), b"\xEF\xBB\xBFname = 1\r\nsize = 3\r\nmode = 4\r\n");
//!
//! // Mixed endings: untouched lines keep their own, a changed one takes its old line's.
//! let mixed = Document::decode(b"a\r\nb\nc\r\n")?;
//! assert_eq!(mixed.style(), Style::Mixed);
//! assert_eq!(mixed.to_bytes(&mixed.text.replace('b', "B")), b"a\r\nB\nc\r\n");
//!
//! // The diff a tool shows for the edit.
//! let (patch, stats) = diff::unified(&doc.text, &edited, "app.conf", 10_000);
//! assert!(patch.contains("-size = 2\n+size = 3\n+mode = 4\n"));
//! assert_eq!((stats.added, stats.removed), (2, 1));
//!
//! // Binary data is refused, never decoded lossily.
//! assert_eq!(decode(b"\x7fELF\x02\x00\x00").unwrap_err(), DecodeError::Binary);
//! # Ok::<(), DecodeError>(())
//! ```

pub mod diff;
mod document;
mod paged;

use encoding_rs::{Encoding, GB18030, UTF_8};
use serde::Serialize;

pub use document::{Document, Ending, Style, normalize_input};
pub use paged::{Page, PageError, PageLine, PageRequest, read_page};

/// How many leading bytes decide "binary".
pub const SNIFF_BYTES: usize = 8192;

/// A file's encoding as detected, with its byte-order mark if it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detected {
    pub encoding: &'static Encoding,
    pub bom_len: usize,
}

impl Detected {
    pub const UTF8: Detected = Detected {
        encoding: UTF_8,
        bom_len: 0,
    };
    pub const GB18030: Detected = Detected {
        encoding: GB18030,
        bom_len: 0,
    };

    /// `utf-8`, `utf-8-bom`, `utf-16le-bom`, `utf-16be-bom`, `gb18030`.
    pub fn name(&self) -> String {
        let base = self.encoding.name().to_ascii_lowercase();
        if self.bom_len > 0 {
            format!("{base}-bom")
        } else {
            base
        }
    }

    pub fn has_bom(&self) -> bool {
        self.bom_len > 0
    }
}

/// What the first bytes of a file say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniff {
    /// A byte-order mark fixes the encoding.
    Bom(Detected),
    /// NUL bytes without a UTF-16 BOM: binary data.
    Binary,
    /// No BOM, no NUL: try UTF-8, then GB18030.
    Text,
}

pub fn sniff(prefix: &[u8]) -> Sniff {
    if let Some((encoding, bom_len)) = Encoding::for_bom(prefix) {
        return Sniff::Bom(Detected { encoding, bom_len });
    }
    let head = &prefix[..prefix.len().min(SNIFF_BYTES)];
    if head.contains(&0) {
        Sniff::Binary
    } else {
        Sniff::Text
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("the file holds binary data")]
    Binary,
    #[error("the file is not valid UTF-8 (first bad byte at offset {offset}) nor GB18030")]
    Undecodable { offset: usize },
}

/// Line-ending style of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LineEndings {
    /// No line break at all.
    None,
    Lf,
    Crlf,
    /// Both `\n` and `\r\n` occur.
    Mixed,
}

impl LineEndings {
    pub fn from_counts(lf: u64, crlf: u64) -> Self {
        match (lf, crlf) {
            (0, 0) => LineEndings::None,
            (_, 0) => LineEndings::Lf,
            (0, _) => LineEndings::Crlf,
            _ => LineEndings::Mixed,
        }
    }
}

/// A whole buffer decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The text exactly as stored (BOM removed, line endings untouched).
    pub text: String,
    pub detected: Detected,
    pub line_endings: LineEndings,
}

/// `bytes` as a `&str`, or the offset of the first invalid byte (SIMD-validated).
pub fn utf8_str(bytes: &[u8]) -> Result<&str, usize> {
    simdutf8::compat::from_utf8(bytes).map_err(|e| e.valid_up_to())
}

/// `bytes` as a `String` without copying them, or the bytes back with the offset of the
/// first invalid byte.
pub fn utf8_string(bytes: Vec<u8>) -> Result<String, (Vec<u8>, usize)> {
    match simdutf8::compat::from_utf8(&bytes) {
        // SAFETY: simdutf8 has just validated exactly these bytes as UTF-8.
        Ok(_) => Ok(unsafe { String::from_utf8_unchecked(bytes) }),
        Err(e) => {
            let at = e.valid_up_to();
            Err((bytes, at))
        }
    }
}

/// Decode a whole buffer strictly: BOM first, then UTF-8, then GB18030. The text is
/// exactly as stored (BOM removed, line endings untouched). Each byte is validated once.
pub fn decode_text(bytes: &[u8]) -> Result<(String, Detected), DecodeError> {
    match sniff(bytes) {
        Sniff::Binary => Err(DecodeError::Binary),
        Sniff::Bom(detected) => {
            let body = &bytes[detected.bom_len..];
            let text = if detected.encoding == UTF_8 {
                utf8_str(body)
                    .map_err(|at| DecodeError::Undecodable {
                        offset: at + detected.bom_len,
                    })?
                    .to_owned()
            } else {
                detected
                    .encoding
                    .decode_without_bom_handling_and_without_replacement(body)
                    .ok_or_else(|| DecodeError::Undecodable {
                        offset: first_bad_offset(detected.encoding, body) + detected.bom_len,
                    })?
                    .into_owned()
            };
            Ok((text, detected))
        }
        Sniff::Text => match utf8_str(bytes) {
            Ok(text) => Ok((text.to_owned(), Detected::UTF8)),
            Err(at) => match GB18030.decode_without_bom_handling_and_without_replacement(bytes) {
                Some(text) => Ok((text.into_owned(), Detected::GB18030)),
                None => Err(DecodeError::Undecodable { offset: at }),
            },
        },
    }
}

/// [`decode_text`], plus the line-ending style.
pub fn decode(bytes: &[u8]) -> Result<Decoded, DecodeError> {
    let (text, detected) = decode_text(bytes)?;
    let crlf = memchr::memmem::find_iter(text.as_bytes(), b"\r\n").count() as u64;
    let lf = bytecount::count(text.as_bytes(), b'\n') as u64 - crlf;
    Ok(Decoded {
        line_endings: LineEndings::from_counts(lf, crlf),
        text,
        detected,
    })
}

fn first_bad_offset(encoding: &'static Encoding, bytes: &[u8]) -> usize {
    if encoding == UTF_8 {
        return std::str::from_utf8(bytes)
            .err()
            .map(|e| e.valid_up_to())
            .unwrap_or(0);
    }
    // UTF-16 with a BOM but an unpaired surrogate or an odd length: encoding_rs does
    // not say where; the start of the body is the honest answer.
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_with_and_without_bom() {
        let d = decode("héllo\n".as_bytes()).unwrap();
        assert_eq!(d.detected.name(), "utf-8");
        assert_eq!(d.text, "héllo\n");
        let d = decode(b"\xEF\xBB\xBFhi\r\n").unwrap();
        assert_eq!(d.detected.name(), "utf-8-bom");
        assert_eq!(d.text, "hi\r\n");
        assert_eq!(d.line_endings, LineEndings::Crlf);
    }

    #[test]
    fn utf16_with_bom_is_text_not_binary() {
        let mut bytes = vec![0xFF, 0xFE];
        for u in "añ\n".encode_utf16() {
            bytes.extend_from_slice(&u.to_le_bytes());
        }
        let d = decode(&bytes).unwrap();
        assert_eq!(d.detected.name(), "utf-16le-bom");
        assert_eq!(d.text, "añ\n");
    }

    #[test]
    fn gb18030_is_recognized() {
        let (bytes, _, _) = GB18030.encode("中文注释\n");
        let d = decode(&bytes).unwrap();
        assert_eq!(d.detected.name(), "gb18030");
        assert_eq!(d.text, "中文注释\n");
    }

    #[test]
    fn nul_bytes_mean_binary_and_garbage_is_undecodable() {
        assert_eq!(decode(b"\x7fELF\0\0\x01"), Err(DecodeError::Binary));
        assert!(matches!(
            decode(b"ok \xff\xff\xff"),
            Err(DecodeError::Undecodable { offset: 3 })
        ));
    }

    #[test]
    fn mixed_line_endings_are_reported() {
        assert_eq!(
            decode(b"a\r\nb\nc").unwrap().line_endings,
            LineEndings::Mixed
        );
        assert_eq!(decode(b"abc").unwrap().line_endings, LineEndings::None);
    }
}
