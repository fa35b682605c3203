//! The program an exec will really run, as far as its words tell: a dynamic loader
//! (`ld.so PROGRAM …`) runs the program it names, a multi-call binary (`busybox`,
//! `toybox`) runs the applet named by `argv[1]` or by `argv[0]`, and a tool with global
//! options before its subcommand (`git -C dir push`) runs that subcommand. A rule is
//! matched against these too, so a name rule is not dodged by the way a program is called.
//!
//! Words only: a renamed copy, a symlink or an anonymous file is for the kernel gate,
//! which knows the file (see the exec-policy chapter for what a name rule can promise).

/// Whether `path` (as the kernel names an open file) is a file with no name: a memfd
/// (`/memfd:NAME (deleted)`), a deleted or `O_TMPFILE` file (`… (deleted)`).
pub fn is_anonymous(path: &str) -> bool {
    path.starts_with("/memfd:") || path.starts_with("memfd:") || path.ends_with(" (deleted)")
}

/// Whether `base` (a file name) is a dynamic loader: glibc's `ld-linux*.so*`, `ld.so`,
/// musl's `ld-musl-*.so*`.
pub fn is_loader(base: &str) -> bool {
    base == "ld.so"
        || ((base.starts_with("ld-linux")
            || base.starts_with("ld-musl")
            || base.starts_with("ld64"))
            && base.contains(".so"))
}

/// Whether `base` is a multi-call binary that runs the applet its `argv[0]` or `argv[1]` names.
pub fn is_multicall(base: &str) -> bool {
    matches!(
        base,
        "busybox" | "toybox" | "busybox.static" | "toybox.static"
    )
}

/// The program a loader invoked as a program runs, and its arguments (after the
/// loader's own options).
pub fn loader_inner(args: &[String]) -> Option<(String, Vec<String>)> {
    const VALUED: &[&str] = &[
        "--library-path",
        "--preload",
        "--argv0",
        "--audit",
        "--inhibit-rpath",
        "--glibc-hwcaps-prepend",
        "--glibc-hwcaps-mask",
    ];
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with("--") {
            break;
        }
        i += if VALUED.contains(&a.as_str()) { 2 } else { 1 };
    }
    let inner = args.get(i)?;
    Some((inner.clone(), args[i + 1..].to_vec()))
}

/// The applets a multi-call binary runs for `argv`: `argv[1]` when called by its own
/// name (`busybox touch x`), `argv[0]`'s basename when called as another name.
pub fn multicall_inner(argv: &[String]) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let name = argv.first().map(|a| a.rsplit('/').next().unwrap_or(a));
    if let Some(name) = name
        && !is_multicall(name)
        && !name.is_empty()
    {
        out.push((name.to_string(), argv[1..].to_vec()));
    }
    // `busybox --install`, `busybox --list`: the binary's own options, no applet.
    let mut i = 1;
    while argv
        .get(i)
        .is_some_and(|a| a.starts_with("--") && a != "--")
    {
        i += 1;
    }
    if let Some(applet) = argv.get(i) {
        out.push((applet.clone(), argv[i + 1..].to_vec()));
    }
    out
}

/// `args` without the leading global options of a tool whose first word is a
/// subcommand (`git -C dir -c k=v push` → `push`), so `["git", "push"]` matches however
/// the options come. Other programs' arguments are returned as they are.
pub fn subcommand_args<'a>(base: &str, args: &'a [String]) -> &'a [String] {
    // Options that take the next word as their value (`--opt=value` takes none).
    let valued: &[&str] = match base {
        "git" => &[
            "-C",
            "-c",
            "--git-dir",
            "--work-tree",
            "--namespace",
            "--config-env",
            "--super-prefix",
            "--attr-source",
            "--exec-path",
            "--list-cmds",
        ],
        "cargo" => &["-C", "-Z", "--config", "--color", "--explain"],
        "npm" | "pnpm" | "yarn" => &[
            "-C",
            "--prefix",
            "--dir",
            "--cwd",
            "-w",
            "--workspace",
            "--filter",
            "--registry",
            "--userconfig",
            "--globalconfig",
            "--cache",
            "--loglevel",
            "--otp",
            "--tag",
            "--access",
        ],
        "gh" => &["-R", "--repo"],
        _ => return args,
    };
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if base == "cargo" && i == 0 && a.starts_with('+') {
            i += 1; // `cargo +nightly publish`: the toolchain
            continue;
        }
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || a.len() < 2 {
            break;
        }
        // `--exec-path` alone prints the path; with `=` it takes no next word.
        let takes_next = valued.contains(&a.as_str()) && !(base == "git" && a == "--exec-path");
        // `-Cdir`, `-ck=v`: the value attached.
        i += if takes_next { 2 } else { 1 };
    }
    args.get(i..).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words;

    #[test]
    fn loaders_and_multicall_binaries_are_seen_by_their_names() {
        assert!(is_loader("ld-linux-x86-64.so.2"));
        assert!(is_loader("ld-linux-aarch64.so.1"));
        assert!(is_loader("ld-musl-x86_64.so.1"));
        assert!(is_loader("ld.so"));
        assert!(!is_loader("ld"));
        assert!(!is_loader("ldd"));
        assert!(is_multicall("busybox"));
        let w = words("--library-path /x --preload y.so /usr/bin/touch a");
        assert_eq!(
            loader_inner(&w),
            Some(("/usr/bin/touch".into(), vec!["a".into()]))
        );
        let applets = multicall_inner(&words("busybox touch a"));
        assert_eq!(applets, vec![("touch".into(), vec!["a".into()])]);
        let applets = multicall_inner(&words("/tmp/touch a"));
        assert_eq!(applets[0], ("touch".into(), vec!["a".into()]));
    }

    #[test]
    fn global_options_before_the_subcommand_are_skipped() {
        for line in [
            "-C . push",
            "-c k=v push",
            "--git-dir=.git --work-tree . push",
            "--no-pager -p --namespace n push",
            "--exec-path=/x -Cdir push",
            "--config-env k=ENV push origin",
        ] {
            let w = words(line);
            assert_eq!(
                subcommand_args("git", &w).first().map(String::as_str),
                Some("push"),
                "{line}"
            );
        }
        let w = words("+nightly --locked -Z x publish");
        assert_eq!(subcommand_args("cargo", &w)[0], "publish");
        let w = words("--prefix sub publish");
        assert_eq!(subcommand_args("npm", &w)[0], "publish");
        let w = words("-la x");
        assert_eq!(subcommand_args("ls", &w), &w[..]);
    }
}
