//! `whalebox call`: one tool call, its envelope as JSON on stdout.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Value, json};
use whalebox::core::{Asking, CallContext, Code, Envelope, Registry};
use whalebox::tools::Env;

use crate::{EXIT_TOOL_ERROR, EXIT_USAGE};

/// `--args`, `--args-file FILE` or `--args-file -` (stdin); `{}` when none is given.
pub(crate) fn read_args(
    args: Option<String>,
    args_file: Option<PathBuf>,
) -> Result<String, ExitCode> {
    Ok(match (args, args_file) {
        (Some(a), _) => a,
        (None, Some(file)) => {
            let read = if file.as_os_str() == "-" {
                let mut s = String::new();
                std::io::stdin().read_to_string(&mut s).map(|_| s)
            } else {
                std::fs::read_to_string(&file)
            };
            match read {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("whalebox: cannot read {}: {e}", file.display());
                    return Err(ExitCode::from(EXIT_USAGE));
                }
            }
        }
        (None, None) => "{}".to_string(),
    })
}

pub(crate) async fn call(tool: &str, raw: String, registry: Registry, env: Arc<Env>) -> ExitCode {
    let value: Value = match serde_json::from_str(&raw) {
        Ok(v) => v,
        Err(e) => {
            let fields = registry
                .spec(tool)
                .map(|s| {
                    format!(
                        "; {tool} takes an object like {}",
                        example_args(&s.input_schema)
                    )
                })
                .unwrap_or_default();
            let envelope = Envelope::error(
                Code::InvalidInput,
                &format!("--args is not valid JSON: {e}"),
                &format!("pass one JSON object, quoted for the shell{fields}"),
                json!({"tool": tool}),
            );
            print_envelope(&envelope);
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let ask = match whalebox::boundary::tty::terminal_asker() {
        Some(asker) => Asking::Now(asker),
        None => Asking::Nobody("whalebox call without a terminal".into()),
    };
    let ctx = CallContext {
        ask,
        ..CallContext::default()
    };
    let envelope = registry.dispatch(tool, value, ctx).await;
    // A one-shot call is its own session: nothing it started outlives it.
    env.tasks.kill_all();
    env.private.remove();
    print_envelope(&envelope);
    if envelope.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_TOOL_ERROR)
    }
}

pub(crate) fn print_envelope(envelope: &Envelope) {
    match serde_json::to_string(envelope) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("whalebox: cannot print the result: {e}"),
    }
}

/// `{"file_path": "…", "offset": 0}`: the required fields with placeholder values.
pub(crate) fn example_args(schema: &Value) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let props = schema.get("properties").and_then(Value::as_object);
    let mut example = serde_json::Map::new();
    for name in required {
        let ty = props
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("string");
        let placeholder = match ty {
            "integer" | "number" => json!(1),
            "boolean" => json!(true),
            "array" => json!([]),
            "object" => json!({}),
            _ => json!("…"),
        };
        example.insert(name.to_string(), placeholder);
    }
    Value::Object(example).to_string()
}
