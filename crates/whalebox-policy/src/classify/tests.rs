use super::*;

#[test]
fn the_read_only_table() {
    let yes = [
        "ls -la",
        "cat README.md",
        "grep -rn 'fn main' src",
        "git status",
        "git log --oneline -5",
        "git diff HEAD~1",
        "find . -name '*.rs'",
        "wc -l src/main.rs",
        "echo hello",
        "rg -i todo",
        "git branch",
        "pwd",
    ];
    for c in yes {
        assert_eq!(read_only(c), ReadOnly::Yes, "{c}");
    }
    let no = [
        "rm -rf target",
        "find . -delete",
        "find . -exec rm {} ;",
        "ls > out.txt",
        "cat a | tee b",
        "echo $(rm x)",
        "echo `rm x`",
        "git commit -m x",
        "git -c core.pager=evil log",
        "git diff --output=x",
        "git log --ext-diff",
        "sort -o out in",
        "sed -i s/a/b/ f",
        "ls; rm x",
        "ls && rm x",
        "cat ~/.ssh/id_rsa",
        "FOO=1 ls",
        "/bin/ls",
        "ls *",
        "echo \"$HOME\"",
        "env rm x",
        "date -s 2020-01-01",
        "git branch -D main",
        "python3 -c 'print(1)'",
        "",
        "cat 'unclosed",
    ];
    for c in no {
        assert!(
            matches!(read_only(c), ReadOnly::CannotTell { .. }),
            "{c} must not be read-only"
        );
    }
}

/// Writers the read_only fuzz target (fuzz/fuzz_targets/readonly_classifier.rs) found
/// classified read-only: options in clusters, with attached values or abbreviated, and
/// programs whose plain operands write.
#[test]
fn fuzz_found_writers_are_not_read_only() {
    for c in [
        "tree -oF",
        "tree -o out.txt",
        "tree -R -H .",
        "sort -oout.txt in.txt",
        "sort -uo out.txt in.txt",
        "sort --outp=out.txt in.txt",
        "sort --out out.txt in.txt",
        "sort --compress-program=sh in.txt",
        "date -snow",
        "date --se=now",
        "xxd in.txt out.txt",
        "xxd -r in.txt out.txt",
        "file -C -m magic",
        "file --compile -m magic",
        "fd -xrm",
        "fd -Hx rm",
        "git stash",
        "git grep -O x",
        "git grep -Ovim x",
        "git grep --open-files-in-pager=vim x",
        "git grep --open-files x",
        "git diff --outp=out.txt",
        "git log --ext-d",
        "hostname -F -",
        "hostname -F /etc/hostname",
        "hostname -b name",
        "uniq - out.txt",
    ] {
        assert!(
            matches!(read_only(c), ReadOnly::CannotTell { .. }),
            "{c} must not be read-only"
        );
    }
    // What stays read-only.
    for c in [
        "sort -u in.txt",
        "sort -n -k2 in.txt",
        "date -u",
        "tree -L 2",
        "xxd in.txt",
        "xxd -c 16 in.txt",
        "file README.md",
        "fd -H name",
        "git stash list",
        "git grep -n x",
        "git log --oneline",
        "git diff --stat",
        "hostname",
        "hostname -f",
        "uniq -c in.txt",
    ] {
        assert_eq!(read_only(c), ReadOnly::Yes, "{c}");
    }
}

#[test]
fn terminals_are_picked_for_what_needs_them() {
    for c in [
        "sudo apt-get install x",
        "ssh host",
        "vim file",
        "python3",
        "node",
        "git commit",
        "less README.md",
        "cd sub && git rebase -i HEAD~3",
        "FOO=1 env top",
    ] {
        assert!(profile(c).needs_terminal.is_some(), "{c}");
    }
    for c in [
        "python3 script.py",
        "python3 -c 'print(1)'",
        "git commit -m msg",
        "ls | less_not",
        "cargo test",
        "echo vim",
        "cat file > less",
    ] {
        assert_eq!(profile(c).needs_terminal, None, "{c}");
    }
    assert_eq!(
        profile("cargo build && sleep 5").long_running,
        ["cargo", "sleep"]
    );
}
