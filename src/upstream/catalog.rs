//! The catalog of deferred upstream tools and `tool_search`'s query language:
//! `select:NAME,NAME` picks exact qualified names; `+term` marks a term every match must
//! contain; other words are ranked by BM25 over each tool's qualified name, the name
//! split into words, its description, and its parameters' names and descriptions.
//! (BM25 is a few lines of arithmetic over our own fields; the crates that offer it bring
//! tokenizers and stemmers tuned for prose, not for `snake_case` tool names.)

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

/// One upstream tool as the catalog holds it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Entry {
    /// `mcp__SERVER__TOOL`.
    pub name: String,
    pub server: String,
    /// The upstream's own name for it.
    #[serde(skip)]
    pub upstream_name: String,
    pub description: String,
    pub input_schema: Value,
    /// The upstream's annotations (for tools listed directly).
    #[serde(skip)]
    pub annotations: Value,
}

/// Words of `text`: lower case, split at anything not alphanumeric and at camelCase
/// humps (`listPullRequests` → list, pull, requests).
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = c.is_lowercase() || c.is_numeric();
            cur.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The text a tool is found by, with the name weighted above the description.
fn document(e: &Entry) -> Vec<String> {
    let mut doc = Vec::new();
    // The name (qualified and split) counts three times: a match there matters most.
    for _ in 0..3 {
        doc.push(e.name.to_lowercase());
        doc.extend(words(&e.upstream_name));
        doc.extend(words(&e.server));
    }
    doc.extend(words(&e.description));
    if let Some(props) = e.input_schema["properties"].as_object() {
        for (k, v) in props {
            doc.extend(words(k));
            doc.extend(words(v["description"].as_str().unwrap_or_default()));
        }
    }
    doc
}

/// A parsed query.
#[derive(Debug, PartialEq)]
pub enum Query {
    Select(Vec<String>),
    Terms {
        required: Vec<String>,
        ranked: Vec<String>,
    },
}

pub fn parse(query: &str) -> Query {
    let q = query.trim();
    if let Some(names) = q.strip_prefix("select:") {
        return Query::Select(
            names
                .split(',')
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty())
                .collect(),
        );
    }
    let mut required = Vec::new();
    let mut ranked = Vec::new();
    for token in q.split_whitespace() {
        match token.strip_prefix('+') {
            Some(t) => {
                let w = words(t);
                ranked.extend(w.iter().cloned());
                required.extend(w);
            }
            None => ranked.extend(words(token)),
        }
    }
    Query::Terms { required, ranked }
}

/// The entries that match `query`, best first, at most `max`.
pub fn search<'a>(entries: &'a [Entry], query: &Query, max: usize) -> Vec<&'a Entry> {
    match query {
        Query::Select(names) => names
            .iter()
            .filter_map(|n| {
                entries
                    .iter()
                    .find(|e| &e.name == n || e.upstream_name == *n)
            })
            .take(max)
            .collect(),
        Query::Terms { required, ranked } => {
            let docs: Vec<Vec<String>> = entries.iter().map(document).collect();
            let n = docs.len() as f64;
            let avg = docs.iter().map(Vec::len).sum::<usize>() as f64 / n.max(1.0);
            let mut df: HashMap<&str, usize> = HashMap::new();
            for d in &docs {
                let mut seen: Vec<&str> = d.iter().map(String::as_str).collect();
                seen.sort_unstable();
                seen.dedup();
                for w in seen {
                    *df.entry(w).or_default() += 1;
                }
            }
            let (k1, b) = (1.2, 0.75);
            let mut scored: Vec<(f64, usize)> = docs
                .iter()
                .enumerate()
                .filter(|(_, d)| {
                    required
                        .iter()
                        .all(|r| d.iter().any(|w| w.contains(r.as_str())))
                })
                .map(|(i, d)| {
                    let len = d.len() as f64;
                    let score: f64 = ranked
                        .iter()
                        .map(|t| {
                            let tf = d.iter().filter(|w| *w == t).count() as f64;
                            if tf == 0.0 {
                                return 0.0;
                            }
                            let df = *df.get(t.as_str()).unwrap_or(&0) as f64;
                            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                            idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len / avg))
                        })
                        .sum();
                    (score, i)
                })
                .filter(|(s, _)| *s > 0.0 || (ranked.is_empty() && !required.is_empty()))
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            scored
                .into_iter()
                .take(max)
                .map(|(_, i)| &entries[i])
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(server: &str, name: &str, description: &str, params: Value) -> Entry {
        Entry {
            name: format!("mcp__{server}__{name}"),
            server: server.into(),
            upstream_name: name.into(),
            description: description.into(),
            input_schema: json!({"type": "object", "properties": params}),
            annotations: Value::Null,
        }
    }

    #[test]
    fn words_split_names() {
        assert_eq!(words("listPullRequests"), ["list", "pull", "requests"]);
        assert_eq!(words("create_issue-v2"), ["create", "issue", "v2"]);
    }

    #[test]
    fn ranking_required_terms_and_select() {
        let entries = vec![
            entry(
                "github",
                "create_issue",
                "Create a new issue in a repository.",
                json!({"title": {"description": "Issue title"}}),
            ),
            entry(
                "github",
                "list_pull_requests",
                "List pull requests of a repository.",
                json!({}),
            ),
            entry(
                "slack",
                "post_message",
                "Post a message to a channel.",
                json!({"channel": {}}),
            ),
            entry(
                "jira",
                "create_ticket",
                "Create a Jira issue (ticket).",
                json!({}),
            ),
        ];
        let top = search(&entries, &parse("create issue"), 5);
        assert_eq!(top[0].name, "mcp__github__create_issue");
        assert!(top.iter().any(|e| e.name == "mcp__jira__create_ticket"));
        let top = search(&entries, &parse("+jira issue"), 5);
        assert_eq!(top.len(), 1);
        assert_eq!(top[0].name, "mcp__jira__create_ticket");
        let picked = search(
            &entries,
            &parse("select:mcp__slack__post_message, list_pull_requests"),
            5,
        );
        assert_eq!(picked.len(), 2);
        assert!(search(&entries, &parse("kubernetes"), 5).is_empty());
    }
}
