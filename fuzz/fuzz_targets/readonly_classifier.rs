//! The read-only command classifier (`policy::classify::read_only`, which lets
//! `allow_read_only` policies run a command without asking): it must never say `yes` to
//! a command that can write (a file, the clock, the host name, the repository) or run
//! another program.
//!
//! Commands come from a grammar: a writer (redirections, pipes into `tee`, `sed -i`,
//! `rm`, `git commit`, `git stash`, `find -delete`/`-exec`/`-fprint`, `sort -o` in every
//! spelling (clustered `-uo`, attached `-ofile`, abbreviated `--outp=`), `xxd IN OUT`,
//! `tree -o`, `date -s`, `git grep -O`, `file -C`, `fd -x`, command substitution,
//! chaining, assignments …) with its words quoted or not, padded with read-only words.
//! Raw bytes are classified too, and every other classifier (`simple_commands`,
//! `profile`) runs on them.
//!
//! Oracle: never a panic; a grammar command with a writer in it is never `yes`.

#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use whalebox::policy::classify::{ReadOnly, profile, read_only, simple_commands};

/// Commands that can write or run something else, as words (`F`: a file name).
const WRITERS: &[&[&str]] = &[
    &["rm", "F"],
    &["mv", "F", "G"],
    &["cp", "F", "G"],
    &["touch", "F"],
    &["sed", "-i", "s/a/b/", "F"],
    &["tee", "F"],
    &["find", ".", "-delete"],
    &["find", ".", "-exec", "rm", "{}", "+"],
    &["find", ".", "-fprint", "F"],
    &["find", ".", "-fls", "F"],
    &["find", ".", "-okdir", "rm", "{}", ";"],
    &["git", "commit", "-m", "x"],
    &["git", "stash"],
    &["git", "stash", "push"],
    &["git", "checkout", "F"],
    &["git", "-c", "core.pager=sh", "log"],
    &["git", "log", "--output=F"],
    &["git", "diff", "--output", "F"],
    &["git", "diff", "--outp=F"],
    &["git", "log", "--ext-diff"],
    &["git", "log", "--ext-d"],
    &["git", "grep", "-O", "x"],
    &["git", "grep", "-Ovim", "x"],
    &["git", "grep", "--open-files-in-pager=vim", "x"],
    &["git", "grep", "--open-files", "x"],
    &["sort", "-o", "F", "G"],
    &["sort", "-oF", "G"],
    &["sort", "-uo", "F", "G"],
    &["sort", "--output=F", "G"],
    &["sort", "--outp=F", "G"],
    &["sort", "--out", "F", "G"],
    &["sort", "--compress-program=sh", "G"],
    &["xxd", "F", "G"],
    &["xxd", "-r", "F", "G"],
    &["tree", "-o", "F"],
    &["tree", "-oF"],
    &["tree", "-R", "-H", "."],
    &["date", "-s", "now"],
    &["date", "-snow"],
    &["date", "--set=now"],
    &["date", "--se=now"],
    &["hostname", "x"],
    &["hostname", "-F", "F"],
    &["uniq", "F", "G"],
    &["rg", "--pre", "sh", "x"],
    &["rg", "--pre=sh", "x"],
    &["fd", "-x", "rm"],
    &["fd", "-xrm"],
    &["fd", "--exec", "rm"],
    &["fd", "-X", "rm"],
    &["file", "-C", "-m", "F"],
    &["file", "--compile", "-m", "F"],
    &["env", "rm", "F"],
    &["truncate", "-s0", "F"],
    &["dd", "of=F"],
];

/// Read-only words and commands to pad with.
const READERS: &[&[&str]] = &[
    &["ls", "-la"],
    &["cat", "F"],
    &["grep", "-rn", "x", "."],
    &["git", "status"],
    &["git", "log", "--oneline"],
    &["echo", "hi"],
    &["wc", "-l", "F"],
];

/// Constructs that write around any command.
const AROUND: &[(&str, &str)] = &[
    ("", " > F"),
    ("", " >> F"),
    ("", " 2>F"),
    ("", " &> F"),
    ("", " >| F"),
    ("", " | tee F"),
    ("", "; rm F"),
    ("", " && rm F"),
    ("", " || rm F"),
    ("", " & rm F"),
    ("", "\nrm F"),
    ("", "\rrm F"),
    ("echo $(", ")"),
    ("echo `", "`"),
    ("cat <(", ")"),
    ("(", ")"),
    ("{ ", "; }"),
    ("X=1 ", ""),
    ("", " $(rm F)"),
    ("", " \"$(rm F)\""),
    ("", " `rm F`"),
    ("", " ${X:=y}"),
    ("", " <F"),
];

fn quote(u: &mut Unstructured, w: &str) -> Result<String> {
    Ok(match u.int_in_range(0..=5)? {
        0 => format!("'{w}'"),
        1 => format!("\"{w}\""),
        2 if w.len() > 1 => format!("{}'{}'", &w[..1], &w[1..]),
        _ => w.to_string(),
    })
}

fn words(u: &mut Unstructured, ws: &[&str]) -> Result<String> {
    let mut out = Vec::new();
    for (i, w) in ws.iter().enumerate() {
        let w = match *w {
            "F" => u
                .choose(&["out.txt", "/etc/passwd", "a b", "-", "F"])?
                .to_string(),
            "G" => u.choose(&["in.txt", "G", "x"])?.to_string(),
            w => w.to_string(),
        };
        // The program name stays unquoted half the time (quoted, it is still the program).
        out.push(if i == 0 && u.arbitrary()? {
            w
        } else {
            quote(u, &w)?
        });
    }
    let sep = *u.choose(&[" ", "  ", "\t", " \t "])?;
    Ok(out.join(sep))
}

/// A command line that can write.
fn line(u: &mut Unstructured) -> Result<String> {
    let ws = *u.choose(WRITERS)?;
    let writer = words(u, ws)?;
    Ok(match u.int_in_range(0..=3)? {
        0 => writer,
        1 => {
            let (before, after) = *u.choose(AROUND)?;
            let rs = *u.choose(READERS)?;
            let inner = words(u, rs)?;
            format!("{before}{inner}{after}")
        }
        2 => {
            let (before, after) = *u.choose(AROUND)?;
            format!("{before}{writer}{after}")
        }
        _ => {
            let rs = *u.choose(READERS)?;
            let reader = words(u, rs)?;
            let join = *u.choose(&["; ", " && ", " | ", "\n", " & "])?;
            if u.arbitrary()? {
                format!("{reader}{join}{writer}")
            } else {
                format!("{writer}{join}{reader}")
            }
        }
    })
}

fn check_raw(text: &str) {
    let _ = read_only(text);
    let _ = simple_commands(text);
    let _ = profile(text);
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 4 == 0 {
        if let Ok(text) = std::str::from_utf8(rest) {
            check_raw(text);
        }
        return;
    }
    let mut u = Unstructured::new(rest);
    if let Ok(line) = line(&mut u) {
        assert_ne!(
            read_only(&line),
            ReadOnly::Yes,
            "read-only: yes for {line:?}"
        );
        check_raw(&line);
    }
});
