//! Schema-guided repair and validation of tool arguments, on every tool's schema in a
//! registry with every group enabled (`Registry::check_arguments`: the path `dispatch`
//! takes before it runs a tool; no tool runs here).
//!
//! Inputs are drawn from each schema (right values, and the shapes models get wrong:
//! stringified arrays and objects, booleans and numbers as strings, nulls, a bare string
//! for an array, markdown autolinks for paths, stray fields) or are arbitrary JSON.
//! Oracle: never a panic; what `check_arguments` accepts validates against the tool's
//! schema, and when nothing was repaired it is the arguments as given; what it refuses
//! is an `invalid_input` error naming the tool, with a next step, and the arguments as
//! given did not validate; repairing an already-valid value changes nothing (except a
//! path written as a markdown autolink, a repair made on purpose).

#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};
use whalebox::core::{Code, Registry, RepairKind, repair_arguments};

const PROFILE: &str = r#"
tools = ["files", "search", "edit", "shell", "plan", "todo", "input", "checkpoints", "web", "mcp"]
[checkpoints]
mode = "off"
[mcp_servers.upstream]
command = "true"
"#;

struct Setup {
    registry: Registry,
    tools: Vec<(String, Value)>,
}

thread_local! {
    static SETUP: Setup = {
        let (registry, _env) = whalebox_fuzz::registry("tool_arguments", PROFILE);
        let tools = registry
            .specs()
            .map(|s| (s.name.clone(), s.input_schema.clone()))
            .collect();
        Setup { registry, tools }
    };
}

/// Strings models send, and ones the repairs look for.
const WORDS: &[&str] = &[
    "",
    "true",
    "false",
    "TRUE",
    " true ",
    "42",
    "-1",
    "1e3",
    "3.5",
    "null",
    "[]",
    "[\"a\"]",
    "[1,2]",
    "{}",
    "{\"a\":1}",
    "[README.md](http://README.md)",
    "[a](<a>)",
    "src/main.rs",
    "./x",
    "\u{0}",
    "é",
    "~/x",
    "a/b/",
    "[x](http://y)",
    " [1] ",
];

fn string(u: &mut Unstructured) -> Result<String> {
    if u.ratio(1, 2)? {
        Ok(u.choose(WORDS)?.to_string())
    } else {
        u.arbitrary()
    }
}

fn any(u: &mut Unstructured, depth: u32) -> Result<Value> {
    let top = if depth > 3 { 4 } else { 6 };
    Ok(match u.int_in_range(0..=top)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => json!(u.arbitrary::<i64>()?),
        3 => serde_json::Number::from_f64(u.arbitrary()?).map_or(Value::Null, Value::Number),
        4 => Value::String(string(u)?),
        5 => {
            let n = u.int_in_range(0..=3)?;
            Value::Array((0..n).map(|_| any(u, depth + 1)).collect::<Result<_>>()?)
        }
        _ => {
            let n = u.int_in_range(0..=3)?;
            let mut m = Map::new();
            for _ in 0..n {
                m.insert(string(u)?, any(u, depth + 1)?);
            }
            Value::Object(m)
        }
    })
}

/// A value for `schema`: usually right, sometimes in a shape models get wrong.
fn value(u: &mut Unstructured, schema: &Value, depth: u32) -> Result<Value> {
    Ok(match u.int_in_range(0..=19)? {
        0 => any(u, depth)?,
        1 => Value::Null,
        2 | 3 => {
            let good = good(u, schema, depth)?;
            match good {
                Value::String(_) => good,
                other => Value::String(if u.arbitrary()? {
                    other.to_string()
                } else {
                    format!(" {other}\n")
                }),
            }
        }
        4 => {
            let s = string(u)?;
            Value::String(format!("[{s}](http://{s})"))
        }
        _ => good(u, schema, depth)?,
    })
}

fn types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn bound(schema: &Value, key: &str) -> Option<i64> {
    schema.get(key).and_then(Value::as_i64)
}

/// A value that usually fits `schema`.
fn good(u: &mut Unstructured, schema: &Value, depth: u32) -> Result<Value> {
    if let Some(Value::Array(options)) = schema.get("enum")
        && !options.is_empty()
        && u.ratio(7, 8)?
    {
        return Ok(u.choose(options)?.clone());
    }
    let ts = types(schema);
    if ts.is_empty() || depth > 6 {
        return any(u, depth);
    }
    Ok(match *u.choose(&ts)? {
        "object" => {
            let mut m = Map::new();
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, p) in props {
                    if required.contains(&k.as_str()) || u.arbitrary()? {
                        m.insert(k.clone(), value(u, p, depth + 1)?);
                    }
                }
            }
            if u.ratio(1, 8)? {
                m.insert(string(u)?, any(u, depth + 1)?);
            }
            if u.ratio(1, 8)? {
                m.insert("description".into(), Value::String(string(u)?));
            }
            Value::Object(m)
        }
        "array" => {
            let min = bound(schema, "minItems").unwrap_or(0).max(0);
            let max = bound(schema, "maxItems").unwrap_or(min + 4).min(min + 4);
            let n = u.int_in_range(min..=max.max(min))?;
            let items = schema.get("items").cloned().unwrap_or(Value::Null);
            Value::Array(
                (0..n)
                    .map(|_| value(u, &items, depth + 1))
                    .collect::<Result<_>>()?,
            )
        }
        "string" => Value::String(string(u)?),
        "integer" => {
            let lo = bound(schema, "minimum").unwrap_or(-5);
            let hi = bound(schema, "maximum").unwrap_or(lo.saturating_add(1000));
            if u.ratio(1, 8)? {
                json!(u.arbitrary::<i64>()?)
            } else {
                json!(u.int_in_range(lo.saturating_sub(2)..=hi.saturating_add(2))?)
            }
        }
        "number" => serde_json::Number::from_f64(u.arbitrary()?).map_or(json!(0), Value::Number),
        "boolean" => Value::Bool(u.arbitrary()?),
        _ => Value::Null,
    })
}

fn check(setup: &Setup, u: &mut Unstructured) -> Result<()> {
    let (name, schema) = u.choose(&setup.tools)?;
    let registry = &setup.registry;
    let args = match u.int_in_range(0..=15)? {
        0 => any(u, 0)?,
        1 => Value::String(good(u, schema, 0)?.to_string()),
        _ => good(u, schema, 0)?,
    };
    // What `dispatch` validates when nothing is repaired: the object, `description`
    // dropped where the schema has no such field.
    let as_given = match &args {
        Value::Object(m) => {
            let mut m = m.clone();
            if schema["properties"].get("description").is_none() {
                m.remove("description");
            }
            Some(Value::Object(m))
        }
        Value::Null => Some(json!({})),
        _ => None,
    };
    let valid_as_given = as_given
        .as_ref()
        .is_some_and(|v| registry.validates(name, v) == Some(true));

    match registry.check_arguments(name, args.clone()) {
        Ok((input, repairs)) => {
            assert_eq!(
                registry.validates(name, &input),
                Some(true),
                "{name}: accepted arguments do not validate: {input}"
            );
            if repairs.is_empty()
                && let Some(given) = &as_given
            {
                assert_eq!(&input, given, "{name}: changed without a repair");
            }
            for r in &repairs {
                assert!(
                    r.field.starts_with('/') && !r.detail.is_empty(),
                    "{name}: a repair without field or detail: {r:?}"
                );
            }
        }
        Err(envelope) => {
            assert!(!envelope.ok);
            assert_eq!(
                envelope.code,
                Code::InvalidInput,
                "{name}: {}",
                envelope.text
            );
            assert!(
                envelope.text.contains(name.as_str()) && envelope.text.len() > name.len() + 20,
                "{name}: an unclear refusal: {}",
                envelope.text
            );
            assert!(
                !valid_as_given,
                "{name}: valid arguments refused: {args} -> {}",
                envelope.text
            );
        }
    }

    // Repairing a valid value changes nothing, but a path given as a markdown autolink.
    if let Some(given) = as_given.filter(|_| valid_as_given) {
        let (repaired, repairs) = repair_arguments(schema, &given);
        if repairs
            .iter()
            .all(|r| r.kind != RepairKind::MarkdownAutolinkPath)
        {
            assert_eq!(
                repaired, given,
                "{name}: a valid value was repaired: {repairs:?}"
            );
            assert!(
                repairs.is_empty(),
                "{name}: repairs on a valid value: {repairs:?}"
            );
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    SETUP.with(|setup| {
        let mut u = Unstructured::new(data);
        let _ = check(setup, &mut u);
    });
});
