//! Exec policies: versioned TOML files of rules that decide, per program and argv,
//! whether an exec is allowed, asked for, or denied. The strictest matching rule wins
//! (deny > ask > allow); no match → the file's `default`. Transparent wrappers (`env`,
//! `timeout`, `xargs`, …) are unwrapped and the inner command is judged too. Every rule's
//! `match` / `not_match` examples are checked at load, and a policy that fails to load
//! stops startup (fail closed).
//!
//! The model: a [`Policy`] is loaded once, from a file with [`Policy::load`] (which
//! follows its `include`s), from TOML text with [`Policy::from_toml`], or as the
//! [`Policy::embedded`] default; a [`PolicyError`] names the `file:line` at fault. Each
//! exec is then judged by [`Policy::evaluate`] (the program as resolved, argv as given)
//! into a [`Verdict`]: the [`Decision`], a reason naming the deciding rule's `file:line`
//! and justification, and every rule that [`Matched`]. The file's `[[network]]` rules
//! land in [`Policy::network`] and are judged per host and port by [`network::judge`];
//! [`classify`] is the shell-command classifier that `allow_read_only` relies on.
//!
//! ```rust
//! use whalebox_policy::{Decision, Policy, network, words};
//!
//! let policy = Policy::from_toml(
//!     r#"
//! version = 1
//! default = "ask"
//! allow_read_only = true
//!
//! [[rule]]
//! pattern = ["git", ["push", "reset"]]
//! decision = "deny"
//! justification = "history is rewritten by a person"
//! match = ["git push origin main", "git reset --hard"]
//! not_match = ["git status"]
//!
//! [[network]]
//! hosts = ["*.example.com"]
//! ports = [443]
//! decision = "allow"
//! match = ["docs.example.com"]
//! "#,
//!     "team.toml",
//! )?;
//!
//! // A rule decides, and says where it is written; wrappers do not hide the command.
//! let verdict = policy.evaluate("/usr/bin/git", &words("git push origin main"));
//! assert_eq!(verdict.decision, Decision::Deny);
//! assert_eq!(verdict.reason, "rule at team.toml:7: history is rewritten by a person");
//! let wrapped = policy.evaluate("env", &words("env GIT_PAGER=cat git reset --hard"));
//! assert_eq!(wrapped.decision, Decision::Deny);
//!
//! // No rule matches: a certainly read-only command runs, anything else asks.
//! assert_eq!(policy.evaluate("ls", &words("ls -la")).decision, Decision::Allow);
//! assert_eq!(policy.evaluate("rm", &words("rm -r build")).decision, Decision::Ask);
//!
//! // Hosts: the strictest matching network rule, if any.
//! let rule = network::judge(&policy.network, "docs.example.com", 443);
//! assert_eq!(rule.map(|r| r.decision), Some(Decision::Allow));
//! assert!(network::judge(&policy.network, "example.org", 443).is_none());
//!
//! // A rule whose examples disagree with it never loads.
//! let bad = "version = 1\n[[rule]]\npattern = [\"rm\"]\ndecision = \"deny\"\nmatch = [\"ls\"]";
//! let error = Policy::from_toml(bad, "broken.toml").unwrap_err();
//! assert_eq!(error.to_string(), "broken.toml:3: the rule does not match its example `ls`");
//! # Ok::<(), whalebox_policy::PolicyError>(())
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub mod classify;
mod command;
mod file;
pub mod network;
pub mod program;
pub use command::words;
use command::{Unwrapped, rule_matches, show, unwrap};
use file::{load_file, parse};
pub use network::NetworkRule;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask the person (elicitation, or the terminal); `on_ask` decides when nobody can answer.
    Ask,
    /// Refuse it.
    Deny,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

/// The JSON Schema of a policy file, for editors (`whalebox policy schema`).
pub fn json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(file::PolicyFile)).unwrap_or_default()
}

/// One rule, with where it was written.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rule {
    /// Alternatives for each position: the program, then the arguments as a prefix.
    pub pattern: Vec<Vec<String>>,
    pub decision: Decision,
    pub justification: Option<String>,
    /// `file:line` of the rule's pattern.
    pub source: String,
}

/// A loaded policy. Serializable, so the decision server can hand the very policy it
/// loaded to the kernel gate of each task (which settles `allow` verdicts itself).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Policy {
    pub default: Decision,
    /// The default for execs made by programs other than the task's shell (the kernel
    /// exec gate sees those); rules apply to them as to the shell's own.
    #[serde(default = "allow")]
    pub default_nested: Decision,
    pub allow_read_only: bool,
    /// `allow_anonymous_exec`: a program with no file name (memfd, deleted, O_TMPFILE)
    /// may run. Off by default: no rule can say what it is.
    #[serde(default)]
    pub allow_anonymous_exec: bool,
    pub rules: Vec<Rule>,
    /// `[[network]]` rules, for the network fence.
    #[serde(default)]
    pub network: Vec<NetworkRule>,
    /// The files it was loaded from, the top one first.
    pub files: Vec<PathBuf>,
}

/// A rule that matched, as reported.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Matched {
    pub source: String,
    pub decision: Decision,
    pub justification: Option<String>,
    /// The command the rule matched (an unwrapped inner command, or the exec itself).
    pub command: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub decision: Decision,
    pub reason: String,
    pub matched: Vec<Matched>,
}

/// The embedded policy used when the profile names none: everything is allowed except
/// what asks for credentials, which needs a person.
pub const EMBEDDED_DEFAULT: &str = include_str!("default.toml");

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PolicyError(pub String);

impl Policy {
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let mut files = Vec::new();
        let mut rules = Vec::new();
        let mut network = Vec::new();
        let top = load_file(path, &mut files, &mut rules, &mut network, 0)?;
        Ok(Policy::assemble(top, rules, network, files))
    }

    /// A policy from TOML text held in memory; `name` stands for the file in rule sources
    /// and errors (`name:line`). It cannot `include` other files (there is no directory
    /// to resolve them against): [`Policy::load`] reads a policy from disk.
    pub fn from_toml(text: &str, name: &str) -> Result<Policy, PolicyError> {
        let mut rules = Vec::new();
        let mut network = Vec::new();
        let top = parse(
            text,
            name,
            None,
            &mut Vec::new(),
            &mut rules,
            &mut network,
            0,
        )?;
        Ok(Policy::assemble(top, rules, network, Vec::new()))
    }

    /// The policy a top file's settings and every file's rules make, the defaults filled in.
    fn assemble(
        top: file::Top,
        rules: Vec<Rule>,
        network: Vec<NetworkRule>,
        files: Vec<PathBuf>,
    ) -> Policy {
        Policy {
            default: top.0.unwrap_or(Decision::Ask),
            allow_read_only: top.1.unwrap_or(false),
            default_nested: top.2.unwrap_or(Decision::Allow),
            allow_anonymous_exec: top.3.unwrap_or(false),
            rules,
            network,
            files,
        }
    }

    pub fn embedded() -> Policy {
        Policy::from_toml(EMBEDDED_DEFAULT, "<embedded default policy>")
            .expect("the embedded policy loads")
    }

    /// Judge one exec: `program` as the shell resolved it, `argv` as given (`argv[0]` first).
    pub fn evaluate(&self, program: &str, argv: &[String]) -> Verdict {
        self.evaluate_exec(program, argv, false)
    }

    /// Judge one exec; `nested`: a program other than the task's shell makes it, so
    /// `default_nested` applies when no rule matches.
    pub fn evaluate_exec(&self, program: &str, argv: &[String], nested: bool) -> Verdict {
        let mut matched = Vec::new();
        let mut strictest: Option<Decision> = None;
        let mut forced: Option<(Decision, String)> = None;
        let mut commands = vec![(program.to_string(), argv.get(1..).unwrap_or(&[]).to_vec())];
        let mut i = 0;
        while i < commands.len() && i < 16 {
            let (prog, args) = commands[i].clone();
            for rule in &self.rules {
                if rule_matches(rule, &prog, &args) {
                    strictest = strictest.max(Some(rule.decision));
                    matched.push(Matched {
                        source: rule.source.clone(),
                        decision: rule.decision,
                        justification: rule.justification.clone(),
                        command: show(&prog, &args),
                    });
                }
            }
            // The program a loader or a multi-call binary runs is judged as well.
            let base = prog.rsplit('/').next().unwrap_or(&prog);
            if program::is_loader(base)
                && let Some(inner) = program::loader_inner(&args)
            {
                commands.push(inner);
            }
            if program::is_multicall(base) {
                let argv = if i == 0 {
                    argv.to_vec()
                } else {
                    std::iter::once(prog.clone()).chain(args.clone()).collect()
                };
                commands.extend(program::multicall_inner(&argv));
            }
            match unwrap(&prog, &args) {
                Unwrapped::Inner(p, a) => commands.push((p, a)),
                Unwrapped::Forbidden(why) => forced = Some((Decision::Deny, why)),
                Unwrapped::NotAWrapper => {}
            }
            i += 1;
        }
        if !self.allow_anonymous_exec && program::is_anonymous(program) {
            forced = Some((
                Decision::Deny,
                format!(
                    "{program} has no file name (a memfd or a deleted file): no rule can say \
                     what it is; run a program from a file, or set allow_anonymous_exec = true \
                     in the policy"
                ),
            ));
        }
        if let Some((d, why)) = forced {
            // Built in, not from a file: the boundary guards its own variables.
            matched.push(Matched {
                source: "whalebox (built-in boundary rule)".into(),
                decision: d,
                justification: Some(why.clone()),
                command: show(program, argv.get(1..).unwrap_or(&[])),
            });
            return Verdict {
                decision: d,
                reason: why,
                matched,
            };
        }
        if let Some(d) = strictest {
            let rule = matched
                .iter()
                .find(|m| m.decision == d)
                .expect("a rule matched");
            let why = rule
                .justification
                .clone()
                .unwrap_or_else(|| "no justification given".into());
            return Verdict {
                decision: d,
                reason: format!("rule at {}: {why}", rule.source),
                matched,
            };
        }
        if nested {
            return Verdict {
                decision: self.default_nested,
                reason: format!(
                    "no rule matched; the policy's default for execs made by other programs \
                     (default_nested) is {}",
                    self.default_nested.as_str()
                ),
                matched,
            };
        }
        if self.allow_read_only && self.default == Decision::Ask {
            let line = commands.iter().map(|(p, a)| show(p, a)).collect::<Vec<_>>();
            if line
                .iter()
                .all(|l| classify::read_only(l) == classify::ReadOnly::Yes)
            {
                return Verdict {
                    decision: Decision::Allow,
                    reason: "read-only command (allow_read_only)".into(),
                    matched,
                };
            }
        }
        Verdict {
            decision: self.default,
            reason: format!(
                "no rule matched; the policy's default is {}",
                self.default.as_str()
            ),
            matched,
        }
    }

    /// Judge a command line written as words (`git status`): for examples and the CLI.
    pub fn evaluate_words(&self, words: &[String]) -> Option<Verdict> {
        let (prog, _) = words.split_first()?;
        Some(self.evaluate(prog, words))
    }
}

fn allow() -> Decision {
    Decision::Allow
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(text: &str) -> Result<Policy, PolicyError> {
        Policy::from_toml(text, "p.toml")
    }

    #[test]
    fn network_rules_load_check_their_examples_and_the_strictest_wins() {
        let p = policy(
            "version = 1\n\
             [[network]]\nhosts = [\"*.crates.io\", \"crates.io\"]\ndecision = \"allow\"\n\
             match = [\"static.crates.io\", \"crates.io:443\"]\nnot_match = [\"crates.io.evil.example\"]\n\
             [[network]]\nhosts = [\"evil.crates.io\"]\nports = [443]\ndecision = \"deny\"\n\
             justification = \"not ours\"\n",
        )
        .unwrap();
        assert_eq!(p.network.len(), 2);
        let judged = |h: &str, port| network::judge(&p.network, h, port).map(|r| r.decision);
        assert_eq!(judged("index.crates.io", 443), Some(Decision::Allow));
        assert_eq!(judged("evil.crates.io", 443), Some(Decision::Deny));
        assert_eq!(judged("evil.crates.io", 80), Some(Decision::Allow));
        assert_eq!(judged("example.org", 443), None);
        let deny = network::judge(&p.network, "evil.crates.io", 443).unwrap();
        assert_eq!(deny.describe(), "p.toml:8 (deny: not ours)");

        let bad = policy(
            "version = 1\n[[network]]\nhosts = [\"github.com\"]\ndecision = \"allow\"\nmatch = [\"api.github.com\"]\n",
        )
        .unwrap_err();
        assert!(
            bad.0
                .contains("does not match its example `api.github.com`"),
            "{bad}"
        );
        let bad = policy(
            "version = 1\n[[network]]\nhosts = [\"*.github.com\"]\ndecision = \"allow\"\nnot_match = [\"github.com\"]\n",
        )
        .unwrap_err();
        assert!(
            bad.0.contains("matches `github.com`, listed in not_match"),
            "{bad}"
        );
        let bad =
            policy("version = 1\n[[network]]\nhosts = [\"https://x.org\"]\ndecision = \"allow\"\n")
                .unwrap_err();
        assert!(bad.0.contains("host pattern"), "{bad}");
    }

    fn decide(p: &Policy, line: &str) -> Decision {
        p.evaluate_words(&words(line)).unwrap().decision
    }

    const P: &str = r#"
version = 1
default = "ask"
allow_read_only = true

[[rule]]
pattern = ["git", ["status", "log", "diff", "show"]]
decision = "allow"
justification = "read-only git"
match = ["git status", "git log --oneline -5"]
not_match = ["git push origin main"]

[[rule]]
pattern = ["git", "push"]
decision = "deny"
justification = "pushing is for people"

[[rule]]
pattern = ["touch"]
decision = "deny"

[[rule]]
pattern = ["cargo"]
decision = "allow"
"#;

    #[test]
    fn the_strictest_matching_rule_wins_and_wrappers_are_seen_through() {
        let p = policy(P).unwrap();
        assert_eq!(decide(&p, "git status"), Decision::Allow);
        assert_eq!(decide(&p, "/usr/bin/git log -1"), Decision::Allow);
        assert_eq!(decide(&p, "git push origin main"), Decision::Deny);
        assert_eq!(decide(&p, "git commit -m x"), Decision::Ask);
        assert_eq!(decide(&p, "cargo build"), Decision::Allow);
        assert_eq!(decide(&p, "ls -la"), Decision::Allow, "read-only");
        assert_eq!(decide(&p, "rm -rf x"), Decision::Ask);
        for wrapped in [
            "env FOO=1 touch x",
            "nice -n 5 touch x",
            "timeout 5 touch x",
            "timeout -s KILL 5 touch x",
            "xargs -n1 touch",
            "nohup touch x",
            "sudo -u root touch x",
            "stdbuf -o0 touch x",
            "env nice timeout 3 touch x",
            "env -i /bin/true",
            "env -u WHALEBOX_GATE_SOCKET ls",
            "env WHALEBOX_GATE=/bin/true ls",
        ] {
            assert_eq!(decide(&p, wrapped), Decision::Deny, "{wrapped}");
        }
        let v = p.evaluate_words(&words("env git push")).unwrap();
        assert!(v.reason.contains("pushing is for people"), "{v:?}");
        assert!(v.matched.iter().any(|m| m.source == "p.toml:14"), "{v:?}");
    }

    #[test]
    fn the_program_that_runs_is_judged_not_only_the_name_it_is_called_by() {
        let p = policy(P).unwrap();
        for line in [
            "/lib64/ld-linux-x86-64.so.2 /usr/bin/touch x",
            "ld.so --library-path /lib --preload y.so touch x",
            "busybox touch x",
            "/usr/bin/toybox touch x",
            "env busybox touch x",
            "git -C . push",
            "git -c k=v push origin",
            "git --git-dir=.git --no-pager push",
            "git --config-env k=V -p push",
        ] {
            assert_eq!(decide(&p, line), Decision::Deny, "{line}");
        }
        // busybox called with argv[0] = "touch" runs touch.
        let v = p.evaluate("/bin/busybox", &words("touch x"));
        assert_eq!(v.decision, Decision::Deny, "{v:?}");
        assert!(v.matched.iter().any(|m| m.command == "touch x"), "{v:?}");
        // The read-only ones stay allowed however the options come.
        assert_eq!(decide(&p, "git -C sub status"), Decision::Allow);
    }

    #[test]
    fn bad_policies_fail_with_file_and_line() {
        let e = policy("version = 1\n[[rule]]\npattern = [\"ls\"]\ndecision = \"allow\"\nmatch = [\"cat x\"]\n").unwrap_err();
        assert!(e.0.contains("p.toml:3") && e.0.contains("cat x"), "{e}");
        let e = policy("version = 1\n[[rule]]\npattern = [\"ls\"]\ndecision = \"allow\"\nnot_match = [\"ls -la\"]\n").unwrap_err();
        assert!(e.0.contains("not_match"), "{e}");
        let e = policy("version = 2\n").unwrap_err();
        assert!(e.0.contains("version 2"), "{e}");
        let e = policy("version = 1\ndefualt = \"allow\"\n").unwrap_err();
        assert!(e.0.starts_with("p.toml:2"), "{e}");
        let e = policy("version = 1\n[[rule]]\npattern = []\ndecision = \"allow\"\n").unwrap_err();
        assert!(e.0.contains("p.toml:3"), "{e}");
    }

    #[test]
    fn the_embedded_policy_loads() {
        let p = Policy::embedded();
        assert_eq!(
            p.evaluate_words(&words("ls")).unwrap().decision,
            Decision::Allow
        );
        assert_eq!(
            p.evaluate_words(&words("sudo ls")).unwrap().decision,
            Decision::Ask
        );
    }
}
