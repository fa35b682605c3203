//! `whalebox run` and `whalebox shell`: a command (or an interactive zsh) inside the
//! full sandbox on the caller's own streams, with approvals on a real terminal (a PTY).

mod common;

use std::io::Write;

use common::Fixture;

fn landlock() -> bool {
    let on = common::landlock_abi() > 0;
    if !on {
        eprintln!("SKIPPED the Landlock part: this kernel has no Landlock");
    }
    on
}

fn fixture(default: &str) -> Fixture {
    let f = Fixture::new();
    std::fs::write(
        f.root.join("policy.toml"),
        format!(
            "version = 1\ndefault = \"{default}\"\n[[rule]]\npattern = [\"rm\"]\ndecision = \"deny\"\njustification = \"no rm in CI\"\n"
        ),
    )
    .unwrap();
    f.with_profile(&format!(
        "policy = \"policy.toml\"\n[shell]\nexec_boundary = \"{}\"\nzsh = \"{}\"\naudit_log = \"audit.jsonl\"\n",
        common::exec_boundary_mode(),
        common::gated_zsh().display()
    ))
}

fn run(f: &Fixture, args: &[&str]) -> std::process::Output {
    let profile = f.profile.as_ref().unwrap().to_str().unwrap().to_string();
    let mut argv = vec!["run", "--profile", &profile, "--"];
    argv.extend(args);
    f.command(&argv)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn run_passes_streams_and_status_through_and_keeps_the_fences() {
    let f = fixture("allow");
    std::fs::write(f.ws.join("keep.txt"), "kept\n").unwrap();
    let out = run(&f, &["sh", "-c", "cat keep.txt; echo err >&2; exit 7"]);
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "kept\n");
    // Where the kernel gate cannot run, run's first stderr line says what is not covered.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stderr = stderr
        .strip_prefix("whalebox: exec_boundary = best-effort")
        .map_or(&*stderr, |rest| rest.split_once('\n').unwrap().1);
    assert_eq!(stderr, "err\n");

    // The policy: a denied program never runs, through run as through shell_run.
    let out = run(&f, &["rm", "keep.txt"]);
    assert_eq!(out.status.code(), Some(126));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("whalebox: denied"),
        "{out:?}"
    );
    assert!(f.ws.join("keep.txt").exists());
    let audit = std::fs::read_to_string(f.root.join("audit.jsonl")).unwrap();
    assert!(audit.contains("\"decision\":\"deny\"") && audit.contains("no rm in CI"));

    if landlock() {
        let target = f.outside.join("from-run");
        let out = run(&f, &["touch", target.to_str().unwrap()]);
        assert_ne!(out.status.code(), Some(0));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
            "{out:?}"
        );
        assert!(!target.exists());
        let out = run(
            &f,
            &["sh", "-c", "echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\""],
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), "t\n", "{out:?}");
    }
}

#[test]
fn ask_without_a_terminal_follows_on_ask() {
    let f = fixture("ask");
    let out = run(&f, &["touch", "nobody-asked"]);
    assert_eq!(out.status.code(), Some(126));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("approval needed"),
        "{out:?}"
    );
    assert!(!f.ws.join("nobody-asked").exists());
    // zsh retries a refused exec through the next PATH entry (/bin/touch after
    // /usr/bin/touch, one file): one question, one decision in the audit log.
    let audit = std::fs::read_to_string(f.root.join("audit.jsonl")).unwrap();
    let asked = audit.lines().filter(|l| l.contains("nobody-asked")).count();
    assert_eq!(asked, 1, "{audit}");
}

#[test]
fn shell_is_an_interactive_gated_zsh_in_the_sandbox() {
    let f = fixture("allow");
    let profile = f.profile.as_ref().unwrap().to_str().unwrap().to_string();
    let mut child = f
        .command(&["shell", "--profile", &profile])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let outside = f.outside.join("from-shell");
    writeln!(
        child.stdin.as_mut().unwrap(),
        "echo inside-$((6*7)); rm -f x; touch {}; [[ -o interactive ]] && echo interactive; exit 5",
        outside.display()
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("inside-42") && stdout.contains("interactive"),
        "{stdout}"
    );
    assert!(stderr.contains("whalebox: denied"), "{stderr}");
    if landlock() {
        assert!(!outside.exists(), "{stderr}");
    }
}

#[test]
fn approvals_on_the_terminal_need_the_code_shown_with_the_question() {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    let f = fixture("ask");
    let profile = f.profile.as_ref().unwrap().to_str().unwrap().to_string();
    for (answer, made) in [("once", true), ("wrong", false)] {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: 24,
                cols: 200,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(common::bin());
        let name = format!("approved-{answer}");
        cmd.args(["run", "--profile", &profile, "--", "touch", &name]);
        cmd.cwd(&f.ws);
        cmd.env("HOME", &f.home);
        let mut child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let mut writer = pair.master.take_writer().unwrap();
        let mut seen = String::new();
        common::read_until(&mut reader, &mut seen, "deny: anything else");
        let code = seen
            .split("allow once: o")
            .nth(1)
            .map(|s| s.chars().take(4).collect::<String>())
            .expect("the question shows a code");
        let reply = if answer == "once" {
            format!("o{code}\r")
        } else {
            "o0000x\r".to_string()
        };
        writer.write_all(reply.as_bytes()).unwrap();
        writer.flush().unwrap();
        let status = child.wait().unwrap();
        assert_eq!(f.ws.join(&name).exists(), made, "{answer}: {seen}");
        assert_eq!(status.success(), made, "{answer}: {seen}");
    }
    let audit = std::fs::read_to_string(f.root.join("audit.jsonl")).unwrap();
    assert!(audit.contains("the user (terminal)"), "{audit}");
}

#[test]
fn run_ro_lets_the_command_read_one_more_path() {
    // As a CI runner's step shell uses it: the step's script is written outside the
    // workspace, and `--ro SCRIPT` lets the sandbox read that file and nothing next to it.
    if !landlock() {
        return;
    }
    let f = fixture("allow");
    let script = f.outside.join("step.sh");
    std::fs::write(&script, "echo from-step\n").unwrap();
    std::fs::write(f.outside.join("secret"), "s\n").unwrap();
    let profile = f.profile.as_ref().unwrap().to_str().unwrap().to_string();
    let script_arg = script.to_str().unwrap();
    let with_ro = |extra: &[&str], command: &[&str]| {
        let mut argv = vec!["run", "--profile", &profile];
        argv.extend(extra);
        argv.push("--");
        argv.extend(command);
        f.command(&argv)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let out = with_ro(&[], &["sh", script_arg]);
    assert_ne!(out.status.code(), Some(0), "read outside the sets: {out:?}");
    let out = with_ro(&["--ro", script_arg], &["sh", script_arg]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from-step\n");
    let secret = f.outside.join("secret");
    let out = with_ro(&["--ro", script_arg], &["cat", secret.to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0), "only the named file: {out:?}");
    let out = with_ro(&["--ro", "/no/such/step.sh"], &["true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--ro /no/such/step.sh: no such file"));
}
