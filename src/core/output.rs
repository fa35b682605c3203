//! What a tool's call comes to: [`ToolOutput`] or [`ToolError`], and the boxed future
//! that carries it (apart from the [`Tool`](super::Tool) trait, so the person-asking
//! side can return errors without knowing about tools).

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use super::envelope::Code;
use super::repair::Repair;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
pub type ToolResult = Result<ToolOutput, ToolError>;

/// A successful result: `text` for the model, `data` for programs, and the repairs the
/// tool itself made (fuzzy edit levels), which join the registry's in the envelope.
#[derive(Debug, Clone)]
pub struct ToolOutput {
    pub text: String,
    pub data: Value,
    pub repairs: Vec<Repair>,
}

impl ToolOutput {
    pub fn new(text: impl Into<String>, data: Value) -> Self {
        ToolOutput {
            text: text.into(),
            data,
            repairs: Vec::new(),
        }
    }

    pub fn with_repairs(mut self, repairs: Vec<Repair>) -> Self {
        self.repairs = repairs;
        self
    }
}

/// A failed result. `next_step` is mandatory in spirit: an error without one is a bug.
#[derive(Debug, Clone)]
pub struct ToolError {
    pub code: Code,
    pub message: String,
    pub next_step: String,
    pub data: Value,
}

impl ToolError {
    pub fn new(code: Code, message: impl Into<String>, next_step: impl Into<String>) -> Self {
        ToolError {
            code,
            message: message.into(),
            next_step: next_step.into(),
            data: Value::Null,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = data;
        self
    }

    pub fn invalid_input(message: impl Into<String>, next_step: impl Into<String>) -> Self {
        Self::new(Code::InvalidInput, message, next_step)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            Code::Internal,
            message,
            "this is a whalebox bug or an unexpected system failure; retry once, then report it",
        )
    }
}
