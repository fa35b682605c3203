//! Property tests of the edit path (decode → edit engine → restore → encode) on random
//! files: random lines, random per-line endings, random final newline, random encoding.
//! A single-line edit must change exactly that line's bytes and nothing else.

use proptest::prelude::*;
use whalebox::edit;
use whalebox::text::{Document, decode};

#[derive(Debug, Clone, Copy)]
enum Enc {
    Utf8,
    Utf8Bom,
    Utf16Le,
    Utf16Be,
    Gb18030,
}

fn encode(text: &str, enc: Enc) -> Vec<u8> {
    match enc {
        Enc::Utf8 => text.as_bytes().to_vec(),
        Enc::Utf8Bom => [b"\xEF\xBB\xBF".as_slice(), text.as_bytes()].concat(),
        Enc::Utf16Le | Enc::Utf16Be => {
            let little = matches!(enc, Enc::Utf16Le);
            let mut out = if little {
                vec![0xFF, 0xFE]
            } else {
                vec![0xFE, 0xFF]
            };
            for u in text.encode_utf16() {
                out.extend_from_slice(&if little {
                    u.to_le_bytes()
                } else {
                    u.to_be_bytes()
                });
            }
            out
        }
        Enc::Gb18030 => encoding_rs::GB18030.encode(text).0.into_owned(),
    }
}

/// Lines with their own terminators (`\r\n`, `\n`, lone `\r`, or none at the end).
fn raw_lines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                out.push(&text[start..=i]);
                start = i + 1;
            }
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                out.push(&text[start..i + 2]);
                i += 1;
                start = i + 1;
            }
            b'\r' => {
                out.push(&text[start..=i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

fn word() -> impl Strategy<Value = String> {
    // ASCII, Latin, CJK and symbols; never a line break.
    proptest::string::string_regex("[a-zA-Z0-9 _(){};=,.é中文字→\t]{0,24}").unwrap()
}

fn ending() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("\n"), Just("\r\n"), Just("\r")]
}

fn encoding() -> impl Strategy<Value = Enc> {
    prop_oneof![
        Just(Enc::Utf8),
        Just(Enc::Utf8Bom),
        Just(Enc::Utf16Le),
        Just(Enc::Utf16Be),
        Just(Enc::Gb18030)
    ]
}

/// A random file: unique lines `L<i>:<word>` with random endings.
fn file() -> impl Strategy<Value = (Vec<(String, &'static str)>, bool, Enc)> {
    (
        proptest::collection::vec((word(), ending()), 1..60),
        any::<bool>(),
        encoding(),
    )
        .prop_map(|(lines, final_newline, enc)| {
            let lines = lines
                .into_iter()
                .enumerate()
                .map(|(i, (w, e))| (format!("L{i}:{}", w.trim_end()), e))
                .collect();
            (lines, final_newline, enc)
        })
}

fn assemble(lines: &[(String, &str)], final_newline: bool) -> String {
    let mut text = String::new();
    for (i, (content, ending)) in lines.iter().enumerate() {
        text.push_str(content);
        if i + 1 < lines.len() || final_newline {
            text.push_str(ending);
        }
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_single_line_edit_changes_exactly_that_line(
        (lines, final_newline, enc) in file(),
        pick in any::<prop::sample::Index>(),
        new_word in word(),
    ) {
        let original = assemble(&lines, final_newline);
        let bytes = encode(&original, enc);
        let k = pick.index(lines.len());
        let doc = Document::decode(&bytes).expect("decodes");
        // `L1:` is a prefix of `L10:`, so search the whole line with its `:` marker,
        // anchored by the line break before it (or the file start).
        let search = lines[k].0.clone();
        let replace = format!("R{k}:{}", new_word.trim_end());
        prop_assume!(doc.text.matches(&search).count() == 1);
        prop_assume!(search != replace);
        let applied = edit::apply(&doc.text, &search, &replace, false).expect("applies");
        let new_bytes = doc.to_bytes(&applied.text);

        // Exactly the original file with line k's content swapped, in the same
        // encoding, BOM and endings: byte for byte.
        let mut expected_lines = lines.clone();
        expected_lines[k].0 = replace.clone();
        // A GB18030 file that is all ASCII is indistinguishable from UTF-8 (no BOM says
        // otherwise), so new characters are written in the encoding it was read as.
        let effective = match enc {
            Enc::Gb18030 if doc.detected.encoding == encoding_rs::UTF_8 => Enc::Utf8,
            other => other,
        };
        let expected = encode(&assemble(&expected_lines, final_newline), effective);
        prop_assert_eq!(&new_bytes, &expected);

        // And seen line by line: every other line is untouched.
        let old_text = decode(&bytes).unwrap().text;
        let new_text = decode(&new_bytes).unwrap().text;
        let old_lines = raw_lines(&old_text);
        let new_lines = raw_lines(&new_text);
        prop_assert_eq!(old_lines.len(), new_lines.len());
        for (i, (o, n)) in old_lines.iter().zip(&new_lines).enumerate() {
            if i != k {
                prop_assert_eq!(o, n, "line {} untouched", i);
            }
        }
    }

    #[test]
    fn unchanged_text_round_trips_to_the_same_bytes((lines, final_newline, enc) in file()) {
        let bytes = encode(&assemble(&lines, final_newline), enc);
        let doc = Document::decode(&bytes).unwrap();
        prop_assert_eq!(doc.to_bytes(&doc.text), bytes);
    }

    #[test]
    fn a_relaxed_edit_touches_only_the_matched_line(
        (lines, final_newline, enc) in file(),
        pick in any::<prop::sample::Index>(),
        pad in "[ \t]{1,3}",
    ) {
        // The file's line has trailing blanks the model's search leaves out.
        let k = pick.index(lines.len());
        let mut lines = lines;
        let bare = lines[k].0.clone();
        lines[k].0 = format!("{bare}{pad}");
        let bytes = encode(&assemble(&lines, final_newline), enc);
        let doc = Document::decode(&bytes).unwrap();
        prop_assume!(doc.text.matches(&bare).count() == 1);
        let search = format!("{bare}\n");
        prop_assume!(!doc.text.contains(&search));
        let applied = edit::apply(&doc.text, &search, "EDITED\n", false);
        let Ok(applied) = applied else {
            // Two lines equal after trimming: the engine must refuse, never guess.
            let refused = matches!(applied, Err(edit::Failure::NotUnique { .. }));
            prop_assert!(refused, "unexpected failure: {:?}", applied);
            return Ok(());
        };
        let new_bytes = doc.to_bytes(&applied.text);
        let old_text = decode(&bytes).unwrap().text;
        let new_text = decode(&new_bytes).unwrap().text;
        let (old_lines, new_lines) = (raw_lines(&old_text), raw_lines(&new_text));
        prop_assert_eq!(old_lines.len(), new_lines.len());
        for (i, (o, n)) in old_lines.iter().zip(&new_lines).enumerate() {
            if i != k {
                prop_assert_eq!(o, n, "line {} untouched", i);
            } else {
                prop_assert!(n.starts_with("EDITED"), "{:?}", n);
            }
        }
    }
}

/// An indentation style: a tab, or a number of spaces per level.
fn render(depth: usize, unit: usize) -> String {
    if unit == 0 {
        "\t".repeat(depth)
    } else {
        " ".repeat(depth * unit)
    }
}

/// A block of lines as depths (starting at 0, never more than one level deeper than the
/// line before), and the replacement: every line kept, its text changed, or a new line
/// inserted after it at a depth the same rule allows.
fn block() -> impl Strategy<Value = (Vec<usize>, Vec<(u8, usize)>)> {
    prop::collection::vec(0usize..3, 2..9).prop_flat_map(|steps| {
        let mut depths = vec![0usize];
        for s in &steps[1..] {
            let prev = *depths.last().unwrap();
            depths.push(match s {
                0 => prev + 1,
                1 => prev,
                _ => prev.saturating_sub(1),
            });
        }
        let n = depths.len();
        (Just(depths), prop::collection::vec((0u8..3, 0usize..3), n))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, max_global_rejects: 100_000, ..ProptestConfig::default() })]

    #[test]
    fn changed_lines_take_the_files_indentation(
        (depths, plan) in block(),
        file_unit in prop::sample::select(vec![0usize, 2, 4]),
        model_unit in prop::sample::select(vec![0usize, 2, 4]),
        file_base in 0usize..3,
        model_base in 0usize..3,
    ) {
        let file_line = |d: usize, body: &str| format!("{}{body}", render(file_base + d, file_unit));
        let model_line = |d: usize, body: &str| format!("{}{body}", render(model_base + d, model_unit));
        let bodies: Vec<String> = (0..depths.len()).map(|i| format!("line_{i}()")).collect();
        let file_block: Vec<String> = depths.iter().zip(&bodies).map(|(d, b)| file_line(*d, b)).collect();
        // The file shows its unit elsewhere too, as real files do.
        let probe: String = [0, 1, 2, 1, 0, 1, 0].iter().map(|d| file_line(*d, "probe()\n")).collect();
        let text = format!("{probe}header()\n{}\nfooter()\n", file_block.join("\n"));
        let search: Vec<String> = depths.iter().zip(&bodies).map(|(d, b)| model_line(*d, b)).collect();
        let (mut replace, mut expected) = (Vec::new(), Vec::new());
        for (i, (&d, &(what, deeper))) in depths.iter().zip(&plan).enumerate() {
            let body = if what == 1 { format!("changed_{i}()") } else { bodies[i].clone() };
            replace.push(model_line(d, &body));
            expected.push(file_line(d, &body));
            if what == 2 {
                // A new line: at most one level deeper than this one, never above the block.
                let nd = (d + deeper).saturating_sub(1).min(d + 1);
                let body = format!("inserted_{i}()");
                replace.push(model_line(nd, &body));
                expected.push(file_line(nd, &body));
            }
        }
        prop_assume!(search != replace);
        // An exact match is taken as written; the rule is for blocks found by relaxing
        // indentation.
        prop_assume!(!text.contains(&search.join("\n")));
        let applied = edit::apply(&text, &search.join("\n"), &replace.join("\n"), false)
            .expect("the block is found");
        let want = format!("{probe}header()\n{}\nfooter()\n", expected.join("\n"));
        prop_assert_eq!(&applied.text, &want);
        // A file indented with tabs never gains a line indented with spaces, and the
        // other way round.
        let mixed = applied.text.lines().any(|l| {
            let lead = &l[..l.len() - l.trim_start().len()];
            if file_unit == 0 { lead.contains(' ') } else { lead.contains('\t') }
        });
        prop_assert!(!mixed);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, max_global_rejects: 100_000, ..ProptestConfig::default() })]

    /// The model wrote the whole block at one depth, the file has it at several (its
    /// depths contradict): a changed line takes the indentation of the file's line it
    /// replaces, a line inserted between two takes the deeper one's when that one opens
    /// a block under the other (else the one it follows), and every other byte is kept.
    #[test]
    fn a_block_written_at_one_depth_is_placed_line_by_line(
        (depths, plan) in block(),
        file_unit in prop::sample::select(vec![0usize, 2, 4]),
        file_base in 0usize..3,
        model_indent in prop::sample::select(vec!["", "  ", "    ", "\t"]),
    ) {
        let file_line = |d: usize, body: &str| format!("{}{body}", render(file_base + d, file_unit));
        let bodies: Vec<String> = (0..depths.len()).map(|i| format!("call_{i}(a, b);")).collect();
        let file_block: Vec<String> = depths.iter().zip(&bodies).map(|(d, b)| file_line(*d, b)).collect();
        let probe: String = [0, 1, 2, 1, 0, 1, 0].iter().map(|d| file_line(*d, "probe()\n")).collect();
        let text = format!("{probe}header()\n{}\nfooter()\n", file_block.join("\n"));
        let search: Vec<String> = bodies.iter().map(|b| format!("{model_indent}{b}")).collect();
        let (mut replace, mut expected) = (Vec::new(), Vec::new());
        for (i, (&d, &(what, also))) in depths.iter().zip(&plan).enumerate() {
            let body = if what == 1 { format!("call_{i}(a, b, c);") } else { bodies[i].clone() };
            replace.push(format!("{model_indent}{body}"));
            expected.push(if what == 1 { file_line(d, &body) } else { file_block[i].clone() });
            if what == 2 || also == 2 {
                let nd = match depths.get(i + 1) {
                    Some(&next) if next > d => next,
                    _ => d,
                };
                let body = format!("extra_{i}();");
                replace.push(format!("{model_indent}{body}"));
                expected.push(file_line(nd, &body));
            }
        }
        prop_assume!(search != replace);
        prop_assume!(!text.contains(&search.join("\n")));
        let applied = edit::apply(&text, &search.join("\n"), &replace.join("\n"), false)
            .expect("the block is found");
        let want = format!("{probe}header()\n{}\nfooter()\n", expected.join("\n"));
        prop_assert_eq!(&applied.text, &want);
    }
}
