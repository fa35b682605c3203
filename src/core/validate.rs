//! Validation of tool arguments against the tool's frozen JSON schema (the `jsonschema`
//! crate), turned into [`Violation`]s a hint can be built from.

use jsonschema::Validator;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

/// One way the arguments do not fit the schema.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Violation {
    /// Fields the schema does not have (`additionalProperties: false`).
    Unknown { at: String, fields: Vec<String> },
    /// A required field is absent.
    Missing { at: String, field: String },
    /// A value has the wrong JSON type.
    WrongType {
        at: String,
        expected: String,
        got: String,
    },
    /// A value is not among the allowed ones.
    NotInEnum { at: String, options: Vec<String> },
    /// Anything else the validator reports (ranges, lengths …).
    Other { at: String, message: String },
}

impl Violation {
    pub(crate) fn describe(&self) -> String {
        match self {
            Violation::Unknown { at, fields } => {
                let list = fields
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let noun = if fields.len() == 1 { "field" } else { "fields" };
                format!("unknown {noun} {list}{}", location(at))
            }
            Violation::Missing { at, field } => {
                format!("missing required field `{field}`{}", location(at))
            }
            Violation::WrongType { at, expected, got } => {
                format!("`{}` must be {expected}, got {got}", display_pointer(at))
            }
            Violation::NotInEnum { at, options } => format!(
                "`{}` must be one of: {}",
                display_pointer(at),
                options.join(", ")
            ),
            Violation::Other { at, message } => format!("`{}`: {message}", display_pointer(at)),
        }
    }
}

fn location(at: &str) -> String {
    if at.is_empty() {
        String::new()
    } else {
        format!(" in `{}`", display_pointer(at))
    }
}

/// `/edits/0/search` → `edits[0].search`: how a model thinks of the location.
pub(crate) fn display_pointer(pointer: &str) -> String {
    let mut out = String::new();
    for part in pointer.split('/').skip(1) {
        let part = part.replace("~1", "/").replace("~0", "~");
        if part.chars().all(|c| c.is_ascii_digit()) && !part.is_empty() {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&part);
        }
    }
    if out.is_empty() {
        "arguments".into()
    } else {
        out
    }
}

pub(crate) fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn type_kind_name(kind: &TypeKind) -> String {
    match kind {
        TypeKind::Single(t) => with_article(&t.to_string()),
        TypeKind::Multiple(ts) => {
            let names: Vec<String> = ts.iter().map(|t| with_article(&t.to_string())).collect();
            names.join(" or ")
        }
    }
}

fn with_article(t: &str) -> String {
    match t {
        "integer" | "object" | "array" => format!("an {t}"),
        other => format!("a {other}"),
    }
}

/// All violations, deduplicated, in the validator's order.
pub(crate) fn violations(validator: &Validator, instance: &Value) -> Vec<Violation> {
    let mut out: Vec<Violation> = Vec::new();
    for error in validator.iter_errors(instance) {
        let at = error.instance_path().to_string();
        let v = match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => Violation::Unknown {
                at,
                fields: unexpected.clone(),
            },
            ValidationErrorKind::Required { property } => Violation::Missing {
                at,
                field: property.as_str().unwrap_or_default().to_string(),
            },
            ValidationErrorKind::Type { kind } => Violation::WrongType {
                at,
                expected: type_kind_name(kind),
                got: json_type_name(error.instance()).to_string(),
            },
            ValidationErrorKind::Enum { options } => Violation::NotInEnum {
                at,
                options: options
                    .as_array()
                    .map(|o| o.iter().map(|v| v.to_string()).collect())
                    .unwrap_or_default(),
            },
            _ => Violation::Other {
                at,
                message: error.to_string(),
            },
        };
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}
