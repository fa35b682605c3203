//! A command line as the policy sees it: words (for examples and the CLI), the program
//! and arguments a rule's pattern is matched against, and the wrappers seen through
//! (`env`, `sudo`, `nice`, `timeout` … run the program they name).

use crate::Rule;

/// Whitespace-separated words, with simple single or double quotes (for examples and
/// the CLI; real execs arrive as argv already split by the shell).
pub fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

/// Whether `rule` matches the program and its arguments: its first position against the
/// basename (or the whole path, for an absolute pattern), the rest as a prefix.
// Called for every rule on every exec; inlined into `evaluate_exec` across the module
// boundary (without it, decisions were 12% slower: bench/revisions.sh).
#[inline]
pub(crate) fn rule_matches(rule: &Rule, program: &str, args: &[String]) -> bool {
    let base = program.rsplit('/').next().unwrap_or(program);
    let first = &rule.pattern[0];
    if !first
        .iter()
        .any(|p| p == base || (p.starts_with('/') && p == program))
    {
        return false;
    }
    let rest = &rule.pattern[1..];
    let prefix = |args: &[String]| {
        rest.len() <= args.len()
            && rest
                .iter()
                .zip(args)
                .all(|(alts, a)| alts.iter().any(|p| p == a))
    };
    // As written, or past the tool's global options (`git -C . push` is a `git push`).
    prefix(args) || prefix(crate::program::subcommand_args(base, args))
}

pub(crate) fn show(program: &str, args: &[String]) -> String {
    let base = program.rsplit('/').next().unwrap_or(program);
    std::iter::once(base.to_string())
        .chain(args.iter().map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_alphanumeric() || "-_./=:,@%+".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        }))
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) enum Unwrapped {
    Inner(String, Vec<String>),
    Forbidden(String),
    NotAWrapper,
}

const BOUNDARY_VARS: &[&str] = &[
    "WHALEBOX_GATE",
    "WHALEBOX_GATE_SOCKET",
    "WHALEBOX_GATE_KERNEL",
];

/// The command a transparent wrapper runs, if `program` is one.
pub(crate) fn unwrap(program: &str, args: &[String]) -> Unwrapped {
    let base = program.rsplit('/').next().unwrap_or(program);
    // Options that take a value, per wrapper.
    let (valued, positional_before): (&[&str], usize) = match base {
        "env" => (
            &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
            0,
        ),
        "nice" => (&["-n", "--adjustment"], 0),
        "nohup" | "time" | "command" | "builtin" => (&[], 0),
        "timeout" => (&["-s", "--signal", "-k", "--kill-after"], 1),
        "stdbuf" => (&["-i", "-o", "-e"], 0),
        "xargs" => (
            &[
                "-n",
                "-I",
                "-i",
                "-d",
                "-P",
                "-L",
                "-l",
                "-s",
                "-a",
                "-E",
                "-e",
                "--max-args",
                "--delimiter",
                "--max-procs",
                "--arg-file",
            ],
            0,
        ),
        "sudo" | "doas" => (
            &[
                "-u", "--user", "-g", "--group", "-C", "-D", "-h", "-p", "-r", "-t", "-U",
            ],
            0,
        ),
        _ => return Unwrapped::NotAWrapper,
    };
    let mut i = 0;
    let mut skip_positional = positional_before;
    while i < args.len() {
        let a = &args[i];
        if base == "env" {
            if a == "-i" || a == "--ignore-environment" || a == "-" {
                return Unwrapped::Forbidden(
                    "env -i would clear the exec boundary's variables".into(),
                );
            }
            if (a == "-u" || a == "--unset")
                && args
                    .get(i + 1)
                    .is_some_and(|v| BOUNDARY_VARS.contains(&v.as_str()))
            {
                return Unwrapped::Forbidden("env -u of an exec boundary variable".into());
            }
            if let Some(v) = a
                .strip_prefix("--unset=")
                .or_else(|| a.strip_prefix("-u").filter(|v| !v.is_empty()))
                && BOUNDARY_VARS.contains(&v)
            {
                return Unwrapped::Forbidden("env -u of an exec boundary variable".into());
            }
            if a.contains('=') && !a.starts_with('-') {
                if BOUNDARY_VARS
                    .iter()
                    .any(|v| a.starts_with(&format!("{v}=")))
                {
                    return Unwrapped::Forbidden(
                        "env may not change the exec boundary's variables".into(),
                    );
                }
                i += 1;
                continue;
            }
        }
        if a == "--" {
            i += 1;
            break;
        }
        if a.starts_with('-') && a.len() > 1 {
            i += if valued.contains(&a.as_str()) { 2 } else { 1 };
            continue;
        }
        if skip_positional > 0 {
            skip_positional -= 1;
            i += 1;
            continue;
        }
        break;
    }
    match args.get(i) {
        Some(inner) => Unwrapped::Inner(inner.clone(), args[i + 1..].to_vec()),
        None => Unwrapped::NotAWrapper,
    }
}
