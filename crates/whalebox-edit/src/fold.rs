//! Unicode folding for level 4: curly quotes, unicode dashes, NBSP and other odd spaces,
//! the ellipsis and zero-width characters folded to their ASCII look-alikes on both sides.
//! The folded file keeps its lines (no fold touches `\n`), and a sparse offset map leads
//! from a folded match back to the file's own bytes.

use super::{Failure, Found, Level, Tag, lines_of, relaxed};

fn fold_char(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{00B4}' => "'",
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{00AB}'
        | '\u{00BB}' => "\"",
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{FE58}' | '\u{FE63}' | '\u{FF0D}' => "-",
        '\u{00A0}'
        | '\u{1680}'
        | '\u{2000}'..='\u{200A}'
        | '\u{202F}'
        | '\u{205F}'
        | '\u{3000}' => " ",
        '\u{2026}' => "...",
        '\u{200B}' | '\u{200C}' | '\u{200D}' | '\u{2060}' | '\u{FEFF}' => "",
        _ => return None,
    })
}

/// A folded text and where its offsets lie in the original.
struct Folded {
    text: String,
    /// `(folded offset, original offset)` after every fold that changed the length.
    breaks: Vec<(usize, usize)>,
    changed: bool,
}

fn fold(s: &str) -> Folded {
    let mut text = String::with_capacity(s.len());
    let mut breaks = Vec::new();
    let mut changed = false;
    for (i, c) in s.char_indices() {
        match fold_char(c) {
            Some(rep) => {
                changed = true;
                text.push_str(rep);
                if rep.len() != c.len_utf8() {
                    breaks.push((text.len(), i + c.len_utf8()));
                }
            }
            None => text.push(c),
        }
    }
    Folded {
        text,
        breaks,
        changed,
    }
}

impl Folded {
    /// The original offset of folded offset `f`.
    fn original(&self, f: usize) -> usize {
        let idx = self.breaks.partition_point(|&(fo, _)| fo <= f);
        match idx.checked_sub(1) {
            None => f,
            Some(k) => {
                let (fo, oo) = self.breaks[k];
                oo + (f - fo)
            }
        }
    }
}

/// Level 4: relaxed whole-line matching on the folded view, then a unique folded
/// substring. `None` when folding changes nothing or finds nothing.
pub(super) fn find(text: &str, search: &str, replace: &str) -> Result<Option<Found>, Failure> {
    let folded_search = fold(search);
    let folded_text = fold(text);
    if !folded_search.changed && !folded_text.changed {
        return Ok(None);
    }
    let found = relaxed::find(
        text,
        &folded_text.text,
        &folded_search.text,
        search,
        replace,
        Level::UnicodeNormalized,
    )?;
    if let Some(mut found) = found {
        found.tags.insert(0, Tag::UnicodeNormalized);
        return Ok(Some(found));
    }
    let needle = folded_search.text.as_str();
    if needle.is_empty() {
        return Ok(None);
    }
    let hits: Vec<usize> = folded_text
        .text
        .match_indices(needle)
        .map(|(i, _)| i)
        .take(super::MAX_REPORTED + 1)
        .collect();
    match hits.as_slice() {
        [] => Ok(None),
        [at] => {
            let start = folded_text.original(*at);
            let end = folded_text.original(at + needle.len());
            if !text.is_char_boundary(start) || !text.is_char_boundary(end) {
                return Ok(None);
            }
            Ok(Some(Found::one(
                start..end,
                replace.to_string(),
                Level::UnicodeNormalized,
                vec![Tag::UnicodeNormalized],
                super::line_of(text, start),
            )))
        }
        many => {
            let mut originals = many.iter().map(|&f| folded_text.original(f));
            Err(Failure::NotUnique {
                level: Level::UnicodeNormalized,
                lines: lines_of(text, &mut originals),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_map_back_across_length_changes() {
        let f = fold("a…b—c\u{200B}d");
        assert_eq!(f.text, "a...b-cd");
        // "b" is at folded 4, original 4 ("a" + 3-byte ellipsis).
        assert_eq!(f.original(4), 4);
        // "d" is at folded 7; original: a(1) …(3) b(1) —(3) c(1) ZWSP(3) = 12.
        assert_eq!(f.original(7), 12);
    }
}
