//! What can be told about a command line before it runs, without running it:
//! whether it needs a terminal (auto mode picks a PTY then), which of its programs are
//! interactive or long-running (for diagnoses), and whether it is certainly read-only.
//!
//! The read-only verdict is conservative: `yes` only for a plain command line (no
//! expansion, redirection, chaining or substitution) whose program is on a known list of
//! inspecting programs with arguments that cannot make it write. Everything else is
//! "cannot tell", never "no" and never a guess.

use serde::Serialize;

/// Programs that ask for credentials on the terminal.
const CREDENTIALS: &[&str] = &[
    "sudo", "su", "doas", "ssh", "scp", "sftp", "passwd", "kinit", "login",
];
/// Full-screen or terminal-bound programs.
const TERMINAL_UIS: &[&str] = &[
    "vi", "vim", "nvim", "nvi", "nano", "emacs", "pico", "joe", "mcedit", "less", "more", "most",
    "man", "top", "htop", "btop", "watch", "tmux", "screen", "mc", "ranger", "fzf", "tig",
];
/// Interpreters and clients that start a REPL when given no script.
const INTERPRETERS: &[&str] = &[
    "python",
    "python3",
    "python2",
    "node",
    "irb",
    "ruby",
    "lua",
    "ghci",
    "R",
    "julia",
    "php",
    "perl",
    "bash",
    "sh",
    "zsh",
    "fish",
    "psql",
    "mysql",
    "sqlite3",
    "redis-cli",
    "mongosh",
    "ipython",
    "bpython",
    "deno",
    "bun",
    "gdb",
    "lldb",
];
/// Programs that commonly run for a long time.
const LONG: &[&str] = &[
    "make",
    "ninja",
    "cmake",
    "gradle",
    "gradlew",
    "mvn",
    "bazel",
    "sbt",
    "meson",
    "pytest",
    "tox",
    "jest",
    "vitest",
    "ctest",
    "wget",
    "curl",
    "rsync",
    "sleep",
    "docker",
    "podman",
    "apt",
    "apt-get",
    "dnf",
    "yum",
    "pacman",
    "brew",
    "nix",
    "nix-build",
    "conda",
    "uv",
    "poetry",
    "bundle",
    "terraform",
    "tsc",
    "webpack",
    "vite",
];
/// Words that run the next word as the program.
const PREFIXES: &[&str] = &["env", "time", "nohup", "nice", "command", "exec", "builtin"];

/// One simple command of a line: its program's base name and its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Simple {
    pub program: String,
    pub args: Vec<String>,
}

/// Split a command line into simple commands (at `;`, `&`, `|`, `&&`, `||`, newlines,
/// parentheses and backquotes), roughly honouring quotes. Good enough for classifying;
/// the shell itself is what runs it.
pub fn simple_commands(line: &str) -> Vec<Simple> {
    let mut out = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let flush_word = |words: &mut Vec<String>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    let flush_cmd = |out: &mut Vec<Simple>, words: &mut Vec<String>| {
        if let Some(s) = to_simple(std::mem::take(words)) {
            out.push(s);
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                word.push(n);
                            }
                        }
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            ';' | '&' | '|' | '\n' | '(' | ')' | '`' | '{' | '}' => {
                flush_word(&mut words, &mut word, &mut in_word);
                flush_cmd(&mut out, &mut words);
            }
            '$' if chars.peek() == Some(&'(') => {
                chars.next();
                flush_word(&mut words, &mut word, &mut in_word);
                flush_cmd(&mut out, &mut words);
            }
            '<' | '>' => {
                // A redirection's target is not an argument.
                flush_word(&mut words, &mut word, &mut in_word);
                while matches!(chars.peek(), Some('>' | '<' | '&' | '|')) {
                    chars.next();
                }
                while chars.peek() == Some(&' ') {
                    chars.next();
                }
                while chars
                    .peek()
                    .is_some_and(|n| !n.is_whitespace() && !";&|()".contains(*n))
                {
                    chars.next();
                }
            }
            c if c.is_whitespace() => flush_word(&mut words, &mut word, &mut in_word),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    flush_word(&mut words, &mut word, &mut in_word);
    flush_cmd(&mut out, &mut words);
    out
}

fn to_simple(words: Vec<String>) -> Option<Simple> {
    let mut it = words.into_iter().peekable();
    // Leading assignments (`FOO=1 cmd`) and prefixes (`env`, `time`, …) are skipped.
    while let Some(w) = it.peek() {
        let assignment = w.split_once('=').is_some_and(|(k, _)| {
            !k.is_empty() && k.chars().all(|c| c.is_alphanumeric() || c == '_')
        });
        let prefix = PREFIXES.contains(&w.as_str());
        if assignment || prefix {
            it.next();
        } else {
            break;
        }
    }
    let first = it.next()?;
    let program = first.rsplit('/').next().unwrap_or(&first).to_string();
    Some(Simple {
        program,
        args: it.collect(),
    })
}

/// What a command line's programs suggest about running it.
#[derive(Debug, Default, Clone, Serialize, PartialEq)]
pub struct Profile {
    /// Why it needs a terminal, when it does.
    pub needs_terminal: Option<String>,
    /// Programs that wait for a person (credentials, REPLs, editors).
    pub interactive: Vec<String>,
    /// Programs that commonly run long (builds, installs, downloads).
    pub long_running: Vec<String>,
}

pub fn profile(line: &str) -> Profile {
    let mut p = Profile::default();
    for Simple { program, args } in simple_commands(line) {
        let prog = program.as_str();
        let reason = if CREDENTIALS.contains(&prog) {
            Some(format!("`{prog}` may ask for credentials"))
        } else if TERMINAL_UIS.contains(&prog) {
            Some(format!("`{prog}` needs a terminal"))
        } else if bare_interpreter(prog, &args) {
            Some(format!(
                "`{prog}` without a script starts an interactive session"
            ))
        } else if prog == "git" && git_opens_editor(&args) {
            Some("this git command opens an editor".to_string())
        } else {
            None
        };
        if let Some(r) = reason {
            if !p.interactive.contains(&program) {
                p.interactive.push(program.clone());
            }
            p.needs_terminal.get_or_insert(r);
        }
        if (LONG.contains(&prog) || long_subcommand(prog, &args))
            && !p.long_running.contains(&program)
        {
            p.long_running.push(program);
        }
    }
    p
}

fn first_positional(args: &[String]) -> Option<&str> {
    args.iter()
        .find(|a| !a.starts_with('-'))
        .map(String::as_str)
}

fn long_subcommand(prog: &str, args: &[String]) -> bool {
    let sub = first_positional(args);
    match prog {
        "cargo" => matches!(
            sub,
            Some("build" | "test" | "run" | "install" | "bench" | "check" | "clippy" | "doc")
        ),
        "npm" | "pnpm" | "yarn" => {
            matches!(
                sub,
                Some("install" | "i" | "ci" | "add" | "test" | "run" | "build")
            ) || (prog == "yarn" && sub.is_none())
        }
        "pip" | "pip3" => matches!(sub, Some("install" | "download" | "wheel")),
        "go" => matches!(sub, Some("build" | "test" | "install" | "get" | "run")),
        "git" => matches!(sub, Some("clone" | "fetch" | "pull" | "push" | "gc")),
        _ => false,
    }
}

fn has_flag(args: &[String], flags: &[&str]) -> bool {
    args.iter().any(|a| {
        flags
            .iter()
            .any(|f| a == f || a.starts_with(&format!("{f}=")))
    })
}

/// `git` subcommands that open an editor unless told otherwise.
fn git_opens_editor(args: &[String]) -> bool {
    match first_positional(args) {
        Some("commit") => !has_flag(
            args,
            &[
                "-m",
                "--message",
                "-F",
                "--file",
                "--no-edit",
                "-C",
                "--reuse-message",
                "--fixup",
            ],
        ),
        Some("rebase") => has_flag(args, &["-i", "--interactive"]),
        Some("add") => has_flag(
            args,
            &["-p", "--patch", "-i", "--interactive", "-e", "--edit"],
        ),
        Some("tag") => {
            has_flag(args, &["-a", "--annotate", "-s", "--sign"])
                && !has_flag(args, &["-m", "--message", "-F", "--file"])
        }
        Some("merge") => has_flag(args, &["--edit", "-e"]),
        _ => false,
    }
}

/// An interpreter given no script, no `-c`/`-e`/`-m`, or asked for `-i`.
fn bare_interpreter(prog: &str, args: &[String]) -> bool {
    if !INTERPRETERS.contains(&prog) {
        return false;
    }
    let script_flags = [
        "-c",
        "-e",
        "-m",
        "--eval",
        "-p",
        "--print",
        "-f",
        "--command",
        "--file",
    ];
    let runs_something = args
        .iter()
        .any(|a| !a.starts_with('-') || script_flags.contains(&a.as_str()));
    !runs_something || args.iter().any(|a| a == "-i")
}

/// The read-only verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum ReadOnly {
    Yes,
    CannotTell { reason: String },
}

fn cannot(reason: impl Into<String>) -> ReadOnly {
    ReadOnly::CannotTell {
        reason: reason.into(),
    }
}

/// Programs that only inspect, whatever their (checked) arguments.
const INSPECTORS: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "pwd",
    "echo",
    "printf",
    "true",
    "false",
    "stat",
    "file",
    "du",
    "df",
    "which",
    "whoami",
    "id",
    "uname",
    "env",
    "printenv",
    "date",
    "hostname",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "diff",
    "cmp",
    "tree",
    "fd",
    "find",
    "git",
    "sort",
    "uniq",
    "cut",
    "tr",
    "nl",
    "od",
    "xxd",
    "hexdump",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "test",
    "[",
    "type",
    "ps",
    "uptime",
    "free",
    "lsblk",
    "jq",
    "column",
    "seq",
    "yes",
    "sleep",
];

/// Is `line` certainly read-only? See the module comment.
pub fn read_only(line: &str) -> ReadOnly {
    let words = match plain_words(line.trim()) {
        Ok(w) => w,
        Err(reason) => return cannot(reason),
    };
    let Some((prog, args)) = words.split_first() else {
        return cannot("empty command");
    };
    if prog.contains('/') {
        return cannot("a program given by path is not on the read-only list");
    }
    if !INSPECTORS.contains(&prog.as_str()) {
        return cannot(format!("`{prog}` is not on the read-only list"));
    }
    match arguments_read_only(prog, args) {
        Ok(()) => ReadOnly::Yes,
        Err(reason) => cannot(reason),
    }
}

/// Words of a line with nothing the shell would expand or interpret.
fn plain_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            ';' | '&' | '|' => return Err(format!("`{c}` chains or backgrounds commands")),
            '<' | '>' => return Err("a redirection may write a file".into()),
            '$' | '`' => return Err(format!("`{c}` expands or substitutes")),
            '(' | ')' | '{' | '}' => return Err(format!("`{c}` groups commands or expands")),
            '\n' | '\r' => return Err("a line break separates commands".into()),
            '~' | '#' if !in_word => {
                return Err(format!("`{c}` at the start of a word expands or comments"));
            }
            '=' if words.is_empty() => {
                return Err("`=` in the first word is an assignment".into());
            }
            '*' | '?' | '[' | ']' | '!' => {
                return Err(format!(
                    "unquoted `{c}` may expand (glob, history, home, assignment, comment)"
                ));
            }
            '\\' => return Err("backslash escapes are not analysed".into()),
            '\'' => {
                in_word = true;
                let mut closed = false;
                for q in chars.by_ref() {
                    if q == '\'' {
                        closed = true;
                        break;
                    }
                    word.push(q);
                }
                if !closed {
                    return Err("an unclosed quote".into());
                }
            }
            '"' => {
                in_word = true;
                let mut closed = false;
                for q in chars.by_ref() {
                    match q {
                        '"' => {
                            closed = true;
                            break;
                        }
                        '$' | '`' | '\\' | '!' => {
                            return Err(format!("`{q}` inside double quotes expands"));
                        }
                        _ => word.push(q),
                    }
                }
                if !closed {
                    return Err("an unclosed quote".into());
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// The first of `args` that is one of the options `shorts` (single letters: `-o`, also
/// inside a cluster or with its value attached, `-uo`, `-ofile`) or `longs` (names
/// without dashes: `--output`, `--output=f`, and any abbreviation, `--outp=f`, which
/// getopt_long and git accept). Conservative: a letter inside another option's
/// attached value counts too.
fn find_option(args: &[String], shorts: &str, longs: &[&str]) -> Option<String> {
    args.iter()
        .find(|a| {
            if let Some(long) = a.strip_prefix("--") {
                let name = long.split('=').next().unwrap_or_default();
                !name.is_empty() && longs.iter().any(|l| l.starts_with(name))
            } else if let Some(cluster) = a.strip_prefix('-') {
                cluster.chars().any(|c| shorts.contains(c))
            } else {
                false
            }
        })
        .cloned()
}

/// xxd's operands (`xxd [options] [infile [outfile]]`), the values of its options skipped.
fn xxd_operands(args: &[String]) -> usize {
    const VALUED: &[&str] = &[
        "-c",
        "-cols",
        "-g",
        "-groupsize",
        "-l",
        "-len",
        "-o",
        "-offset",
        "-s",
        "-seek",
        "-n",
        "-name",
    ];
    let mut n = 0;
    let mut args = args.iter();
    while let Some(a) = args.next() {
        if VALUED.contains(&a.as_str()) {
            args.next();
        } else if a == "-" || !a.starts_with('-') {
            n += 1;
        }
    }
    n
}

fn arguments_read_only(prog: &str, args: &[String]) -> Result<(), String> {
    let flag = |names: &[&str]| {
        args.iter()
            .find(|a| {
                names.iter().any(|n| {
                    a.as_str() == *n || (n.starts_with("--") && a.starts_with(&format!("{n}=")))
                })
            })
            .cloned()
    };
    match prog {
        "find" => match flag(&[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
            "-fls",
        ]) {
            Some(f) => Err(format!("find {f} runs or writes")),
            None => Ok(()),
        },
        "fd" => match find_option(args, "xX", &["exec", "exec-batch"]) {
            Some(f) => Err(format!("fd {f} runs commands")),
            None => Ok(()),
        },
        "sort" => match find_option(args, "o", &["output", "compress-program"]) {
            Some(f) => Err(format!("sort {f} writes a file or runs a program")),
            None => Ok(()),
        },
        "rg" => match flag(&["--pre"]) {
            Some(f) => Err(format!("rg {f} runs a program")),
            None => Ok(()),
        },
        "date" => match find_option(args, "s", &["set"]) {
            Some(f) => Err(format!("date {f} sets the clock")),
            None => Ok(()),
        },
        "tree" => match find_option(args, "oR", &[]) {
            Some(f) => Err(format!("tree {f} writes files")),
            None => Ok(()),
        },
        "file" => match find_option(args, "C", &["compile"]) {
            Some(f) => Err(format!("file {f} writes a compiled magic file")),
            None => Ok(()),
        },
        "xxd" if xxd_operands(args) > 1 => Err("xxd INFILE OUTFILE writes a file".into()),
        // Only the options that print: a NAME, `-F FILE` (`-` is stdin), `-b` … set it.
        "hostname"
            if args.iter().any(|a| {
                ![
                    "-s",
                    "--short",
                    "-f",
                    "--fqdn",
                    "--long",
                    "-d",
                    "--domain",
                    "-i",
                    "--ip-address",
                    "-I",
                    "--all-ip-addresses",
                    "-a",
                    "--alias",
                    "-A",
                    "--all-fqdns",
                ]
                .contains(&a.as_str())
            }) =>
        {
            Err("hostname with a name, a file or other options sets the host name".into())
        }
        "env" | "printenv" if !args.is_empty() && prog == "env" => {
            Err("env with arguments runs a program".into())
        }
        "uniq"
            if args
                .iter()
                .filter(|a| *a == "-" || !a.starts_with('-'))
                .count()
                > 1 =>
        {
            Err("uniq INPUT OUTPUT writes a file".into())
        }
        "git" => git_read_only(args),
        _ => Ok(()),
    }
}

fn git_read_only(args: &[String]) -> Result<(), String> {
    if let Some(f) = args.iter().take_while(|a| a.starts_with('-')).next() {
        return Err(format!(
            "git {f} before the subcommand may change what runs"
        ));
    }
    let Some((sub, rest)) = args.split_first() else {
        return Ok(());
    };
    // git takes abbreviated long options (`--outp=f` is `--output=f`); `-O` is `git grep
    // --open-files-in-pager`, which runs the pager named.
    let risky = [
        "output",
        "ext-diff",
        "textconv",
        "exec",
        "upload-pack",
        "open-files-in-pager",
    ];
    if let Some(f) = rest
        .iter()
        .find(|a| *a == "-c" || *a == "-o")
        .cloned()
        .or_else(|| find_option(rest, "O", &risky))
    {
        return Err(format!("git {sub} {f} may write or run programs"));
    }
    match sub.as_str() {
        "status" | "log" | "diff" | "show" | "blame" | "rev-parse" | "ls-files" | "shortlog"
        | "describe" | "grep" | "cat-file" | "ls-tree" => Ok(()),
        // Alone, these list; `git stash` alone is `git stash push`, which writes.
        "branch" | "tag" | "remote" if rest.is_empty() => Ok(()),
        "stash" if rest.first().is_some_and(|a| a == "list") => Ok(()),
        _ => Err(format!("git {sub} is not on the read-only list")),
    }
}

#[cfg(test)]
mod tests;
