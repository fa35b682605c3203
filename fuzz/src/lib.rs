//! What several fuzz targets share: a scratch workspace and a registry built from a
//! profile in it, made once per process (libFuzzer runs every input in one process).

use std::path::PathBuf;
use std::sync::Arc;

use whalebox::core::Registry;
use whalebox::profile::Profile;
use whalebox::tools::{Env, Session};

/// A fresh, empty directory under the system's temporary directory, for this process.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("whalebox-fuzz-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// The registry and session of `profile` (a profile's text, `workspace` left out: the
/// scratch directory `name` is the workspace), as `whalebox call` builds them.
pub fn registry(name: &str, profile: &str) -> (Registry, Arc<Env>) {
    let ws = scratch(name);
    let profile = Profile::parse(profile, None, &ws, Some(&ws)).expect("the fuzz profile parses");
    whalebox::tools::build_session(profile, Session::OneShot).expect("the fuzz registry builds")
}

/// Generators for the edit targets: files and search texts drawn from fuzz input.
pub mod draw {
    use libfuzzer_sys::arbitrary::{Result, Unstructured};

    /// The encodings the edit path reads and writes back.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Enc {
        Utf8,
        Utf8Bom,
        Utf16Le,
        Utf16Be,
        Gb18030,
    }

    pub const ENCODINGS: &[Enc] = &[
        Enc::Utf8,
        Enc::Utf8Bom,
        Enc::Utf16Le,
        Enc::Utf16Be,
        Enc::Gb18030,
    ];

    /// `text` (with its real line endings) stored in `enc`.
    pub fn encode(text: &str, enc: Enc) -> Vec<u8> {
        match enc {
            Enc::Utf8 => text.as_bytes().to_vec(),
            Enc::Utf8Bom => [b"\xEF\xBB\xBF".as_slice(), text.as_bytes()].concat(),
            Enc::Utf16Le | Enc::Utf16Be => {
                let little = enc == Enc::Utf16Le;
                let mut out = if little {
                    vec![0xFF, 0xFE]
                } else {
                    vec![0xFE, 0xFF]
                };
                for unit in text.encode_utf16() {
                    out.extend_from_slice(&if little {
                        unit.to_le_bytes()
                    } else {
                        unit.to_be_bytes()
                    });
                }
                out
            }
            Enc::Gb18030 => encoding_rs::GB18030.encode(text).0.into_owned(),
        }
    }

    /// Pieces of code-like text: indentation in spaces and tabs, trailing blanks, quotes
    /// (curly ones too), dashes, escapes, non-ASCII, CR inside a line.
    const PIECES: &[&str] = &[
        "a",
        "b",
        "ab",
        "fn f() {",
        "}",
        "    ",
        "  ",
        "\t",
        " ",
        "x = 1;",
        "\"s\"",
        "'c'",
        "\u{201c}q\u{201d}",
        "\u{2018}",
        "\u{2014}",
        "\u{a0}",
        "\\n",
        "\\t",
        "\\\"",
        "é",
        "中文",
        "let y = 2;",
        "return",
        "  ",
        "//",
        "#",
        "\u{feff}",
        "\u{3000}",
        "a\u{301}",
    ];
    const ENDINGS: &[&str] = &["\n", "\r\n", "\r", "\n", "\r\n"];

    /// A line's content (no line break in it).
    pub fn line(u: &mut Unstructured) -> Result<String> {
        let mut s = String::new();
        for _ in 0..u.int_in_range(0..=5)? {
            if u.ratio(1, 6)? {
                let c: char = u.arbitrary()?;
                if c != '\n' && c != '\r' && c != '\0' {
                    s.push(c);
                }
            } else {
                s.push_str(u.choose(PIECES)?);
            }
        }
        Ok(s)
    }

    /// A text with per-line endings: uniform (LF, CRLF or CR) or mixed, with or without a
    /// final line break.
    pub fn text(u: &mut Unstructured) -> Result<String> {
        let n = u.int_in_range(0..=14)?;
        let uniform: Option<&str> = if u.ratio(2, 3)? {
            Some(u.choose(ENDINGS)?)
        } else {
            None
        };
        let mut out = String::new();
        for i in 0..n {
            out.push_str(&line(u)?);
            if i + 1 < n || u.arbitrary()? {
                out.push_str(match uniform {
                    Some(e) => e,
                    None => u.choose(ENDINGS)?,
                });
            }
        }
        Ok(out)
    }

    /// A search text: mostly a piece of `text` (LF-normalized), sometimes reshaped the
    /// way models misquote (indentation changed, trailing blanks dropped, line breaks
    /// written as `\n`, quotes curled), sometimes invented.
    pub fn search(u: &mut Unstructured, text: &str) -> Result<String> {
        let chars: Vec<char> = text.chars().collect();
        if chars.is_empty() || u.ratio(1, 5)? {
            let mut s = line(u)?;
            if u.arbitrary()? {
                s.push('\n');
                s.push_str(&line(u)?);
            }
            return Ok(s);
        }
        let start = u.choose_index(chars.len())?;
        let len = u.int_in_range(1..=40)?;
        let end = (start + len).min(chars.len());
        let mut s: String = chars[start..end].iter().collect();
        if u.ratio(1, 3)? {
            // Whole lines rather than a fragment.
            let from = text[..text.char_indices().nth(start).map_or(0, |(i, _)| i)]
                .rfind('\n')
                .map_or(0, |i| i + 1);
            let rest = &text[from..];
            let lines = u.int_in_range(1..=4)?;
            s = rest.split_inclusive('\n').take(lines).collect();
            if u.arbitrary()? {
                s = s.trim_end_matches('\n').to_string();
            }
        }
        match u.int_in_range(0..=9)? {
            0 => {
                s = s
                    .lines()
                    .map(str::trim_start)
                    .collect::<Vec<_>>()
                    .join("\n")
            }
            1 => s = s.lines().map(str::trim_end).collect::<Vec<_>>().join("\n"),
            2 => {
                s = s
                    .lines()
                    .map(|l| format!("  {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
            3 => s = s.replace('\n', "\\n").replace('\t', "\\t"),
            4 => s = s.replace('"', "\u{201c}").replace('-', "\u{2014}"),
            5 => s = s.replace("\n", "\r\n"),
            _ => {}
        }
        Ok(s)
    }

    /// A replacement: sometimes the search changed a little, sometimes anything.
    pub fn replace(u: &mut Unstructured, search: &str) -> Result<String> {
        Ok(match u.int_in_range(0..=4)? {
            0 => String::new(),
            1 => format!("{search}{}", line(u)?),
            2 => search.replacen('a', "A", 1),
            3 => search.replace('\n', "\n    "),
            _ => {
                let mut s = line(u)?;
                if u.arbitrary()? {
                    s.push('\n');
                    s.push_str(&line(u)?);
                }
                s
            }
        })
    }
}
