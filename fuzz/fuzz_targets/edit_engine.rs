//! The edit path of `edit`, without the disk: file bytes decoded into a document (every
//! supported encoding, LF, CRLF, CR and mixed endings, or raw bytes), a search drawn
//! partly from the file (whole lines, fragments, misquoted the ways models misquote) and a
//! replacement, through the engine, and back to bytes.
//!
//! Oracle: never a panic; `changes` describe old → new exactly; an exact match replaces
//! exactly the occurrences (`str::replace`), and a search found twice without
//! `replace_all` changes nothing (`NotUnique`); a fuzzy level acts only where the search
//! has no exact occurrence and on one match only; the new bytes decode to the new text
//! in the same encoding (a new text that starts with U+FEFF in a BOM-less UTF-8 file
//! is written as a BOM); every line before the first changed line and after the last
//! keeps its bytes and its own ending; a file with one ending style keeps it throughout.

#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use whalebox::edit::steps::{Step, apply_steps};
use whalebox::edit::{Failure, Level};
use whalebox::text::{Detected, Document, Style, decode_text, normalize_input};
use whalebox_fuzz::draw::{self, ENCODINGS};

/// Lines with their own terminators (`\r\n`, `\n`, lone `\r`, or none at the end).
fn raw_lines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        let end = match bytes[i] {
            b'\n' => Some(i + 1),
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => Some(i + 2),
            b'\r' => Some(i + 1),
            _ => None,
        };
        if let Some(end) = end {
            out.push(&text[start..end]);
            start = end;
            i = end;
        } else {
            i += 1;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

fn check(u: &mut Unstructured) -> Result<()> {
    let (bytes, enc) = if u.ratio(1, 10)? {
        (u.arbitrary::<Vec<u8>>()?, None)
    } else {
        let enc = *u.choose(ENCODINGS)?;
        (draw::encode(&draw::text(u)?, enc), Some(enc))
    };
    let Ok(doc) = Document::decode(&bytes) else {
        assert!(enc.is_none(), "a file we encoded does not decode");
        return Ok(());
    };
    let (stored, _) = decode_text(&bytes).expect("decodes as the document did");
    let old = doc.text.clone();
    let search = normalize_input(&draw::search(u, &old)?);
    let replace = normalize_input(&draw::replace(u, &search)?);
    let replace_all = u.ratio(1, 5)?;
    let step = Step {
        search: &search,
        replace: &replace,
        replace_all,
    };
    let exact = if search.is_empty() {
        0
    } else {
        old.matches(search.as_str()).count()
    };

    let edited = match apply_steps(&old, &[step]) {
        Ok(e) => e,
        Err((_, failure)) => {
            if exact >= 2 && !replace_all && search != replace {
                assert!(
                    matches!(
                        failure,
                        Failure::NotUnique {
                            level: Level::Exact,
                            ..
                        }
                    ),
                    "twice exactly, no replace_all: {failure:?}"
                );
            }
            if exact >= 1 && (exact == 1 || replace_all) && search != replace {
                panic!("{exact} exact occurrence(s), refused: {failure:?}");
            }
            return Ok(());
        }
    };
    let outcome = &edited.steps[0];
    let new = &edited.text;

    // The changes are exact.
    let mut rebuilt = String::new();
    let mut at = 0;
    for c in &edited.changes {
        assert!(c.old.start >= at, "changes out of order");
        rebuilt.push_str(&old[at..c.old.start]);
        rebuilt.push_str(&new[c.new.clone()]);
        at = c.old.end;
    }
    rebuilt.push_str(&old[at..]);
    assert_eq!(&rebuilt, new, "changes do not describe the edit");

    // Exact: the occurrences, all of them or the only one; fuzzy: one match, where
    // there is no exact occurrence.
    if outcome.level == Level::Exact {
        assert!(exact >= 1);
        if replace_all {
            assert_eq!(*new, old.replace(search.as_str(), &replace));
        } else {
            assert_eq!(exact, 1, "a non-unique exact match was edited");
            assert_eq!(*new, old.replacen(search.as_str(), &replace, 1));
        }
        assert_eq!(outcome.replacements, exact);
    } else {
        assert_eq!(
            exact, 0,
            "a fuzzy level acted though the search occurs exactly"
        );
        assert_eq!(
            outcome.replacements, 1,
            "a fuzzy level acted on several matches"
        );
    }

    // Back to bytes: same encoding, the new text, untouched lines byte for byte.
    let new_bytes = doc.into_bytes(edited.text.clone(), &edited.changes);
    if doc.detected == Detected::GB18030
        && Document::decode(&new_bytes).is_ok_and(|back| back.text != *new)
    {
        // Not read back as written (as UTF-8, or U+E5E5 as `&#58853;`): the tools
        // refuse to write these (src/tools/edit/file.rs, reads_back).
        return Ok(());
    }
    let back = Document::decode(&new_bytes).expect("the edited file decodes");
    if doc.detected == Detected::UTF8 && new.starts_with('\u{feff}') {
        // A BOM-less UTF-8 file whose new text starts with U+FEFF: its bytes are a BOM,
        // which is how every reader takes them (and what a model writing one means).
        assert_eq!(back.text, new['\u{feff}'.len_utf8()..]);
        return Ok(());
    }
    assert_eq!(
        &back.text, new,
        "the bytes written are not the new text: file {bytes:?}, search {search:?}, replace {replace:?}, new bytes {new_bytes:?}"
    );
    if doc.detected.encoding != encoding_rs::GB18030 {
        assert_eq!(back.detected, doc.detected, "the encoding changed");
    }
    let (written, _) = decode_text(&new_bytes).expect("decodes");
    let (old_lines, new_lines) = (raw_lines(&stored), raw_lines(&written));
    let Some(first) = edited.changes.first() else {
        assert_eq!(new_bytes, bytes, "no change, yet other bytes");
        return Ok(());
    };
    let last = edited.changes.last().expect("non-empty");
    // Lines wholly before the first change, and wholly after the last one.
    let before = old[..first.old.start].matches('\n').count();
    // (A line is after the edit only where both texts start it after their change: a
    // replacement ending in "\n    " indents the next line, which is then changed.)
    let whole_after = |text: &str, end: usize| {
        let suffix = &text[end..];
        let starts_line = end == 0 || text[..end].ends_with('\n');
        suffix.split_inclusive('\n').count() - usize::from(!starts_line && !suffix.is_empty())
    };
    let after = whole_after(&old, last.old.end).min(whole_after(new, last.new.end));
    assert!(
        before + after <= old_lines.len(),
        "{before} + {after} lines of {}",
        old_lines.len()
    );
    assert!(
        before + after <= new_lines.len(),
        "the edit removed untouched lines: {before} + {after} of {}",
        new_lines.len()
    );
    // Every line outside the change keeps its bytes, its line break included.
    assert_eq!(
        &old_lines[..before],
        &new_lines[..before],
        "a line before the edit changed: file {bytes:?}, search {search:?}, replace {replace:?}, all {replace_all}, level {:?}",
        outcome.level
    );
    let (old_after, new_after) = (old_lines.len() - after, new_lines.len() - after);
    // But an empty LF line brought right after a CR line ends in CRLF
    // (Document::restore_endings), or the two would read back as one CRLF.
    let merged = after > 0
        && old_lines[old_after] == "\n"
        && new_lines[new_after] == "\r\n"
        && new_after > 0
        && new_lines[new_after - 1].ends_with('\r');
    let skip = usize::from(merged);
    assert_eq!(
        &old_lines[old_after + skip..],
        &new_lines[new_after + skip..],
        "a line after the edit changed: file {bytes:?}, search {search:?}, replace {replace:?}, all {replace_all}, level {:?}, changes {:?}",
        outcome.level,
        edited.changes
    );
    // One style in, the same style out.
    let wanted = match doc.style() {
        Style::Lf => Some("\n"),
        Style::Crlf => Some("\r\n"),
        Style::Cr => Some("\r"),
        Style::None | Style::Mixed => None,
    };
    if let Some(wanted) = wanted {
        for l in &new_lines {
            let ending = if l.ends_with("\r\n") {
                Some("\r\n")
            } else if l.ends_with('\n') {
                Some("\n")
            } else if l.ends_with('\r') {
                Some("\r")
            } else {
                None
            };
            assert!(
                ending.is_none_or(|e| e == wanted),
                "a line lost the file's ending: {l:?}"
            );
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = check(&mut Unstructured::new(data));
});
