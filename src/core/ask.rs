//! Asking a person from inside a tool call: a [`Form`] (a message and a flat JSON Schema,
//! the shape MCP elicitation accepts) put through whatever this call can reach, its
//! [`Asking`]:
//! - [`Asking::Now`]: someone answers while the call waits (`elicitation/create` on the
//!   classic lifecycle, the terminal for `whalebox call`);
//! - [`Asking::Retry`]: the 2026-07-28 lifecycle, where a server cannot send requests of
//!   its own: the tool answers [`input_required`] with the form and a continuation state,
//!   the MCP adapter turns that into an `input_required` result, and the client's retry
//!   of the same call arrives with the answer in [`Resumed`];
//! - [`Asking::Nobody`]: no way to reach a person here, and why.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::envelope::Code;
use super::output::{BoxFuture, ToolError};

/// What to put to the person.
#[derive(Debug, Clone)]
pub struct Form {
    pub message: String,
    /// A JSON Schema object whose properties are strings, enums or arrays of enums.
    pub schema: Value,
}

/// What came back.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
    Timeout,
    /// Declined or cancelled faster than anyone can read a question: the client
    /// dismissed it itself, as headless clients do (`claude -p` cancels, `codex exec`
    /// declines, at once). Nobody refused anything.
    Unread {
        /// "declined" or "cancelled".
        action: &'static str,
        after_ms: u64,
    },
}

/// A person takes longer than this to read a question and answer it.
pub const READING_TIME: Duration = Duration::from_millis(1000);

impl Answer {
    /// A decline or cancel that came within `READING_TIME` of asking becomes
    /// [`Answer::Unread`].
    pub fn judged(self, after: Duration) -> Answer {
        let action = match self {
            Answer::Decline => "declined",
            Answer::Cancel => "cancelled",
            other => return other,
        };
        if after >= READING_TIME {
            return self;
        }
        Answer::Unread {
            action,
            after_ms: after.as_millis() as u64,
        }
    }

    /// For an [`Answer::Unread`], what to tell the model: nobody answered.
    pub fn unread_reason(&self) -> Option<String> {
        match self {
            Answer::Unread { action, after_ms } => Some(format!(
                "no one answered: the client {action} the question itself {after_ms} ms after it \
                 was asked, as a client with nobody at it (a headless run) does"
            )),
            _ => None,
        }
    }

    /// From an MCP `ElicitResult` (`{action, content}`).
    pub fn from_elicit_result(result: &Value) -> Answer {
        match result["action"].as_str() {
            Some("accept") => {
                Answer::Accept(result["content"].as_object().cloned().unwrap_or_default())
            }
            Some("decline") => Answer::Decline,
            _ => Answer::Cancel,
        }
    }
}

/// Puts a form to a person and waits at most the given time.
pub type Asker = Arc<dyn Fn(Form, Duration) -> BoxFuture<'static, Answer> + Send + Sync>;

/// The retry that carries the person's answer, with what the tool asked to keep.
#[derive(Debug, Clone)]
pub struct Resumed {
    pub state: Value,
    pub answer: Answer,
}

/// How this call can reach a person.
#[derive(Clone)]
pub enum Asking {
    Nobody(String),
    Now(Asker),
    /// The 2026-07-28 lifecycle; `Some` when this call is the retry with the answer.
    Retry(Option<Resumed>),
}

impl Default for Asking {
    fn default() -> Self {
        Asking::Nobody("this caller cannot ask a person".into())
    }
}

impl std::fmt::Debug for Asking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Asking::Nobody(why) => write!(f, "Nobody({why})"),
            Asking::Now(_) => f.write_str("Now"),
            Asking::Retry(r) => write!(f, "Retry({r:?})"),
        }
    }
}

/// The tool's answer on the retry lifecycle: ask `form`, and hand `state` back to the
/// retry. The MCP adapter turns it into an `input_required` result; it never reaches a
/// model.
pub fn input_required(form: Form, state: Value) -> ToolError {
    ToolError::new(
        Code::InputRequired,
        "this call needs a person's answer",
        "answer the question and retry the call",
    )
    .with_data(json!({"form": {"message": form.message, "schema": form.schema}, "state": state}))
}
