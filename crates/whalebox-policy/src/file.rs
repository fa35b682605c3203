//! Reading policy files: the format as written (its doc comments are the descriptions
//! editors show, `whalebox policy schema`), includes, and each rule's `match` and
//! `not_match` examples checked as the file loads, with the file and line of a failure.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::command::{rule_matches, words};
use crate::{Decision, NetworkRule, PolicyError, Rule, network};

/// A policy file as written. (The doc comments are the descriptions editors show:
/// `whalebox policy schema`.)
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "whalebox exec policy")]
pub(crate) struct PolicyFile {
    /// The format version: 1.
    #[schemars(range(min = 1, max = 1))]
    version: u32,
    /// The decision when no rule matches (default: ask).
    default: Option<Decision>,
    /// More policy files whose rules join these, relative to this file.
    #[serde(default)]
    include: Vec<String>,
    /// With default = "ask": allow what the read-only classifier is sure of.
    allow_read_only: Option<bool>,
    /// The decision when no rule matches an exec that a program other than the task's
    /// shell makes (a compiler's cc1, a build script, a test binary, what `make` or
    /// `python3 -c` starts). Default: allow. Rules bind every exec either way.
    default_nested: Option<Decision>,
    /// Whether a program with no file name (a memfd, a deleted or O_TMPFILE file) may
    /// run: off unless said, since no name rule can judge it.
    allow_anonymous_exec: Option<bool>,
    /// The rules; every matching rule counts and the strictest wins (deny > ask > allow).
    #[serde(default)]
    rule: Vec<RuleFile>,
    /// Network rules: hosts the commands may reach (or must not, or ask about), joined
    /// with the profile's `[network]` lists; the strictest wins.
    #[serde(default)]
    network: Vec<network::NetworkRuleFile>,
}

/// One pattern position: a word, or a list of alternatives.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum Token {
    One(String),
    Any(Vec<String>),
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    /// The program (basename or absolute path), then an argv prefix; a list at a
    /// position means any of them: ["git", ["push", "reset"]].
    #[schemars(with = "Vec<Token>", length(min = 1))]
    pattern: toml::Spanned<Vec<Token>>,
    decision: Decision,
    /// Why: shown with every denial and question.
    justification: Option<String>,
    /// Commands this rule must match, checked when the file loads.
    #[serde(default, rename = "match")]
    matches: Vec<String>,
    /// Commands this rule must not match, checked when the file loads.
    #[serde(default)]
    not_match: Vec<String>,
}

pub(crate) type Top = (
    Option<Decision>,
    Option<bool>,
    Option<Decision>,
    Option<bool>,
);

pub(crate) fn load_file(
    path: &Path,
    files: &mut Vec<PathBuf>,
    rules: &mut Vec<Rule>,
    network: &mut Vec<NetworkRule>,
    depth: usize,
) -> Result<Top, PolicyError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| PolicyError(format!("{}: cannot read the policy: {e}", path.display())))?;
    files.push(path.to_path_buf());
    parse(
        &text,
        &path.display().to_string(),
        path.parent(),
        files,
        rules,
        network,
        depth,
    )
}

pub(crate) fn parse(
    text: &str,
    name: &str,
    dir: Option<&Path>,
    files: &mut Vec<PathBuf>,
    rules: &mut Vec<Rule>,
    network: &mut Vec<NetworkRule>,
    depth: usize,
) -> Result<Top, PolicyError> {
    if depth > 8 {
        return Err(PolicyError(format!(
            "{name}: includes nest deeper than 8 (a cycle?)"
        )));
    }
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let file: PolicyFile = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(s.start)).unwrap_or(1);
        PolicyError(format!("{name}:{line}: {}", e.message().trim()))
    })?;
    if file.version != 1 {
        return Err(PolicyError(format!(
            "{name}: version {} is not supported (use version = 1)",
            file.version
        )));
    }
    for inc in &file.include {
        let Some(dir) = dir else {
            return Err(PolicyError(format!(
                "{name}: include needs a policy file on disk"
            )));
        };
        load_file(&dir.join(inc), files, rules, network, depth + 1)?;
    }
    for r in file.rule {
        let line = line_of(r.pattern.span().start);
        let source = format!("{name}:{line}");
        let pattern: Vec<Vec<String>> = r
            .pattern
            .into_inner()
            .into_iter()
            .map(|t| match t {
                Token::One(s) => vec![s],
                Token::Any(v) => v,
            })
            .collect();
        if pattern.is_empty() || pattern.iter().any(|alts| alts.is_empty()) {
            return Err(PolicyError(format!(
                "{source}: a pattern needs at least a program, and no empty alternatives"
            )));
        }
        let rule = Rule {
            pattern,
            decision: r.decision,
            justification: r.justification,
            source: source.clone(),
        };
        for example in &r.matches {
            let words = words(example);
            if words.is_empty() || !rule_matches(&rule, &words[0], &words[1..]) {
                return Err(PolicyError(format!(
                    "{source}: the rule does not match its example `{example}`"
                )));
            }
        }
        for example in &r.not_match {
            let words = words(example);
            if !words.is_empty() && rule_matches(&rule, &words[0], &words[1..]) {
                return Err(PolicyError(format!(
                    "{source}: the rule matches `{example}`, listed in not_match"
                )));
            }
        }
        rules.push(rule);
    }
    for r in file.network {
        let source = format!("{name}:{}", line_of(r.hosts.span().start));
        network.push(network::load(r, source)?);
    }
    Ok((
        file.default,
        file.allow_read_only,
        file.default_nested,
        file.allow_anonymous_exec,
    ))
}
