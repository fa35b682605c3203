//! Which git configuration keys make git run a program: the ones a task must not leave
//! behind in the workspace's repositories, since the person's next `git status` or
//! `git commit` runs them outside every fence.
//!
//! Keys are as `git config --list` prints them: section and variable lowercased, the
//! subsection (`diff.<driver>.textconv`) as written.

/// Patterns of exec-carrying keys (`*` is one subsection, any text). Each is a program,
/// a command line, or a file of more configuration (`include.path`).
const EXEC_KEYS: &[&str] = &[
    "core.fsmonitor",
    "core.hookspath",
    "core.sshcommand",
    "core.pager",
    "core.editor",
    "core.askpass",
    "core.gitproxy",
    "core.alternaterefscommand",
    "sequence.editor",
    "gpg.program",
    "gpg.*.program",
    "gpg.ssh.defaultkeycommand",
    "credential.helper",
    "credential.*.helper",
    "diff.external",
    "diff.*.textconv",
    "diff.*.command",
    "merge.*.driver",
    "filter.*.clean",
    "filter.*.smudge",
    "filter.*.process",
    "uploadpack.packobjectshook",
    "remote.*.uploadpack",
    "remote.*.receivepack",
    "include.path",
    "includeif.*.path",
    "init.templatedir",
    "interactive.difffilter",
    "difftool.*.cmd",
    "difftool.*.path",
    "mergetool.*.cmd",
    "mergetool.*.path",
    "web.browser",
    "browser.*.cmd",
    "browser.*.path",
    "man.*.cmd",
    "man.*.path",
    "guitool.*.cmd",
    "trailer.*.command",
    "trailer.*.cmd",
    "sendemail.smtpserver",
    "sendemail.tocmd",
    "sendemail.cccmd",
    "sendemail.*.smtpserver",
    "sendemail.*.tocmd",
    "sendemail.*.cccmd",
    // Not programs, but what lets `ext::` URLs run one.
    "protocol.allow",
    "protocol.ext.allow",
];

/// Keys that run a program only for some values: `alias.x = !cmd` and
/// `submodule.x.update = !cmd` (a leading `!`), `pager.<cmd>` and `core.fsmonitor`
/// (anything but a boolean: `true` is git's own daemon).
fn conditional(key: &str, value: &str) -> Option<bool> {
    let bang = value.trim_start().starts_with('!');
    let section = key.split('.').next().unwrap_or_default();
    if section == "alias" || matches("submodule.*.update", key) {
        return Some(bang);
    }
    if section == "pager" || key == "core.fsmonitor" {
        return Some(!is_bool(value));
    }
    None
}

fn is_bool(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0" | ""
    )
}

/// Whether `key = value` makes git run a program (or read more configuration).
pub fn carries_exec(key: &str, value: &str) -> bool {
    let key = normal(key);
    if let Some(answer) = conditional(&key, value) {
        return answer;
    }
    EXEC_KEYS.iter().any(|p| matches(p, &key))
}

/// `key` with its section and variable lowercased (git's own spelling in `--list`).
pub fn normal(key: &str) -> String {
    match (key.find('.'), key.rfind('.')) {
        (Some(first), Some(last)) if first < last => format!(
            "{}{}{}",
            key[..first].to_ascii_lowercase(),
            &key[first..last],
            key[last..].to_ascii_lowercase()
        ),
        _ => key.to_ascii_lowercase(),
    }
}

/// Whether `key` (normalized) matches `pattern`: the same sections and variable, with
/// `*` standing for any subsection. A pattern without a subsection matches only keys
/// without one. Section and variable compare without case.
pub fn matches(pattern: &str, key: &str) -> bool {
    let split = |s: &str| -> Option<(String, Option<String>, String)> {
        let first = s.find('.')?;
        let last = s.rfind('.')?;
        let section = s[..first].to_ascii_lowercase();
        let var = s[last + 1..].to_ascii_lowercase();
        let sub = (first < last).then(|| s[first + 1..last].to_string());
        Some((section, sub, var))
    };
    let (Some(p), Some(k)) = (split(pattern), split(key)) else {
        return false;
    };
    p.0 == k.0
        && p.2 == k.2
        && match (&p.1, &k.1) {
            (None, None) => true,
            (Some(ps), Some(_)) if ps == "*" => true,
            (Some(ps), Some(ks)) => ps == ks,
            _ => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_of_issue_41_carry_exec_and_ordinary_ones_do_not() {
        for (k, v) in [
            ("core.fsmonitor", "sh -c 'touch /tmp/pwned'"),
            ("core.hooksPath", "hooks"),
            ("core.sshCommand", "ssh -i x"),
            ("core.pager", "less"),
            ("core.editor", "vim"),
            ("diff.foo.textconv", "cat"),
            ("filter.lfs.smudge", "git-lfs smudge"),
            ("filter.x.process", "x"),
            ("alias.st", "!sh -c x"),
            ("credential.helper", "store"),
            ("credential.https://x.example.helper", "store"),
            ("gpg.program", "gpg2"),
            ("gpg.ssh.program", "ssh-keygen"),
            ("sequence.editor", "vi"),
            ("core.askPass", "x"),
            ("uploadpack.packObjectsHook", "x"),
            ("include.path", "../x"),
            ("includeIf.gitdir:/x/.path", "../x"),
            ("remote.origin.uploadpack", "x"),
            ("remote.origin.receivepack", "x"),
            ("pager.log", "sh -c x"),
            ("submodule.m.update", "!x"),
        ] {
            assert!(carries_exec(k, v), "{k} = {v}");
        }
        for (k, v) in [
            ("user.name", "x"),
            ("user.email", "x@example.invalid"),
            ("remote.origin.url", "https://example.invalid/x.git"),
            ("remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"),
            ("url.git@x:.insteadOf", "https://x/"),
            ("alias.st", "status"),
            ("pager.branch", "false"),
            ("core.fsmonitor", "true"),
            ("core.autocrlf", "input"),
            ("submodule.m.url", "../m"),
            ("submodule.m.update", "rebase"),
            ("branch.main.remote", "origin"),
            ("core.repositoryformatversion", "0"),
        ] {
            assert!(!carries_exec(k, v), "{k} = {v}");
        }
    }

    #[test]
    fn patterns_match_one_subsection_and_ignore_case_outside_it() {
        assert!(matches("diff.*.textconv", "diff.Foo.textconv"));
        assert!(matches("core.pager", "Core.Pager"));
        assert!(!matches("core.pager", "core.x.pager"));
        assert!(!matches("diff.*.textconv", "diff.textconv"));
        assert!(matches("filter.Foo.clean", "filter.Foo.clean"));
        assert!(!matches("filter.Foo.clean", "filter.foo.clean"));
        assert_eq!(
            normal("includeIf.gitdir:/X/.Path"),
            "includeif.gitdir:/X/.path"
        );
    }
}
