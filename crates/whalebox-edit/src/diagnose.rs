//! Why a search was not found: anchored on the search's first non-blank line, the
//! closest region of the file and the first line where it diverges, so the model can
//! fix its search in one step instead of rereading the whole file.

/// Lines scanned for a merely similar anchor when no line equals it.
const SIMILARITY_SCAN_LINES: usize = 200_000;
const SHOW_CHARS: usize = 160;

pub(super) struct Diagnosis {
    pub message: String,
    /// 1-based first line of the closest region.
    pub line: Option<usize>,
    /// How many lines the region spans.
    pub span: usize,
}

fn show(s: &str) -> String {
    match s.char_indices().nth(SHOW_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

pub(super) fn diagnose(text: &str, search: &str) -> Diagnosis {
    let search_lines: Vec<&str> = search
        .strip_suffix('\n')
        .unwrap_or(search)
        .split('\n')
        .collect();
    let file_lines: Vec<&str> = text.split('\n').collect();
    let n = search_lines.len();
    let Some(anchor) = search_lines.iter().position(|l| !l.trim().is_empty()) else {
        return Diagnosis {
            message: "`search` holds only blank lines".into(),
            line: None,
            span: 0,
        };
    };
    let anchor_text = search_lines[anchor].trim();

    // Regions whose line at the anchor's position equals the anchor (trimmed), scored
    // by how many lines agree from the region's start.
    let mut best: Option<(usize, usize)> = None; // (start, agreeing)
    for (j, line) in file_lines.iter().enumerate() {
        if line.trim() != anchor_text || j < anchor {
            continue;
        }
        let start = j - anchor;
        let agree = (0..n)
            .take_while(|&k| {
                file_lines
                    .get(start + k)
                    .is_some_and(|f| f.trim() == search_lines[k].trim())
            })
            .count();
        if best.is_none_or(|(_, a)| agree > a) {
            best = Some((start, agree));
        }
    }
    if let Some((start, agree)) = best {
        let differs = start + agree;
        let message = match file_lines.get(differs) {
            Some(file_line) => format!(
                "closest match starts at line {}; the first {agree} lines agree; line {} differs: file has `{}`, you gave `{}`",
                start + 1,
                differs + 1,
                show(file_line),
                show(search_lines[agree]),
            ),
            None => format!(
                "closest match starts at line {}; the first {agree} lines agree, then the file ends (it has {} lines) but the search goes on with `{}`",
                start + 1,
                file_lines.len(),
                show(search_lines[agree]),
            ),
        };
        return Diagnosis {
            message,
            line: Some(start + 1),
            span: n,
        };
    }

    // No line equals the anchor: the most similar one, if any is close.
    let mut similar: Option<(usize, f64)> = None;
    for (j, line) in file_lines.iter().enumerate().take(SIMILARITY_SCAN_LINES) {
        let t = line.trim();
        if t.is_empty() || t.len() * 2 < anchor_text.len() || anchor_text.len() * 2 < t.len() {
            continue;
        }
        let score = strsim::normalized_levenshtein(t, anchor_text);
        if score >= 0.6 && similar.is_none_or(|(_, s)| score > s) {
            similar = Some((j, score));
        }
    }
    match similar {
        Some((j, _)) => Diagnosis {
            message: format!(
                "no line equals the first line of `search`; the most similar is line {}: file has `{}`, you gave `{}`",
                j + 1,
                show(file_lines[j]),
                show(search_lines[anchor]),
            ),
            line: Some((j + 1).saturating_sub(anchor).max(1)),
            span: n,
        },
        None => Diagnosis {
            message: format!(
                "no line of the file resembles the first line of `search` (`{}`)",
                show(search_lines[anchor])
            ),
            line: None,
            span: n,
        },
    }
}
