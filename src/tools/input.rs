//! Group `input`: `request_user_input`, 1–3 questions put to the person through whatever
//! this call can reach ([`Asking`]): an MCP elicitation form, an `input_required` round
//! on the 2026-07-28 lifecycle, or the terminal of `whalebox call`. Never a form that
//! asks for a secret: forms travel through the client and may be logged.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use regex::Regex;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::core::{
    Answer, Asking, BoxFuture, CallContext, Code, Form, Registry, RegistryError, Repair,
    RepairKind, Tool, ToolError, ToolOutput, ToolResult, input_required,
};

use super::Env;
use super::common::args;

pub(crate) fn register(env: &Arc<Env>, registry: &mut Registry) -> Result<(), RegistryError> {
    registry.register(
        "input",
        Arc::new(RequestUserInput {
            env: Arc::clone(env),
        }),
    )
}

const MAX_QUESTIONS: usize = 3;
const MAX_HEADER: usize = 12;
/// The form field holding a free-text answer next to a question's options.
const OTHER: &str = "_other";

#[derive(Debug, Clone, Deserialize)]
struct Choice {
    label: String,
    description: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct Question {
    id: String,
    header: Option<String>,
    question: String,
    #[serde(default)]
    options: Vec<Choice>,
    #[serde(default)]
    multi_select: bool,
}

#[derive(Deserialize)]
struct InputArgs {
    questions: Option<Vec<Question>>,
    question: Option<String>,
    options: Option<Vec<String>>,
}

/// Words that mean the question asks for a secret.
static SECRET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(passwords?|passphrases?|passcodes?|pin( code)?|api[ _-]?keys?|access[ _-]?keys?|secret[ _-]?keys?|private[ _-]?keys?|secrets?|tokens?|credentials?|2fa|otp|ssh[ _-]?keys?)\b",
    )
    .expect("the secret pattern compiles")
});

/// The questions, from the full form or the one-question shorthand (a repair).
fn questions(a: InputArgs) -> Result<(Vec<Question>, Vec<Repair>), ToolError> {
    let both = "send either `questions` (the full form) or `question` with optional string \
                `options` (one question), not both";
    match (a.questions, a.question) {
        (Some(_), Some(_)) => Err(ToolError::invalid_input(
            "both `questions` and `question` were given",
            both,
        )),
        (None, None) => Err(ToolError::invalid_input(
            "no question was given",
            "send {\"questions\": [{\"id\": \"…\", \"question\": \"…\", \"options\": [{\"label\": \"…\"}]}]}",
        )),
        (Some(qs), None) => {
            if a.options.is_some() {
                return Err(ToolError::invalid_input(
                    "`options` was given next to `questions`",
                    both,
                ));
            }
            Ok((qs, Vec::new()))
        }
        (None, Some(question)) => {
            let options = a
                .options
                .unwrap_or_default()
                .into_iter()
                .map(|label| Choice {
                    label,
                    description: None,
                })
                .collect();
            Ok((
                vec![Question {
                    id: "answer".into(),
                    header: None,
                    question,
                    options,
                    multi_select: false,
                }],
                vec![Repair::new(
                    RepairKind::QuestionShorthand,
                    "/question",
                    "one question with string options, expanded into `questions` (its id: `answer`)",
                )],
            ))
        }
    }
}

/// Every rule the questions must keep; the first broken one is the error.
fn check(qs: &[Question]) -> Result<(), ToolError> {
    let bad = |msg: String, next: &str| Err(ToolError::invalid_input(msg, next));
    if qs.is_empty() || qs.len() > MAX_QUESTIONS {
        return bad(
            format!("{} questions; ask 1 to {MAX_QUESTIONS} at a time", qs.len()),
            "ask the most important ones now, and the rest after the answer",
        );
    }
    let mut ids = HashSet::new();
    for q in qs {
        let id_ok = !q.id.is_empty()
            && q.id.len() <= 40
            && q.id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            && !q.id.ends_with(OTHER);
        if !id_ok {
            return bad(
                format!("question id `{}` is not usable", q.id),
                "use a short id of letters, digits, `_` or `-` (like `target_branch`)",
            );
        }
        if !ids.insert(q.id.as_str()) {
            return bad(
                format!("two questions have the id `{}`", q.id),
                "give every question its own id",
            );
        }
        if q.question.trim().is_empty() {
            return bad(
                format!("question `{}` is empty", q.id),
                "write the question out",
            );
        }
        if let Some(h) = &q.header
            && h.chars().count() > MAX_HEADER
        {
            return bad(
                format!(
                    "the header of `{}` is {} characters: \"{h}\"",
                    q.id,
                    h.chars().count()
                ),
                &format!(
                    "keep headers to {MAX_HEADER} characters (a tag like \"Branch\"), and put the rest in the question"
                ),
            );
        }
        let text = format!("{} {}", q.header.as_deref().unwrap_or(""), q.question);
        if let Some(word) = SECRET.find(&text) {
            return bad(
                format!(
                    "question `{}` asks for a secret (\"{}\"); whalebox never asks for secrets in a form: the answer passes through the client and its logs",
                    q.id,
                    word.as_str()
                ),
                "ask the person to put it in an environment variable or a file the command reads, and ask only for its name",
            );
        }
        if q.multi_select && q.options.is_empty() {
            return bad(
                format!("question `{}` is multi_select without options", q.id),
                "give the options to choose from, or drop multi_select for a free-text answer",
            );
        }
        let mut labels = HashSet::new();
        for o in &q.options {
            if o.label.trim().is_empty() {
                return bad(
                    format!("question `{}` has an option with an empty label", q.id),
                    "give every option a label",
                );
            }
            if !labels.insert(o.label.trim()) {
                return bad(
                    format!(
                        "question `{}` has the option \"{}\" twice",
                        q.id,
                        o.label.trim()
                    ),
                    "make every option's label different",
                );
            }
        }
    }
    Ok(())
}

/// The form: one property per question (a single-choice enum, a multi-select array, or
/// free text), plus an optional free-text `ID_other` next to each question with options.
fn form(qs: &[Question]) -> Form {
    let mut props = Map::new();
    let mut required = Vec::new();
    for q in qs {
        let title = q.header.clone().unwrap_or_else(|| q.question.clone());
        let choices: Vec<Value> = q
            .options
            .iter()
            .map(|o| {
                let title = match &o.description {
                    Some(d) if !d.trim().is_empty() => format!("{}: {}", o.label.trim(), d.trim()),
                    _ => o.label.trim().to_string(),
                };
                json!({"const": o.label.trim(), "title": title})
            })
            .collect();
        let prop = if q.options.is_empty() {
            required.push(q.id.clone());
            json!({"type": "string", "title": title, "description": q.question})
        } else if q.multi_select {
            json!({"type": "array", "title": title, "description": q.question,
                   "items": {"anyOf": choices}})
        } else {
            json!({"type": "string", "title": title, "description": q.question, "oneOf": choices})
        };
        props.insert(q.id.clone(), prop);
        if !q.options.is_empty() {
            props.insert(
                format!("{}{OTHER}", q.id),
                json!({"type": "string", "title": format!("{title}: other"),
                       "description": "Another answer, in your words (optional)."}),
            );
        }
    }
    let message = if qs.len() == 1 {
        format!("The agent asks: {}", qs[0].question)
    } else {
        format!("The agent asks {} questions.", qs.len())
    };
    Form {
        message,
        schema: json!({"type": "object", "properties": props, "required": required}),
    }
}

/// The answers, keyed by question id: a string (one choice or free text) or, for
/// multi_select, the chosen labels. A value that is not one of the options counts as
/// free text; an empty answer is `null`.
fn answers(qs: &[Question], content: &Map<String, Value>) -> (Map<String, Value>, String) {
    let mut out = Map::new();
    let mut text = String::new();
    for q in qs {
        let labels: Vec<&str> = q.options.iter().map(|o| o.label.trim()).collect();
        let other = content
            .get(&format!("{}{OTHER}", q.id))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        let value = match content.get(&q.id) {
            Some(Value::Array(items)) => {
                let mut picked: Vec<String> = items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect();
                picked.extend(other.clone());
                json!(picked)
            }
            Some(Value::String(s)) if !s.trim().is_empty() => {
                if !labels.is_empty() && !labels.contains(&s.trim()) {
                    json!(s.trim())
                } else if q.multi_select {
                    json!([s.trim()])
                } else {
                    json!(s.trim())
                }
            }
            _ => match other {
                Some(o) if q.multi_select => json!([o]),
                Some(o) => json!(o),
                None => Value::Null,
            },
        };
        let shown = match &value {
            Value::Null => "(no answer)".to_string(),
            Value::Array(a) => a
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", "),
            v => v.as_str().unwrap_or_default().to_string(),
        };
        text.push_str(&format!("{}\n  → {shown}\n", q.question.trim()));
        out.insert(q.id.clone(), value);
    }
    (out, text)
}

fn listed(qs: &[Question]) -> String {
    qs.iter()
        .map(|q| {
            let opts: Vec<&str> = q.options.iter().map(|o| o.label.trim()).collect();
            if opts.is_empty() {
                format!("- {}", q.question.trim())
            } else {
                format!("- {} ({})", q.question.trim(), opts.join(" / "))
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) struct RequestUserInput {
    env: Arc<Env>,
}

impl RequestUserInput {
    async fn ask(&self, qs: Vec<Question>, ask: Asking) -> ToolResult {
        let timeout = Duration::from_millis(self.env.profile.input.timeout_ms);
        let answer = match ask {
            Asking::Nobody(why) => {
                return Err(ToolError::new(
                    Code::Unsupported,
                    format!("there is no way to ask the person from here ({why})"),
                    format!(
                        "ask the user in your reply instead, and go on with their answer:\n{}",
                        listed(&qs)
                    ),
                ));
            }
            Asking::Now(asker) => asker(form(&qs), timeout).await,
            Asking::Retry(None) => return Err(input_required(form(&qs), Value::Null)),
            Asking::Retry(Some(resumed)) => resumed.answer,
        };
        match answer {
            Answer::Accept(content) => {
                let (answers, text) = answers(&qs, &content);
                Ok(ToolOutput::new(
                    format!("The person answered:\n{text}"),
                    json!({"answers": answers}),
                ))
            }
            Answer::Decline => Err(ToolError::new(
                Code::Declined,
                "the person declined to answer",
                "go on without the answer using your best judgement, or say in your reply what you need and why",
            )),
            Answer::Cancel => Err(ToolError::new(
                Code::Cancelled,
                "the person dismissed the question without answering",
                "go on without the answer, or ask again later if it is really needed",
            )),
            Answer::Unread { .. } => Err(ToolError::new(
                Code::Unsupported,
                answer.unread_reason().unwrap_or_default(),
                format!(
                    "nobody is there to ask: go on without the answer, and put the question in your reply:\n{}",
                    listed(&qs)
                ),
            )),
            Answer::Timeout => Err(ToolError::new(
                Code::Timeout,
                format!(
                    "no answer within {} s ([input] timeout_ms)",
                    timeout.as_secs()
                ),
                "the person may be away: go on with what does not need the answer, and ask in your reply",
            )),
        }
    }
}

impl Tool for RequestUserInput {
    fn name(&self) -> &str {
        "request_user_input"
    }

    fn title(&self) -> Option<String> {
        Some("Ask the user".into())
    }

    fn description(&self) -> String {
        format!(
            "Ask the person 1 to {MAX_QUESTIONS} short questions and wait for the answers, when you \
             cannot go on without a decision only they can make. Each question: an `id`, an \
             optional `header` (at most {MAX_HEADER} characters), the `question`, and optional \
             `options` ({{label, description?}}; `multi_select` for several). The person may also \
             answer in their own words. Never ask for passwords, tokens or keys. Returns \
             `data.answers` keyed by question id."
        )
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_QUESTIONS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "description": "Short id the answer is keyed by."},
                            "header": {"type": "string", "maxLength": MAX_HEADER, "description": "A tag for the question."},
                            "question": {"type": "string"},
                            "options": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "label": {"type": "string"},
                                        "description": {"type": "string"}
                                    },
                                    "required": ["label"],
                                    "additionalProperties": false
                                }
                            },
                            "multi_select": {"type": "boolean"}
                        },
                        "required": ["id", "question"],
                        "additionalProperties": false
                    }
                },
                "question": {"type": "string", "description": "Shorthand for one question."},
                "options": {"type": "array", "items": {"type": "string"}, "description": "With `question`: its options."}
            },
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn run(self: Arc<Self>, input: Value, ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let (qs, repairs) = questions(args(input)?)?;
            check(&qs)?;
            self.ask(qs, ctx.ask)
                .await
                .map(|out| out.with_repairs(repairs))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qs(v: Value) -> Result<Vec<Question>, ToolError> {
        let (qs, _) = questions(serde_json::from_value(v).unwrap())?;
        check(&qs)?;
        Ok(qs)
    }

    #[test]
    fn rules() {
        let four = json!({"questions": (0..4).map(|i| json!({"id": format!("q{i}"), "question": "?"})).collect::<Vec<_>>()});
        assert!(qs(four).is_err());
        assert!(
            qs(json!({"questions": [{"id": "a", "question": "x"}, {"id": "a", "question": "y"}]}))
                .is_err()
        );
        assert!(
            qs(json!({"questions": [{"id": "a", "header": "thirteen chars", "question": "x"}]}))
                .is_err()
        );
        assert!(qs(json!({"questions": [{"id": "a", "question": "x", "options": [{"label": "A"}, {"label": "A "}]}]})).is_err());
        let secret = qs(json!({"question": "What is your GitHub token?"})).unwrap_err();
        assert!(secret.message.contains("secret"), "{}", secret.message);
        assert!(qs(json!({"question": "Which tokenizer should the parser use?"})).is_ok());
        assert!(qs(json!({"question": "x", "questions": []})).is_err());
    }

    #[test]
    fn answers_map_choices_multi_and_other() {
        let q = qs(json!({"questions": [
            {"id": "db", "question": "Which database?", "options": [{"label": "sqlite"}, {"label": "postgres"}]},
            {"id": "feat", "question": "Which features?", "multi_select": true, "options": [{"label": "a"}, {"label": "b"}]},
            {"id": "name", "question": "Name?"}
        ]}))
        .unwrap();
        let f = form(&q);
        assert_eq!(f.schema["required"], json!(["name"]));
        assert!(f.schema["properties"]["db_other"].is_object());
        let content = json!({"db": "", "db_other": "mysql", "feat": ["a", "b"], "name": "demo"});
        let (a, text) = answers(&q, content.as_object().unwrap());
        assert_eq!(
            Value::Object(a),
            json!({"db": "mysql", "feat": ["a", "b"], "name": "demo"})
        );
        assert!(text.contains("Which features?\n  → a, b"), "{text}");
    }
}
