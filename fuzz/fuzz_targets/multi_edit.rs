//! `multi_edit`'s single-pass engine (`edit::steps::apply_steps`: one scan, a piece
//! table) against the same steps applied one by one with `edit::apply`, each on the text
//! the steps before it left, on files of every encoding and line-ending mix.
//!
//! Oracle: never a panic; both give the same text, and per step the same level, tags,
//! line and number of replacements; or both refuse at the same step with the same
//! failure; the single pass's `changes` describe old → new exactly, and its bytes decode
//! back to its text.

#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use whalebox::edit::steps::{Step, apply_steps};
use whalebox::edit::{self, Failure};
use whalebox::text::{Detected, Document, normalize_input};
use whalebox_fuzz::draw::{self, ENCODINGS};

fn check(u: &mut Unstructured) -> Result<()> {
    let enc = *u.choose(ENCODINGS)?;
    let bytes = draw::encode(&draw::text(u)?, enc);
    let doc = Document::decode(&bytes).expect("a file we encoded decodes");
    let text = doc.text.clone();

    // Searches drawn from the reference's evolving text, as a model reading the file
    // between its steps would write them.
    let n = u.int_in_range(1..=6)?;
    let mut reference = text.clone();
    let mut drawn: Vec<(String, String, bool)> = Vec::new();
    type Outcome = (String, Vec<(usize, edit::Level, Vec<edit::Tag>, usize)>);
    let mut expected: std::result::Result<Outcome, (usize, Failure)> =
        Ok((text.clone(), Vec::new()));
    for i in 0..n {
        let search = normalize_input(&draw::search(u, &reference)?);
        let replace = normalize_input(&draw::replace(u, &search)?);
        let all = u.ratio(1, 5)?;
        if let Ok((current, outcomes)) = &mut expected {
            match edit::apply(current, &search, &replace, all) {
                Ok(a) => {
                    outcomes.push((a.replacements, a.level, a.tags, a.line));
                    *current = a.text.clone();
                    reference = a.text;
                }
                Err(f) => expected = Err((i, f)),
            }
        }
        drawn.push((search, replace, all));
        if expected.is_err() {
            break;
        }
    }
    let steps: Vec<Step<'_>> = drawn
        .iter()
        .map(|(s, r, a)| Step {
            search: s,
            replace: r,
            replace_all: *a,
        })
        .collect();
    match (apply_steps(&text, &steps), expected) {
        (Ok(edited), Ok((want, outcomes))) => {
            assert_eq!(edited.text, want, "single pass and one by one differ");
            let got: Vec<_> = edited
                .steps
                .iter()
                .map(|s| (s.replacements, s.level, s.tags.clone(), s.line))
                .collect();
            assert_eq!(got, outcomes, "steps reported differently");
            let mut rebuilt = String::new();
            let mut at = 0;
            for c in &edited.changes {
                assert!(c.old.start >= at, "changes out of order");
                rebuilt.push_str(&text[at..c.old.start]);
                rebuilt.push_str(&edited.text[c.new.clone()]);
                at = c.old.end;
            }
            rebuilt.push_str(&text[at..]);
            assert_eq!(rebuilt, edited.text, "changes do not describe the edit");
            let new_bytes = doc.into_bytes(edited.text.clone(), &edited.changes);
            if doc.detected == Detected::GB18030
                && Document::decode(&new_bytes).is_ok_and(|back| back.text != edited.text)
            {
                // Not read back as written (as UTF-8, or U+E5E5 as `&#58853;`): the tools
                // refuse to write these (src/tools/edit/file.rs, reads_back).
                return Ok(());
            }
            let back = Document::decode(&new_bytes).expect("the edited file decodes");
            let bom = doc.detected == Detected::UTF8 && edited.text.starts_with('\u{feff}');
            let start = if bom { '\u{feff}'.len_utf8() } else { 0 };
            assert_eq!(
                back.text,
                edited.text[start..],
                "the bytes are not the new text: file {bytes:?}, steps {drawn:?}, new bytes {new_bytes:?}"
            );
        }
        (Err(got), Err(want)) => assert_eq!(got, want, "refused differently"),
        (got, want) => panic!(
            "single pass: {:?}; one by one: {:?}",
            got.map(|e| e.text),
            want.map(|w| w.0)
        ),
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = check(&mut Unstructured::new(data));
});
