//! The Envelope: the one shape every tool call answers with, whatever the tool or the
//! transport. `text` is what the model reads, `data` is structured detail for programs,
//! `repairs` lists every change made to the input before it was accepted.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::repair::Repair;

/// Result codes: a closed set. `ok` for success, every other code is an error whose
/// `text` ends with the next step to take. Later tool groups add their own codes here,
/// so the full set stays documented in one place (and in the manual: docs/src/tools/answers.md).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Code {
    /// The call succeeded.
    Ok,
    /// The arguments do not fit the tool's schema (after repairs), or make no sense.
    InvalidInput,
    /// No tool of that name is enabled.
    UnknownTool,
    /// The path is outside what the profile allows for this access.
    PathDenied,
    /// The file, directory or skill does not exist.
    NotFound,
    /// A directory was given where a file is needed.
    IsDirectory,
    /// The file holds binary data; it is never dumped as text.
    BinaryFile,
    /// The file is text in no encoding whalebox can decode without loss.
    Undecodable,
    /// The input or the file is beyond a size limit.
    TooLarge,
    /// The client cancelled the call before it finished.
    Cancelled,
    /// edit/multi_edit: the search text is not in the file (the text says where it diverges).
    SearchNotFound,
    /// edit/multi_edit: the search text is in the file more than once.
    SearchNotUnique,
    /// The file changed on disk between reading it and writing it; nothing was written.
    WriteConflict,
    /// write: the file was not read in this session, or changed since; nothing was written.
    StaleFile,
    /// shell: no task with that id in this session.
    TaskNotFound,
    /// shell: the profile's cap on live tasks is reached.
    TaskLimit,
    /// An operation did not finish within its bound.
    Timeout,
    /// The request cannot be carried out this way (e.g. arrow keys to a pipe task).
    Unsupported,
    /// shell: the exec policy refused a program the command ran (the rule and its
    /// justification are in the result).
    DeniedByPolicy,
    /// shell: the policy asks a person about a program and nobody could answer.
    ApprovalNeeded,
    /// web: the URL's scheme, host, port or address is refused by the profile's rules
    /// (the text names the rule and how to allow it).
    UrlDenied,
    /// web: the server answered with a status of 400 or more.
    HttpError,
    /// web: DNS, connection, TLS or protocol failure, or the search backends refused.
    NetworkError,
    /// mcp: the upstream tool answered with `isError` (its text is in the result).
    UpstreamError,
    /// mcp: the upstream server failed to start, was refused by the policy, or crashed.
    UpstreamUnavailable,
    /// request_user_input: the person declined to answer.
    Declined,
    /// The 2026-07-28 lifecycle: the call waits for a person's answer (an MCP
    /// `input_required` result, never seen by a model).
    InputRequired,
    /// The disk (or the user's quota on it) is full: ENOSPC, EDQUOT. The machine's
    /// state, not a bug; what the call would have changed was left as it was.
    DiskFull,
    /// The device or file system failed (EIO) or is read-only (EROFS).
    IoError,
    /// whalebox or the machine ran out of processes, memory or file descriptors
    /// (EAGAIN from fork, ENOMEM, EMFILE, ENFILE).
    OutOfResources,
    /// A bug or an unexpected failure inside whalebox.
    Internal,
}

impl Code {
    /// Every code, for documentation and for tests that each is reachable.
    pub const ALL: &'static [Code] = &[
        Code::Ok,
        Code::InvalidInput,
        Code::UnknownTool,
        Code::PathDenied,
        Code::NotFound,
        Code::IsDirectory,
        Code::BinaryFile,
        Code::Undecodable,
        Code::TooLarge,
        Code::Cancelled,
        Code::SearchNotFound,
        Code::SearchNotUnique,
        Code::WriteConflict,
        Code::StaleFile,
        Code::TaskNotFound,
        Code::TaskLimit,
        Code::Timeout,
        Code::Unsupported,
        Code::DeniedByPolicy,
        Code::ApprovalNeeded,
        Code::UrlDenied,
        Code::HttpError,
        Code::NetworkError,
        Code::UpstreamError,
        Code::UpstreamUnavailable,
        Code::Declined,
        Code::InputRequired,
        Code::DiskFull,
        Code::IoError,
        Code::OutOfResources,
        Code::Internal,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Code::Ok => "ok",
            Code::InvalidInput => "invalid_input",
            Code::UnknownTool => "unknown_tool",
            Code::PathDenied => "path_denied",
            Code::NotFound => "not_found",
            Code::IsDirectory => "is_directory",
            Code::BinaryFile => "binary_file",
            Code::Undecodable => "undecodable",
            Code::TooLarge => "too_large",
            Code::Cancelled => "cancelled",
            Code::SearchNotFound => "search_not_found",
            Code::SearchNotUnique => "search_not_unique",
            Code::WriteConflict => "write_conflict",
            Code::StaleFile => "stale_file",
            Code::TaskNotFound => "task_not_found",
            Code::TaskLimit => "task_limit",
            Code::Timeout => "timeout",
            Code::Unsupported => "unsupported",
            Code::DeniedByPolicy => "denied_by_policy",
            Code::ApprovalNeeded => "approval_needed",
            Code::UrlDenied => "url_denied",
            Code::HttpError => "http_error",
            Code::NetworkError => "network_error",
            Code::UpstreamError => "upstream_error",
            Code::UpstreamUnavailable => "upstream_unavailable",
            Code::Declined => "declined",
            Code::InputRequired => "input_required",
            Code::DiskFull => "disk_full",
            Code::IoError => "io_error",
            Code::OutOfResources => "out_of_resources",
            Code::Internal => "internal",
        }
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one tool call answers.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Envelope {
    pub ok: bool,
    pub code: Code,
    pub text: String,
    pub data: Value,
    pub repairs: Vec<Repair>,
}

impl Envelope {
    pub fn success(text: String, data: Value, repairs: Vec<Repair>) -> Self {
        Envelope {
            ok: true,
            code: Code::Ok,
            text,
            data,
            repairs,
        }
    }

    /// An error envelope. The text always ends with the next step, and `data.next_step`
    /// carries it separately for programs.
    pub fn error(code: Code, message: &str, next_step: &str, data: Value) -> Self {
        let mut data = match data {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                let mut map = Map::new();
                map.insert("detail".into(), other);
                map
            }
        };
        data.insert("next_step".into(), Value::String(next_step.to_string()));
        let text = if next_step.is_empty() {
            message.to_string()
        } else {
            format!("{message}\nNext step: {next_step}")
        };
        Envelope {
            ok: false,
            code,
            text,
            data: Value::Object(data),
            repairs: Vec::new(),
        }
    }

    /// Cap `text` at `max_chars` characters, keeping head and tail around a visible
    /// marker; the number of characters cut is also recorded in `data.truncated_chars`.
    pub fn capped(mut self, max_chars: usize) -> Self {
        if let Some((capped, cut)) = cap_text(&self.text, max_chars) {
            self.text = capped;
            if let Value::Object(map) = &mut self.data {
                map.insert("truncated_chars".into(), Value::from(cut));
            }
        }
        self
    }
}

/// Keep the head and tail of `text` so that the result has at most `max_chars`
/// characters (Unicode scalar values) including the marker. Returns `None` when the text
/// already fits. Cuts snap to a nearby line break so lines are not split mid-way when
/// that costs little.
pub fn cap_text(text: &str, max_chars: usize) -> Option<(String, usize)> {
    let total = text.chars().count();
    if total <= max_chars {
        return None;
    }
    // The marker's own length depends on the count; reserve generously.
    let reserve = 48;
    let budget = max_chars.saturating_sub(reserve).max(2);
    let head_chars = budget * 6 / 10;
    let tail_chars = budget - head_chars;

    let head_end = byte_index_of_char(text, head_chars);
    let tail_start = byte_index_of_char(text, total - tail_chars);
    // Snap the head back to the last newline and the tail forward past the next one,
    // when that newline is close (within a fifth of each part).
    let head_end = match text[..head_end].rfind('\n') {
        Some(nl) if head_end - nl <= head_chars / 5 + 1 => nl + 1,
        _ => head_end,
    };
    let tail_start = match text[tail_start..].find('\n') {
        Some(nl) if nl <= tail_chars / 5 + 1 => tail_start + nl + 1,
        _ => tail_start,
    };
    let head = &text[..head_end];
    let tail = &text[tail_start..];
    let cut = total - head.chars().count() - tail.chars().count();
    let sep_before = if head.ends_with('\n') || head.is_empty() {
        ""
    } else {
        "\n"
    };
    let sep_after = if tail.starts_with('\n') || tail.is_empty() {
        ""
    } else {
        "\n"
    };
    Some((
        format!("{head}{sep_before}… {cut} chars truncated …{sep_after}{tail}"),
        cut,
    ))
}

fn byte_index_of_char(text: &str, char_index: usize) -> usize {
    text.char_indices()
        .nth(char_index)
        .map(|(i, _)| i)
        .unwrap_or(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_not_capped() {
        assert!(cap_text("hello", 10).is_none());
    }

    #[test]
    fn capped_text_keeps_head_and_tail_with_marker() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let (capped, cut) = cap_text(&text, 500).unwrap();
        assert!(capped.chars().count() <= 500, "{}", capped.chars().count());
        assert!(capped.starts_with("line 0\n"));
        assert!(capped.ends_with("line 999\n"));
        assert!(capped.contains(&format!("… {cut} chars truncated …")));
        assert_eq!(
            capped.chars().count() - format!("… {cut} chars truncated …\n").chars().count(),
            text.chars().count() - cut
        );
    }

    #[test]
    fn capping_never_splits_a_multibyte_character() {
        let text = "é".repeat(10_000);
        let (capped, _) = cap_text(&text, 300).unwrap();
        assert!(capped.chars().count() <= 300);
        assert!(capped.starts_with('é') && capped.ends_with('é'));
    }

    #[test]
    fn error_text_ends_with_next_step() {
        let e = Envelope::error(
            Code::NotFound,
            "no such file",
            "list the directory",
            Value::Null,
        );
        assert!(e.text.ends_with("Next step: list the directory"));
        assert_eq!(e.data["next_step"], "list the directory");
        assert!(!e.ok);
    }
}
