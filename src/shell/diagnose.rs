//! Diagnoses of a task from what it printed and how it is doing: a prompt waiting for
//! input, network failures, a missing program, output still flowing or silence. Each
//! comes with the next step.

use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Diagnosis {
    pub kind: &'static str,
    pub message: String,
    pub next_step: String,
}

fn d(kind: &'static str, message: impl Into<String>, next: impl Into<String>) -> Diagnosis {
    Diagnosis {
        kind,
        message: message.into(),
        next_step: next.into(),
    }
}

/// What the task's state says.
pub struct Facts<'a> {
    pub task_id: &'a str,
    pub running: bool,
    pub exit_code: Option<i32>,
    /// The end of the output, as text.
    pub tail: &'a str,
    /// Seconds since the last output (None: nothing printed yet).
    pub silent_for: Option<f64>,
    pub elapsed: f64,
    pub interactive: &'a [String],
    pub long_running: &'a [String],
    pub is_pty: bool,
}

const NETWORK: &[(&str, &str)] = &[
    ("Could not resolve host", "name resolution failed"),
    (
        "Temporary failure in name resolution",
        "name resolution failed",
    ),
    ("Name or service not known", "name resolution failed"),
    ("getaddrinfo", "name resolution failed"),
    ("Network is unreachable", "the network is unreachable"),
    ("No route to host", "the network is unreachable"),
    ("Connection refused", "the connection was refused"),
    ("Connection timed out", "the connection timed out"),
];

pub fn diagnose(f: &Facts) -> Vec<Diagnosis> {
    let mut out = Vec::new();
    let last_line = f
        .tail
        .trim_end_matches(['\n', '\r'])
        .rsplit('\n')
        .next()
        .unwrap_or("");
    let line = last_line.trim_end();
    let lower = line.to_ascii_lowercase();
    if f.running {
        let prompt = lower.ends_with("password:")
            || lower.contains("passphrase")
            || lower.ends_with("[y/n]")
            || lower.ends_with("[y/n]?")
            || lower.ends_with("(yes/no)?")
            || lower.ends_with("(yes/no)")
            || lower.ends_with("(yes/no/[fingerprint])?")
            || last_line.ends_with("? ")
            || last_line.ends_with("> ")
            || last_line.ends_with(": ") && lower.contains("enter");
        if prompt {
            let how = if f.is_pty {
                format!(
                    "answer with write_stdin {{\"task_id\": \"{}\", \"input\": \"…\", \"keys\": [\"enter\"]}}",
                    f.task_id
                )
            } else {
                format!(
                    "answer with write_stdin {{\"task_id\": \"{}\", \"input\": \"…\\n\"}}; for a password, run it with mode \"pty\" or make the command non-interactive",
                    f.task_id
                )
            };
            out.push(d(
                "prompt",
                format!("the command is waiting for input: `{}`", line.trim()),
                how,
            ));
        }
    }
    for (needle, what) in NETWORK {
        if f.tail.contains(needle) {
            out.push(d(
                "network",
                format!("{what} (`{needle}` in the output)"),
                "the sandbox or machine may have no network for this host; use a local mirror or cache, or ask the user",
            ));
            break;
        }
    }
    if let Some(line) = f
        .tail
        .lines()
        .rev()
        .find(|l| l.starts_with("whalebox: denied "))
    {
        out.push(d(
            "denied_by_policy",
            format!("the exec policy refused a program: `{}`", line.trim()),
            "use an allowed program, or ask the user to allow it in the policy file",
        ));
    }
    if f.exit_code == Some(127) {
        let program = f
            .tail
            .lines()
            .rev()
            .find_map(|l| {
                let l = l.trim();
                l.strip_suffix(": command not found")
                    .or_else(|| l.strip_suffix(": not found"))
                    .map(|p| p.rsplit(": ").next().unwrap_or(p).to_string())
                    .or_else(|| {
                        l.split_once("command not found: ")
                            .map(|(_, p)| p.trim().to_string())
                    })
            })
            .unwrap_or_else(|| "requested".into());
        out.push(d(
            "not_found",
            format!("exit 127: the program `{program}` was not found"),
            "check the name and PATH (`command -v NAME`), or install it",
        ));
    }
    if f.exit_code == Some(126) {
        out.push(d(
            "not_executable",
            "exit 126: the program could not be executed (permissions, or not a binary)",
            "check its mode with `ls -l`, or run it through its interpreter",
        ));
    }
    if f.running && out.iter().all(|x| x.kind != "prompt") {
        let wait = format!(
            "shell_wait {{\"task_id\": \"{}\"}} to keep waiting, or shell_cancel to stop it",
            f.task_id
        );
        match f.silent_for {
            Some(s) if s < 2.0 => out.push(d(
                "producing_output",
                format!("still running after {:.1} s and still printing", f.elapsed),
                wait,
            )),
            Some(s) => out.push(d(
                "silent",
                format!("still running after {:.1} s; no output for {s:.1} s", f.elapsed),
                if f.interactive.is_empty() {
                    wait
                } else {
                    format!(
                        "{} may be waiting for input: look with shell_wait, answer with write_stdin, or shell_cancel",
                        f.interactive.join(", ")
                    )
                },
            )),
            None => out.push(d(
                "silent",
                format!("still running after {:.1} s with no output yet", f.elapsed),
                wait,
            )),
        }
        if !f.long_running.is_empty() {
            out.push(d(
                "long_running",
                format!("{} commonly takes a while", f.long_running.join(", ")),
                "let it run in the background and check with shell_wait",
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts<'a>(tail: &'a str, running: bool, code: Option<i32>) -> Facts<'a> {
        Facts {
            task_id: "t1",
            running,
            exit_code: code,
            tail,
            silent_for: Some(5.0),
            elapsed: 10.0,
            interactive: &[],
            long_running: &[],
            is_pty: false,
        }
    }

    #[test]
    fn prompts_network_and_missing_programs_are_named() {
        let kinds = |f: &Facts| diagnose(f).into_iter().map(|d| d.kind).collect::<Vec<_>>();
        assert_eq!(
            kinds(&facts("[sudo] password for me: \nPassword:", true, None)),
            ["prompt"]
        );
        assert_eq!(kinds(&facts("Continue? [y/N]", true, None)), ["prompt"]);
        assert_eq!(
            kinds(&facts("Are you sure (yes/no)? ", true, None)),
            ["prompt"]
        );
        assert_eq!(
            kinds(&facts(
                "curl: (6) Could not resolve host: example.com\n",
                false,
                Some(6)
            )),
            ["network"]
        );
        let nf = diagnose(&facts("zsh:1: command not found: frob\n", false, Some(127)));
        assert!(nf[0].message.contains("`frob`"), "{nf:?}");
        let nf = diagnose(&facts(
            "bash: line 1: frob: command not found\n",
            false,
            Some(127),
        ));
        assert!(nf[0].message.contains("`frob`"), "{nf:?}");
        assert_eq!(kinds(&facts("building…\n", true, None)), ["silent"]);
        assert!(kinds(&facts("done\n", false, Some(0))).is_empty());
    }
}

/// Whether the output says a signal was refused (`kill`, `pkill`, `killall`: "operation
/// not permitted").
pub fn signal_refused(tail: &str) -> bool {
    tail.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.contains("operation not permitted")
            && (l.contains("kill") || l.contains("signal"))
            && !l.contains("ptrace")
    })
}

/// Whether the output says a debugger's ptrace() was refused (strace, gdb, ltrace).
pub fn ptrace_refused(tail: &str) -> bool {
    tail.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        (l.contains("ptrace") && l.contains("operation not permitted"))
            || l.contains("could not trace the inferior")
    })
}

/// Absolute paths named in permission errors (`EACCES`/`EPERM` as tools print them),
/// most recent last, without repeats:
///
/// - one line: `zsh:1: permission denied: /p`, `touch: cannot touch '/p': Permission
///   denied`, `cat: /p: Permission denied`, `PermissionError: … Permission denied: '/p'`,
///   Go's `mkdir /p: permission denied`, cargo's `failed to write cache, path: /p, error:
///   Permission denied (os error 13)`, npm 9's `EACCES: permission denied, mkdir '/p'`;
/// - a chain whose last line has no path (cargo, and Rust programs using anyhow):
///   ``failed to create directory `/p` `` … `Caused by:` … `Permission denied (os error
///   13)`: the nearest quoted path above;
/// - npm 10+: `npm error code EACCES` then `npm error path /p` a few lines below;
/// - pip: `The directory '/p' or its parent directory is not owned or is not writable by
///   the current user. The cache has been disabled.`
pub fn denied_paths(tail: &str) -> Vec<String> {
    let lines: Vec<&str> = tail.lines().collect();
    let mut out: Vec<String> = Vec::new();
    let mut push = |p: &str| {
        let p = p.trim_end_matches([',', ';', '.', ':']);
        if p.starts_with('/') && !p.contains(' ') && !out.iter().any(|o| o == p) {
            out.push(p.to_string());
        }
    };
    for (i, line) in lines.iter().enumerate() {
        let lower = line.to_ascii_lowercase();
        if let Some(code) = npm_field(line, "code")
            && (code == "EACCES" || code == "EPERM")
        {
            if let Some(path) = lines[i + 1..]
                .iter()
                .take(8)
                .find_map(|l| npm_field(l, "path"))
            {
                push(path);
            }
            continue;
        }
        let denied =
            lower.contains("permission denied") || lower.contains("operation not permitted");
        if !(denied || lower.contains("is not writable")) {
            continue;
        }
        let mut found = quoted(line);
        // Then the `PATH: Permission denied` and `permission denied: PATH` forms (the
        // other `: ` segments are program names and line numbers); a segment may be
        // `mkdir /p` (Go's `op path: error`) or `/p, error` (cargo's cache warning).
        let parts: Vec<&str> = line.split(": ").map(str::trim).collect();
        for (i, part) in parts.iter().enumerate() {
            let p = part.to_ascii_lowercase();
            if p.starts_with("permission denied") || p.starts_with("operation not permitted") {
                let neighbours = [
                    i.checked_sub(1).map(|j| parts[j]),
                    parts.get(i + 1).copied(),
                ];
                for n in neighbours.into_iter().flatten() {
                    if let Some(word) = n.split_whitespace().rev().find(|w| w.starts_with('/')) {
                        found.push(word);
                    }
                }
            }
        }
        let bare = {
            let t = lower.trim_start();
            t.starts_with("permission denied") || t.starts_with("operation not permitted")
        };
        if found.is_empty() && bare {
            // The end of a chain: the path is on the nearest line above that quotes one.
            if let Some(p) = lines[..i]
                .iter()
                .rev()
                .take(8)
                .find_map(|l| quoted(l).into_iter().rev().find(|p| p.starts_with('/')))
            {
                found.push(p);
            }
        }
        for p in found {
            // A directory refused on the way to the one the tool wanted (Go: "build
            // cache at /h/.cache/go-build: mkdir /h/.cache: permission denied"): name
            // the one it wanted, which says whose it is.
            let wanted = line
                .split_whitespace()
                .map(|w| w.trim_matches(|c| "'\"`‘’,;:".contains(c)))
                .filter(|w| w.len() > p.len() && w.starts_with(p) && w[p.len()..].starts_with('/'))
                .max_by_key(|w| w.len());
            push(wanted.unwrap_or(p));
        }
    }
    // A program the exec policy refused fails with EACCES too, but that is the policy,
    // which says so in its own line ("whalebox: denied /usr/bin/touch: …"), not a fence.
    let refused_by_policy: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("whalebox: denied "))
        .filter_map(|rest| rest.split(": ").next())
        .collect();
    out.retain(|p| !refused_by_policy.contains(&p.as_str()));
    out
}

/// Quoted strings in `line`: '…', "…", `…` and ‘…’ (coreutils in UTF-8).
fn quoted(line: &str) -> Vec<&str> {
    let mut found = Vec::new();
    for q in ['\'', '"', '`', '‘'] {
        let close = if q == '‘' { '’' } else { q };
        let mut rest = line;
        while let Some(i) = rest.find(q) {
            let after = &rest[i + q.len_utf8()..];
            let Some(j) = after.find(close) else { break };
            found.push(&after[..j]);
            rest = &after[j + close.len_utf8()..];
        }
    }
    found
}

/// `npm error FIELD VALUE` (npm 10+) or `npm ERR! FIELD VALUE` (npm 9): the value.
fn npm_field<'a>(line: &'a str, field: &str) -> Option<&'a str> {
    let rest = line
        .strip_prefix("npm error ")
        .or_else(|| line.strip_prefix("npm ERR! "))?;
    rest.strip_prefix(field)?
        .strip_prefix(' ')
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod denied_paths_tests {
    use super::denied_paths;

    #[test]
    fn finds_the_paths_tools_name_in_permission_errors() {
        let tail = "zsh:1: permission denied: /a/b\n\
                    touch: cannot touch '/tmp/x': Permission denied\n\
                    ls: cannot open directory '/root': Permission denied\n\
                    cat: /etc/shadow: Permission denied\n\
                    PermissionError: [Errno 13] Permission denied: '/srv/y'\n\
                    not an error: /usr/bin\n\
                    /usr/bin/bash: line 1: /w/made: Permission denied\n\
                    zsh:1: permission denied: relative/path\n";
        assert_eq!(
            denied_paths(tail),
            vec![
                "/a/b",
                "/tmp/x",
                "/root",
                "/etc/shadow",
                "/srv/y",
                "/w/made"
            ]
        );
    }

    /// What the toolchains really print when Landlock refuses their caches (captured
    /// by running them under `whalebox run` without the matching preset).
    #[test]
    fn finds_the_paths_toolchains_name_when_their_caches_are_refused() {
        let cargo = "    Updating `local` index\n\
            warning: failed to write cache, path: /h/.cargo/registry/index/127.0.0.1-530a/.cache/wb/de/wbdep, error: Permission denied (os error 13)\n\
            error: failed to download replaced source registry `crates-io`\n\
            \n\
            Caused by:\n\
            \x20 failed to create directory `/h/.cargo/registry/cache/127.0.0.1-530a`\n\
            \n\
            Caused by:\n\
            \x20 Permission denied (os error 13)\n";
        assert_eq!(
            denied_paths(cargo),
            [
                "/h/.cargo/registry/index/127.0.0.1-530a/.cache/wb/de/wbdep",
                "/h/.cargo/registry/cache/127.0.0.1-530a"
            ]
        );
        let config = "error: failed to parse manifest at `/ws/Cargo.toml`\n\nCaused by:\n  \
            could not load Cargo configuration\n\nCaused by:\n  failed to read configuration \
            file `/h/.cargo/config.toml`\n\nCaused by:\n  Permission denied (os error 13)\n";
        assert_eq!(denied_paths(config), ["/h/.cargo/config.toml"]);
        let policy = "whalebox: denied /usr/bin/touch: rule at p.toml:5: no\n\
                      bash: line 1: /usr/bin/touch: Permission denied\n";
        assert!(
            denied_paths(policy).is_empty(),
            "{:?}",
            denied_paths(policy)
        );
        let npm10 = "npm error code EACCES\nnpm error syscall mkdir\nnpm error path /h/.npm/_cacache\n\
            npm error errno -13\nnpm error\nnpm error Your cache folder contains root-owned files\n";
        assert_eq!(denied_paths(npm10), ["/h/.npm/_cacache"]);
        let npm9 = "npm ERR! code EACCES\nnpm ERR! syscall mkdir\nnpm ERR! path /root/.npm/_cacache\n\
            npm ERR! errno -13\nnpm ERR! Error: EACCES: permission denied, mkdir '/root/.npm/_cacache'\n";
        assert_eq!(denied_paths(npm9), ["/root/.npm/_cacache"]);
        let go = "failed to initialize build cache at /h/.cache/go-build: mkdir /h/.cache/go-build: permission denied\n\
            go: could not create module cache: mkdir /h/go: permission denied\n";
        assert_eq!(denied_paths(go), ["/h/.cache/go-build", "/h/go"]);
        let go_fresh_home = "failed to initialize build cache at /h/.cache/go-build: mkdir /h/.cache: permission denied\n";
        assert_eq!(denied_paths(go_fresh_home), ["/h/.cache/go-build"]);
        let pip = "WARNING: The directory '/h/.cache/pip' or its parent directory is not owned or \
            is not writable by the current user. The cache has been disabled.\n";
        assert_eq!(denied_paths(pip), ["/h/.cache/pip"]);
        // A bare "Permission denied" with nothing quoted above names nothing.
        assert!(denied_paths("building\nPermission denied\n").is_empty());
        // npm failing for another reason names nothing.
        assert!(denied_paths("npm error code E404\nnpm error path /x\n").is_empty());
    }
}
