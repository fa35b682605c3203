//! The registry: the enabled tools with their frozen specs and compiled schemas, and
//! [`Registry::dispatch`], the one path every call takes whatever the transport:
//! find → repair → validate → run → envelope (capped).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use jsonschema::Validator;
use serde_json::{Value, json};

use super::envelope::{Code, Envelope};
use super::hints::{recovery_hint, suggest_tools};
use super::limits::SessionLimits;
use super::repair::{Repair, coerce_arguments, repair};
use super::tool::{CallContext, ChangeHook, Forwarded, Tool, ToolSpec, panic_message};
use super::validate::{json_type_name, violations};

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("tool `{0}` is registered twice")]
    Duplicate(String),
    #[error("tool `{tool}` has an invalid input schema: {message}")]
    BadSchema { tool: String, message: String },
}

struct Entry {
    spec: Arc<ToolSpec>,
    validator: Arc<Validator>,
    tool: Arc<dyn Tool>,
    /// The schema has its own `description` field; otherwise a top-level `description`
    /// (which models trained on other harnesses add) is accepted and dropped.
    has_description_field: bool,
}

pub struct Registry {
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
    limits: Arc<SessionLimits>,
    change_hook: Option<Arc<dyn ChangeHook>>,
    forwarded: Option<Arc<dyn Forwarded>>,
}

/// A spec and its compiled validator, shared by every registry that registers an equal
/// spec: an HTTP server builds a registry per session, and the schemas and validators
/// would otherwise be most of an idle session's memory.
fn compiled(spec: ToolSpec) -> Result<(Arc<ToolSpec>, Arc<Validator>), RegistryError> {
    type Cache = std::sync::Mutex<HashMap<String, (Arc<ToolSpec>, Arc<Validator>)>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let key = serde_json::to_string(&spec).unwrap_or_default();
    let cache = CACHE.get_or_init(Default::default);
    if let Some((s, v)) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok((Arc::clone(s), Arc::clone(v)));
    }
    let validator =
        jsonschema::validator_for(&spec.input_schema).map_err(|e| RegistryError::BadSchema {
            tool: spec.name.clone(),
            message: e.to_string(),
        })?;
    let compiled = (Arc::new(spec), Arc::new(validator));
    cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, compiled.clone());
    Ok(compiled)
}

impl Registry {
    /// An empty registry whose results are capped at the session's `max_chars`
    /// characters of text (read at each call: the limits may be fitted to the client).
    pub fn new(limits: Arc<SessionLimits>) -> Self {
        Registry {
            entries: Vec::new(),
            index: HashMap::new(),
            limits,
            change_hook: None,
            forwarded: None,
        }
    }

    /// Call `hook` around every call that may change the workspace.
    pub fn set_change_hook(&mut self, hook: Arc<dyn ChangeHook>) {
        self.change_hook = Some(hook);
    }

    /// List `tools` beside the registry's own (see [`Forwarded`]).
    pub fn set_forwarded(&mut self, tools: Arc<dyn Forwarded>) {
        self.forwarded = Some(tools);
    }

    /// The tools listed beside the registry's own, if a group forwards any.
    pub fn forwarded(&self) -> Option<Arc<dyn Forwarded>> {
        self.forwarded.clone()
    }

    /// Register a tool under `group`. Its spec is computed now and never again.
    pub fn register(&mut self, group: &str, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let spec = ToolSpec::of(tool.as_ref(), group);
        if self.index.contains_key(&spec.name) {
            return Err(RegistryError::Duplicate(spec.name));
        }
        let (spec, validator) = compiled(spec)?;
        let has_description_field = spec
            .input_schema
            .get("properties")
            .and_then(|p| p.get("description"))
            .is_some();
        self.index.insert(spec.name.clone(), self.entries.len());
        self.entries.push(Entry {
            spec,
            validator,
            tool,
            has_description_field,
        });
        Ok(())
    }

    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.entries.iter().map(|e| &*e.spec)
    }

    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.index.get(name).map(|&i| &*self.entries[i].spec)
    }

    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.spec.name.as_str()).collect()
    }

    pub fn max_chars(&self) -> usize {
        self.limits.max_chars()
    }

    /// The arguments `dispatch` would run `name` with (coerced, repaired, validated,
    /// and the repairs made), or the `invalid_input` envelope it would answer; runs
    /// nothing. For the fuzz targets (fuzz/), which check repair and validation on
    /// every tool's schema without running a tool.
    #[doc(hidden)]
    pub fn check_arguments(
        &self,
        name: &str,
        args: Value,
    ) -> Result<(Value, Vec<Repair>), Envelope> {
        let Some(entry) = self.index.get(name).map(|&i| &self.entries[i]) else {
            return Err(self.unknown_tool(name));
        };
        prepare(entry, name, args)
    }

    /// Whether `value` fits the input schema of tool `name` (None: no such tool). For
    /// the fuzz targets (fuzz/).
    #[doc(hidden)]
    pub fn validates(&self, name: &str, value: &Value) -> Option<bool> {
        let &i = self.index.get(name)?;
        Some(self.entries[i].validator.is_valid(value))
    }

    /// The specs with each description asked of its tool again: descriptions that
    /// state a limit follow the limits fitted to the client.
    pub fn described_specs(&self) -> Vec<ToolSpec> {
        self.entries
            .iter()
            .map(|e| ToolSpec {
                description: e.tool.description(),
                ..(*e.spec).clone()
            })
            .collect()
    }

    /// Carry out one call and answer with an envelope. Never panics, whatever the input
    /// or the tool does.
    pub async fn dispatch(&self, name: &str, args: Value, ctx: CallContext) -> Envelope {
        let started = Instant::now();
        let envelope = self
            .dispatch_inner(name, args, ctx)
            .await
            .capped(self.limits.max_chars());
        tracing::info!(
            tool = name,
            code = %envelope.code,
            repairs = envelope.repairs.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "call"
        );
        envelope
    }

    async fn dispatch_inner(&self, name: &str, args: Value, ctx: CallContext) -> Envelope {
        let Some(entry) = self.index.get(name).map(|&i| &self.entries[i]) else {
            return self.unknown_tool(name);
        };
        let (input, repairs) = match prepare(entry, name, args) {
            Ok(ok) => ok,
            Err(envelope) => return envelope,
        };

        let hook = self.change_hook.clone().and_then(|hook| {
            entry
                .tool
                .changes_workspace(&input)
                .map(|summary| (hook, summary))
        });
        let checkpoint = match &hook {
            Some((hook, summary)) => {
                let (hook, summary, tool) = (Arc::clone(hook), summary.clone(), name.to_string());
                Some(
                    tokio::task::spawn_blocking(move || hook.before(&tool, &summary))
                        .await
                        .unwrap_or_else(|e| Err(format!("the checkpoint failed: {e}"))),
                )
            }
            None => None,
        };
        let mut envelope = self.run(entry, name, input, ctx).await;
        envelope.repairs.splice(0..0, repairs);
        if let (Some((hook, _)), Some(checkpoint)) = (hook, checkpoint) {
            let data = envelope.data.clone();
            match &checkpoint {
                Ok(id) => {
                    let id = id.clone();
                    let _ = tokio::task::spawn_blocking(move || hook.after(&id, &data)).await;
                }
                Err(why) => tracing::warn!("no checkpoint before {name}: {why}"),
            }
            if let Some(map) = envelope.data.as_object_mut() {
                match checkpoint {
                    Ok(id) => map.insert("checkpoint".into(), json!(id)),
                    Err(why) => map.insert("checkpoint_missing".into(), json!(why)),
                };
            }
        }
        envelope
    }

    /// Run the tool with validated `input`, until it answers or the call is cancelled.
    async fn run(&self, entry: &Entry, name: &str, input: Value, ctx: CallContext) -> Envelope {
        let tool = Arc::clone(&entry.tool);
        let cancel = ctx.cancel.clone();
        let handle = tokio::spawn(tool.run(input, ctx));
        let abort = handle.abort_handle();
        let result = tokio::select! {
            joined = handle => joined,
            _ = cancel.cancelled() => {
                abort.abort();
                return Envelope::error(
                    Code::Cancelled,
                    &format!("{name} was cancelled before it finished"),
                    "call it again if the result is still needed",
                    Value::Null,
                );
            }
        };
        match result {
            Ok(Ok(out)) => Envelope::success(out.text, out.data, out.repairs),
            Ok(Err(err)) => Envelope::error(err.code, &err.message, &err.next_step, err.data),
            Err(join) if join.is_panic() => Envelope::error(
                Code::Internal,
                &format!("{name} panicked: {}", panic_message(join.into_panic())),
                "this is a whalebox bug; retry once, then report it",
                Value::Null,
            ),
            Err(_) => Envelope::error(
                Code::Cancelled,
                &format!("{name} was stopped before it finished"),
                "call it again if the result is still needed",
                Value::Null,
            ),
        }
    }

    fn unknown_tool(&self, name: &str) -> Envelope {
        let names = self.names();
        let suggestions = suggest_tools(name, names.iter().copied());
        let next = match suggestions.first() {
            Some(best) => format!("did you mean `{best}`? Enabled tools: {}", names.join(", ")),
            None => format!("use one of the enabled tools: {}", names.join(", ")),
        };
        Envelope::error(
            Code::UnknownTool,
            &format!("unknown tool `{name}`"),
            &next,
            json!({"suggestions": suggestions, "tools": names}),
        )
    }
}

/// Coerce, repair and validate a call's arguments: the input to run the tool with and
/// the repairs made, or the envelope that refuses them. A repaired input is kept only if
/// it validates; otherwise the original is validated and reported as is.
fn prepare(entry: &Entry, name: &str, args: Value) -> Result<(Value, Vec<Repair>), Envelope> {
    let (mut map, mut repairs) = match coerce_arguments(args) {
        Ok(ok) => ok,
        Err(other) => {
            return Err(Envelope::error(
                Code::InvalidInput,
                &format!(
                    "arguments for {name} must be a JSON object, got {}",
                    json_type_name(&other)
                ),
                &format!(
                    "send an object; {name} takes: {}",
                    super::hints::field_summary(&entry.spec.input_schema)
                ),
                json!({"tool": name}),
            ));
        }
    };
    if !entry.has_description_field {
        map.remove("description");
    }
    let original = Value::Object(map);
    let (repaired, schema_repairs) = repair(&entry.spec.input_schema, &original);
    if !schema_repairs.is_empty() && entry.validator.is_valid(&repaired) {
        repairs.extend(schema_repairs);
        Ok((repaired, repairs))
    } else if entry.validator.is_valid(&original) {
        Ok((original, repairs))
    } else {
        Err(invalid_input(entry, &original))
    }
}

fn invalid_input(entry: &Entry, original: &Value) -> Envelope {
    let found = violations(&entry.validator, original);
    let problems: Vec<String> = found.iter().map(|v| v.describe()).collect();
    let hint = recovery_hint(&entry.spec, &found);
    Envelope::error(
        Code::InvalidInput,
        &format!(
            "invalid arguments for {}: {}",
            entry.spec.name,
            problems.join("; ")
        ),
        &hint,
        json!({"tool": entry.spec.name, "problems": problems}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::output::{BoxFuture, ToolOutput, ToolResult};

    /// A real tool for the registry's own tests: echoes its validated input.
    struct Echo;

    impl Tool for Echo {
        fn name(&self) -> &str {
            "echo"
        }
        fn parameters(&self) -> Value {
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "count": {"type": "integer"},
                    "mode": {"type": "string", "enum": ["a", "b"]},
                    "paths": {"type": "array", "items": {"type": "string"}},
                    "edits": {"type": "array", "items": {
                        "type": "object",
                        "properties": {"all": {"type": "boolean"}},
                        "additionalProperties": false
                    }}
                },
                "required": ["path"],
                "additionalProperties": false
            })
        }
        fn run(self: Arc<Self>, input: Value, _ctx: CallContext) -> BoxFuture<'static, ToolResult> {
            Box::pin(async move {
                if input["path"] == "panic" {
                    panic!("asked to panic");
                }
                if input["path"] == "sleep" {
                    tokio::time::sleep(std::time::Duration::from_secs(30)).await;
                }
                Ok(ToolOutput::new(input.to_string(), input))
            })
        }
    }

    fn registry() -> Registry {
        let mut r = Registry::new(Arc::new(SessionLimits::new(1000, 50_000, 15_000)));
        r.register("test", Arc::new(Echo)).unwrap();
        r
    }

    #[tokio::test]
    async fn unknown_tool_names_the_closest_tool() {
        let e = registry()
            .dispatch("ecko", json!({}), CallContext::default())
            .await;
        assert_eq!(e.code, Code::UnknownTool);
        assert!(e.text.contains("did you mean `echo`"), "{}", e.text);
    }

    #[tokio::test]
    async fn repaired_input_is_used_and_recorded() {
        let e = registry()
            .dispatch(
                "echo",
                json!({"path": "x", "count": "3"}),
                CallContext::default(),
            )
            .await;
        assert!(e.ok, "{}", e.text);
        assert_eq!(e.data["count"], 3);
        assert_eq!(e.repairs.len(), 1);
    }

    #[tokio::test]
    async fn every_repair_kind_goes_through_dispatch_and_is_recorded() {
        let r = registry();
        let cases = [
            (
                json!({"path": "x", "paths": "[\"a\", \"b\"]"}),
                "stringified_array",
                json!({"paths": ["a", "b"]}),
            ),
            (
                json!({"path": "x", "paths": "a"}),
                "bare_string_to_array",
                json!({"paths": ["a"]}),
            ),
            (
                json!({"path": "x", "edits": ["{\"all\": true}"]}),
                "stringified_object",
                json!({"edits": [{"all": true}]}),
            ),
            (
                json!({"path": "x", "count": null}),
                "null_optional_omitted",
                json!({}),
            ),
            (
                json!({"path": "x", "count": "42"}),
                "semantic_boolean_string",
                json!({"count": 42}),
            ),
            (
                json!({"path": "[a.md](http://a.md)"}),
                "markdown_autolink_path",
                json!({"path": "a.md"}),
            ),
            (
                json!("{\"path\": \"x\"}"),
                "stringified_arguments",
                json!({}),
            ),
        ];
        for (input, kind, expect) in cases {
            let e = r
                .dispatch("echo", input.clone(), CallContext::default())
                .await;
            assert!(e.ok, "{input}: {}", e.text);
            assert_eq!(e.repairs.len(), 1, "{input}");
            assert_eq!(serde_json::to_value(e.repairs[0].kind).unwrap(), kind);
            for (k, v) in expect.as_object().unwrap() {
                assert_eq!(&e.data[k], v, "{input}");
            }
        }
    }

    #[tokio::test]
    async fn unrepairable_input_keeps_the_original_and_explains() {
        let e = registry()
            .dispatch(
                "echo",
                json!({"path": "x", "count": "3", "colour": 1}),
                CallContext::default(),
            )
            .await;
        assert_eq!(e.code, Code::InvalidInput);
        assert!(e.text.contains("unknown field `colour`"), "{}", e.text);
        assert!(
            e.text.contains("`count` must be an integer, got a string"),
            "{}",
            e.text
        );
        assert!(
            e.text.contains("echo takes: path (string, required)"),
            "{}",
            e.text
        );
        assert!(e.repairs.is_empty());
    }

    #[tokio::test]
    async fn top_level_description_is_accepted() {
        let e = registry()
            .dispatch(
                "echo",
                json!({"path": "x", "description": "why"}),
                CallContext::default(),
            )
            .await;
        assert!(e.ok, "{}", e.text);
        assert!(e.data.get("description").is_none());
    }

    #[tokio::test]
    async fn enum_violation_lists_options() {
        let e = registry()
            .dispatch(
                "echo",
                json!({"path": "x", "mode": "c"}),
                CallContext::default(),
            )
            .await;
        assert_eq!(e.code, Code::InvalidInput);
        assert!(
            e.text.contains("`mode` must be one of: \"a\", \"b\""),
            "{}",
            e.text
        );
    }

    #[tokio::test]
    async fn a_panicking_tool_is_an_internal_error_not_a_crash() {
        let r = registry();
        let e = r
            .dispatch("echo", json!({"path": "panic"}), CallContext::default())
            .await;
        assert_eq!(e.code, Code::Internal);
        let again = r
            .dispatch("echo", json!({"path": "y"}), CallContext::default())
            .await;
        assert!(again.ok);
    }

    #[tokio::test]
    async fn cancellation_stops_waiting_on_the_tool() {
        let r = registry();
        let ctx = CallContext::default();
        let cancel = ctx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            cancel.cancel();
        });
        let started = Instant::now();
        let e = r.dispatch("echo", json!({"path": "sleep"}), ctx).await;
        assert_eq!(e.code, Code::Cancelled);
        assert!(started.elapsed().as_secs() < 10);
    }

    #[tokio::test]
    async fn non_object_arguments_are_invalid_input() {
        let e = registry()
            .dispatch("echo", json!([1]), CallContext::default())
            .await;
        assert_eq!(e.code, Code::InvalidInput);
        assert!(e.text.contains("must be a JSON object, got an array"));
    }
}
