//! Recovery hints: the next step for a call whose arguments did not validate, and for a
//! tool name that does not exist. Specific hints cover the mix-ups models make most
//! (fields borrowed from other harnesses); otherwise the hint is derived from the schema.

use serde_json::Value;

use super::tool::ToolSpec;
use super::validate::Violation;

/// A known mix-up: `tool` (or `*` for any) was given `field`, which it does not have.
struct MixUp {
    tool: &'static str,
    field: &'static str,
    hint: &'static str,
}

const MIX_UPS: &[MixUp] = &[
    MixUp {
        tool: "search_files",
        field: "include",
        hint: "search_files has no `include`: put the glob in `pattern` (e.g. \"**/*.rs\"), or use grep with `include` to search inside the matching files",
    },
    MixUp {
        tool: "search_files",
        field: "query",
        hint: "search_files matches paths with a glob in `pattern`; to search file contents use grep",
    },
    MixUp {
        tool: "search_files",
        field: "glob",
        hint: "put the glob in `pattern` (e.g. \"src/**/*.ts\")",
    },
    MixUp {
        tool: "grep",
        field: "glob",
        hint: "grep takes the file filter as `include` (e.g. \"*.rs\" or \"src/**/*.{ts,tsx}\")",
    },
    MixUp {
        tool: "grep",
        field: "regex",
        hint: "the regular expression goes in `pattern`",
    },
    MixUp {
        tool: "grep",
        field: "query",
        hint: "the regular expression goes in `pattern`",
    },
    MixUp {
        tool: "grep",
        field: "-i",
        hint: "use `case_insensitive: true`",
    },
    MixUp {
        tool: "grep",
        field: "file_path",
        hint: "grep takes a file or directory as `path`",
    },
    MixUp {
        tool: "read_file",
        field: "path",
        hint: "read_file takes the file as `file_path`",
    },
    MixUp {
        tool: "read_file",
        field: "start_line",
        hint: "use `offset` (the 1-based first line to show) and `limit` (how many lines)",
    },
    MixUp {
        tool: "read_file",
        field: "end_line",
        hint: "use `offset` (the 1-based first line to show) and `limit` (how many lines)",
    },
    MixUp {
        tool: "read_file",
        field: "line_range",
        hint: "use `offset` (the 1-based first line to show) and `limit` (how many lines)",
    },
    MixUp {
        tool: "list_dir",
        field: "recursive",
        hint: "list_dir takes `depth` (1 = only the directory's own entries)",
    },
    MixUp {
        tool: "list_dir",
        field: "dir_path",
        hint: "list_dir takes the directory as `path`",
    },
    MixUp {
        tool: "*",
        field: "case_sensitive",
        hint: "use `case_insensitive` (true to ignore case)",
    },
];

fn specific_hint(tool: &str, field: &str) -> Option<&'static str> {
    MIX_UPS
        .iter()
        .find(|m| (m.tool == tool || m.tool == "*") && m.field == field)
        .map(|m| m.hint)
}

/// `file_path (string, required), offset (integer), …` from a schema.
pub(crate) fn field_summary(schema: &Value) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return "(no fields)".into();
    };
    let mut fields: Vec<(bool, String)> = props
        .iter()
        .map(|(name, prop)| {
            let ty = describe_type(prop);
            let is_required = required.contains(&name.as_str());
            let req = if is_required { ", required" } else { "" };
            (!is_required, format!("{name} ({ty}{req})"))
        })
        .collect();
    // Required fields first, then the schema's own order.
    fields.sort_by_key(|(optional, _)| *optional);
    fields
        .into_iter()
        .map(|(_, f)| f)
        .collect::<Vec<_>>()
        .join(", ")
}

fn describe_type(prop: &Value) -> String {
    if let Some(options) = prop.get("enum").and_then(Value::as_array) {
        return options
            .iter()
            .map(|o| {
                o.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| o.to_string())
            })
            .collect::<Vec<_>>()
            .join(" | ");
    }
    match prop.get("type") {
        Some(Value::String(t)) if t == "array" => {
            let item = prop
                .get("items")
                .map(describe_type)
                .unwrap_or_else(|| "any".into());
            format!("array of {item}")
        }
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" | "),
        _ => "any".into(),
    }
}

fn schema_at<'a>(schema: &'a Value, pointer: &str) -> &'a Value {
    let mut node = schema;
    for part in pointer.split('/').skip(1) {
        let next = if part.chars().all(|c| c.is_ascii_digit()) && !part.is_empty() {
            node.get("items")
        } else {
            node.get("properties").and_then(|p| p.get(part))
        };
        match next {
            Some(n) => node = n,
            None => return node,
        }
    }
    node
}

/// Names from `candidates` close to `name`, best first.
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let lower = name.to_ascii_lowercase();
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .map(|c| {
            let cl = c.to_ascii_lowercase();
            let mut score = strsim::jaro_winkler(&lower, &cl);
            if cl.contains(&lower) || lower.contains(&cl) {
                score = score.max(0.9);
            }
            (score, c)
        })
        .filter(|(score, _)| *score >= 0.75)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(3)
        .map(|(_, c)| c.to_string())
        .collect()
}

/// The next step for a call that failed validation.
pub(crate) fn recovery_hint(spec: &ToolSpec, violations: &[Violation]) -> String {
    let mut steps: Vec<String> = Vec::new();
    for v in violations {
        if let Violation::Unknown { at, fields } = v {
            let node = schema_at(&spec.input_schema, at);
            let valid: Vec<&str> = node
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            for field in fields {
                if at.is_empty()
                    && let Some(h) = specific_hint(&spec.name, field)
                {
                    steps.push(h.to_string());
                    continue;
                }
                let near = nearest(field, valid.iter().copied());
                if let Some(best) = near.first() {
                    steps.push(format!("`{field}` is not a field: did you mean `{best}`?"));
                } else {
                    steps.push(format!("remove `{field}`"));
                }
            }
        }
    }
    let summary = field_summary(&spec.input_schema);
    steps.push(format!("{} takes: {summary}", spec.name));
    steps.dedup();
    steps.join("; ")
}

/// Well-known tool names from other harnesses, mapped to ours.
const ALIASES: &[(&str, &str)] = &[
    ("read", "read_file"),
    ("view", "read_file"),
    ("cat", "read_file"),
    ("ls", "list_dir"),
    ("list_directory", "list_dir"),
    ("glob", "search_files"),
    ("find", "search_files"),
    ("find_files", "search_files"),
    ("rg", "grep"),
    ("search", "grep"),
    ("bash", "shell_run"),
    ("shell", "shell_run"),
    ("str_replace", "edit"),
    ("write_file", "write"),
    ("skill", "load_skill"),
];

/// Suggestions for an unknown tool name: aliases first, then similar names.
pub(crate) fn suggest_tools<'a>(
    name: &str,
    known: impl IntoIterator<Item = &'a str> + Clone,
) -> Vec<String> {
    let lower = name.to_ascii_lowercase();
    let mut out: Vec<String> = ALIASES
        .iter()
        .filter(|(alias, _)| *alias == lower)
        .map(|(_, target)| target.to_string())
        .filter(|t| known.clone().into_iter().any(|k| k == t))
        .collect();
    for n in nearest(name, known) {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_finds_typos_and_substrings() {
        let names = ["read_file", "list_dir", "grep", "search_files"];
        assert_eq!(nearest("read_fil", names)[0], "read_file");
        assert_eq!(nearest("readfile", names)[0], "read_file");
        assert!(nearest("zzz", names).is_empty());
    }

    #[test]
    fn aliases_from_other_harnesses_are_suggested() {
        let names = ["read_file", "list_dir", "grep", "search_files"];
        assert_eq!(suggest_tools("Glob", names)[0], "search_files");
        assert_eq!(suggest_tools("Read", names)[0], "read_file");
    }
}
