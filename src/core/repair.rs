//! Input repair: fix the shapes real models get wrong, guided by the tool's schema,
//! before validation. Every repair is recorded so the model (and the log) can see what
//! was changed. The registry keeps a repaired input only if it validates; otherwise the
//! original is validated and reported as is.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The kinds of repair, a closed set.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RepairKind {
    /// The whole argument object arrived as a JSON string.
    StringifiedArguments,
    /// An array arrived as its JSON text: `"[1,2]"` → `[1,2]`.
    StringifiedArray,
    /// An object arrived as its JSON text.
    StringifiedObject,
    /// A single string where an array of strings is expected: `"a"` → `["a"]`.
    BareStringToArray,
    /// `null` for an optional field: the field is dropped, as if omitted.
    NullOptionalOmitted,
    /// A boolean or number written as a string: `"true"` → `true`, `"42"` → `42`.
    SemanticBooleanString,
    /// A chat UI turned a path into a markdown autolink:
    /// `"[README.md](http://README.md)"` → `"README.md"`.
    MarkdownAutolinkPath,
    /// edit: the search matched after relaxing whitespace at line ends.
    WhitespaceNormalized,
    /// edit: changed lines were rewritten in the file's indentation (unit and depth).
    IndentationRealigned,
    /// edit: literal `\n`, `\t`, `\"` … in search and replace were unescaped.
    JsonEscapeUnwrapped,
    /// request_user_input: the one-question shorthand `{question, options: [string]}`
    /// was expanded into the full `questions` form.
    QuestionShorthand,
    /// edit: curly quotes, unicode dashes and odd spaces were folded to ASCII to match.
    UnicodeNormalized,
}

/// One repair: what was done and where (a JSON pointer into the arguments).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Repair {
    pub kind: RepairKind,
    pub field: String,
    pub detail: String,
}

impl Repair {
    pub fn new(kind: RepairKind, field: &str, detail: impl Into<String>) -> Self {
        Repair {
            kind,
            field: if field.is_empty() {
                "/".into()
            } else {
                field.into()
            },
            detail: detail.into(),
        }
    }
}

/// Turn whatever arrived as "arguments" into an object, if that is unambiguous.
pub fn coerce_arguments(args: Value) -> Result<(Map<String, Value>, Vec<Repair>), Value> {
    match args {
        Value::Object(map) => Ok((map, Vec::new())),
        Value::Null => Ok((Map::new(), Vec::new())),
        Value::String(s) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Object(map)) => Ok((
                map,
                vec![Repair::new(
                    RepairKind::StringifiedArguments,
                    "",
                    "arguments arrived as a JSON string; parsed it as an object",
                )],
            )),
            _ => Err(Value::String(s)),
        },
        other => Err(other),
    }
}

/// Apply every schema-guided repair to `input`; returns the repaired value and what was
/// done. Pure: the caller decides whether to keep the result.
pub fn repair(schema: &Value, input: &Value) -> (Value, Vec<Repair>) {
    let mut repairs = Vec::new();
    let repaired = repair_value(schema, input.clone(), "", "", &mut repairs);
    (repaired, repairs)
}

fn schema_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn accepts(schema: &Value, kind: &str) -> bool {
    schema_types(schema).contains(&kind)
}

fn repair_value(
    schema: &Value,
    value: Value,
    pointer: &str,
    key: &str,
    repairs: &mut Vec<Repair>,
) -> Value {
    let types = schema_types(schema);
    if types.is_empty() {
        return value;
    }
    match value {
        Value::String(s) => repair_string(schema, s, pointer, key, repairs),
        Value::Object(map) if accepts(schema, "object") => {
            Value::Object(repair_object(schema, map, pointer, repairs))
        }
        Value::Array(items) if accepts(schema, "array") => {
            Value::Array(repair_items(schema, items, pointer, repairs))
        }
        other => other,
    }
}

fn repair_object(
    schema: &Value,
    map: Map<String, Value>,
    pointer: &str,
    repairs: &mut Vec<Repair>,
) -> Map<String, Value> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Map::new();
    for (key, value) in map {
        let child = format!("{pointer}/{}", escape_pointer(&key));
        let Some(prop) = properties.and_then(|p| p.get(&key)) else {
            out.insert(key, value);
            continue;
        };
        if value.is_null() && !required.contains(&key.as_str()) && !accepts(prop, "null") {
            repairs.push(Repair::new(
                RepairKind::NullOptionalOmitted,
                &child,
                "optional field was null; treated as omitted",
            ));
            continue;
        }
        let repaired = repair_value(prop, value, &child, &key, repairs);
        out.insert(key, repaired);
    }
    out
}

fn repair_items(
    schema: &Value,
    items: Vec<Value>,
    pointer: &str,
    repairs: &mut Vec<Repair>,
) -> Vec<Value> {
    let Some(item_schema) = schema.get("items") else {
        return items;
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| repair_value(item_schema, item, &format!("{pointer}/{i}"), "", repairs))
        .collect()
}

fn repair_string(
    schema: &Value,
    s: String,
    pointer: &str,
    key: &str,
    repairs: &mut Vec<Repair>,
) -> Value {
    if accepts(schema, "string") {
        if is_path_field(key)
            && let Some(path) = unwrap_markdown_autolink(&s)
        {
            repairs.push(Repair::new(
                RepairKind::MarkdownAutolinkPath,
                pointer,
                format!("markdown autolink {s:?} read as the path {path:?}"),
            ));
            return Value::String(path);
        }
        return Value::String(s);
    }
    let trimmed = s.trim();
    if accepts(schema, "array") {
        if trimmed.starts_with('[')
            && let Ok(Value::Array(items)) = serde_json::from_str::<Value>(trimmed)
        {
            repairs.push(Repair::new(
                RepairKind::StringifiedArray,
                pointer,
                "array arrived as JSON text; parsed it",
            ));
            return Value::Array(repair_items(schema, items, pointer, repairs));
        }
        let item_is_string = schema.get("items").is_none_or(|i| accepts(i, "string"));
        if item_is_string {
            repairs.push(Repair::new(
                RepairKind::BareStringToArray,
                pointer,
                "single string wrapped in an array",
            ));
            return Value::Array(vec![Value::String(s)]);
        }
        return Value::String(s);
    }
    if accepts(schema, "object")
        && trimmed.starts_with('{')
        && let Ok(Value::Object(map)) = serde_json::from_str::<Value>(trimmed)
    {
        repairs.push(Repair::new(
            RepairKind::StringifiedObject,
            pointer,
            "object arrived as JSON text; parsed it",
        ));
        return Value::Object(repair_object(schema, map, pointer, repairs));
    }
    if accepts(schema, "boolean") {
        let b = match trimmed.to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        };
        if let Some(b) = b {
            repairs.push(Repair::new(
                RepairKind::SemanticBooleanString,
                pointer,
                format!("string {s:?} read as the boolean {b}"),
            ));
            return Value::Bool(b);
        }
    }
    if accepts(schema, "integer")
        && let Ok(n) = trimmed.parse::<i64>()
    {
        repairs.push(Repair::new(
            RepairKind::SemanticBooleanString,
            pointer,
            format!("string {s:?} read as the integer {n}"),
        ));
        return Value::from(n);
    }
    if accepts(schema, "number")
        && let Ok(n) = trimmed.parse::<f64>()
        && n.is_finite()
    {
        repairs.push(Repair::new(
            RepairKind::SemanticBooleanString,
            pointer,
            format!("string {s:?} read as the number {n}"),
        ));
        return Value::from(n);
    }
    Value::String(s)
}

/// Fields whose value is a path (where a markdown autolink is certainly an accident).
fn is_path_field(key: &str) -> bool {
    key == "path" || key.ends_with("_path") || key == "cwd" || key == "file" || key == "dir"
}

static AUTOLINK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\[([^\[\]]+)\]\(<?(?:[A-Za-z][A-Za-z0-9+.-]*://)?([^()<>\s]+)>?\)$")
        .expect("static regex")
});

/// `[README.md](http://README.md)` → `README.md`, only when the link text and the
/// target name the same thing, so a real markdown link is never rewritten.
fn unwrap_markdown_autolink(s: &str) -> Option<String> {
    let caps = AUTOLINK.captures(s.trim())?;
    let text = caps.get(1)?.as_str();
    let target = caps.get(2)?.as_str().trim_end_matches('/');
    let same = target == text
        || target.ends_with(&format!("/{text}"))
        || text.ends_with(target)
        || target == text.trim_start_matches("./");
    same.then(|| text.to_string())
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string"},
                "paths": {"type": "array", "items": {"type": "string"}},
                "ids": {"type": "array", "items": {"type": "integer"}},
                "flag": {"type": "boolean"},
                "count": {"type": "integer"},
                "ratio": {"type": "number"},
                "note": {"type": "string"},
                "edits": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"all": {"type": "boolean"}}
                }}
            },
            "required": ["file_path"]
        })
    }

    fn kinds(repairs: &[Repair]) -> Vec<RepairKind> {
        repairs.iter().map(|r| r.kind).collect()
    }

    #[test]
    fn stringified_array_is_parsed() {
        let (v, r) = repair(&schema(), &json!({"file_path": "a", "ids": "[1, 2]"}));
        assert_eq!(v["ids"], json!([1, 2]));
        assert_eq!(kinds(&r), vec![RepairKind::StringifiedArray]);
        assert_eq!(r[0].field, "/ids");
    }

    #[test]
    fn bare_string_becomes_array() {
        let (v, r) = repair(&schema(), &json!({"file_path": "a", "paths": "src"}));
        assert_eq!(v["paths"], json!(["src"]));
        assert_eq!(kinds(&r), vec![RepairKind::BareStringToArray]);
    }

    #[test]
    fn null_optional_is_omitted_but_null_required_is_kept() {
        let (v, r) = repair(&schema(), &json!({"file_path": null, "count": null}));
        assert!(v.get("count").is_none());
        assert!(v["file_path"].is_null());
        assert_eq!(kinds(&r), vec![RepairKind::NullOptionalOmitted]);
    }

    #[test]
    fn semantic_strings_become_booleans_and_numbers() {
        let (v, r) = repair(
            &schema(),
            &json!({"file_path": "a", "flag": "true", "count": "42", "ratio": "0.5"}),
        );
        assert_eq!(v["flag"], json!(true));
        assert_eq!(v["count"], json!(42));
        assert_eq!(v["ratio"], json!(0.5));
        assert_eq!(r.len(), 3);
        assert!(
            r.iter()
                .all(|r| r.kind == RepairKind::SemanticBooleanString)
        );
    }

    #[test]
    fn markdown_autolink_in_path_field_is_unwrapped() {
        let (v, r) = repair(
            &schema(),
            &json!({"file_path": "[README.md](http://README.md)"}),
        );
        assert_eq!(v["file_path"], "README.md");
        assert_eq!(kinds(&r), vec![RepairKind::MarkdownAutolinkPath]);
    }

    #[test]
    fn real_markdown_link_and_non_path_fields_are_left_alone() {
        let input =
            json!({"file_path": "[docs](https://example.com/guide)", "note": "[a](http://a)"});
        let (v, r) = repair(&schema(), &input);
        assert_eq!(v, input);
        assert!(r.is_empty());
    }

    #[test]
    fn repairs_reach_into_array_items() {
        let (v, r) = repair(
            &schema(),
            &json!({"file_path": "a", "edits": [{"all": "false"}]}),
        );
        assert_eq!(v["edits"][0]["all"], json!(false));
        assert_eq!(r[0].field, "/edits/0/all");
    }

    #[test]
    fn well_formed_input_is_untouched() {
        let input = json!({"file_path": "a", "ids": [1], "flag": false, "count": 3});
        let (v, r) = repair(&schema(), &input);
        assert_eq!(v, input);
        assert!(r.is_empty());
    }

    #[test]
    fn stringified_arguments_are_parsed() {
        let (map, r) = coerce_arguments(json!("{\"file_path\": \"a\"}")).unwrap();
        assert_eq!(map["file_path"], "a");
        assert_eq!(kinds(&r), vec![RepairKind::StringifiedArguments]);
        assert!(coerce_arguments(json!(5)).is_err());
    }
}
