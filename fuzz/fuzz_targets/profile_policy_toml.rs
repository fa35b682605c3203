//! Profile and policy files (TOML) from untrusted repositories: `Profile::parse`,
//! `Policy::from_toml`, and `Policy::load` from a file beside a copy of the shipped
//! policies (so `include` resolves and can loop).
//!
//! Oracle: never a panic; an error is an error that names the file it is about; parsing
//! is deterministic (the same text gives the same answer twice); a policy that loads
//! judges commands drawn from the text without a panic, each verdict with a reason.

#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use whalebox::policy::Policy;
use whalebox::profile::Profile;

thread_local! {
    static DIR: PathBuf = {
        let dir = whalebox_fuzz::scratch("profile_policy_toml");
        for (name, text) in [
            ("dev.toml", include_str!("../../policies/dev.toml")),
            ("ci.toml", include_str!("../../policies/ci.toml")),
            ("org.toml", include_str!("../../policies/org.toml")),
        ] {
            std::fs::write(dir.join(name), text).expect("a scratch policy");
        }
        dir
    };
}

fn judge(policy: &Policy, text: &str) {
    let words: Vec<String> = text
        .split_whitespace()
        .take(12)
        .map(str::to_string)
        .collect();
    for start in 0..words.len().min(4) {
        let argv = &words[start..];
        let verdict = policy.evaluate(&argv[0], argv);
        assert!(!verdict.reason.is_empty(), "a verdict without a reason");
        let _ = policy.evaluate_exec(&argv[0], argv, true);
        let _ = policy.evaluate_words(argv);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    DIR.with(|dir| match which % 3 {
        0 => {
            let parse = || Profile::parse(text, Some(&dir.join("fuzz.toml")), dir, Some(dir));
            match parse() {
                Ok(profile) => {
                    assert!(!profile.source_name().is_empty());
                    assert!(parse().is_ok(), "a profile parsed once, then not");
                }
                Err(e) => {
                    let shown = e.to_string();
                    assert!(
                        shown.contains("fuzz.toml"),
                        "an error that names no file: {shown}"
                    );
                    assert_eq!(parse().err().map(|e| e.to_string()), Some(shown));
                }
            }
        }
        1 => match Policy::from_toml(text, "fuzz.toml") {
            Ok(policy) => judge(&policy, text),
            Err(e) => {
                let shown = e.to_string();
                assert!(
                    shown.contains("fuzz.toml"),
                    "an error that names no file: {shown}"
                );
                let again = Policy::from_toml(text, "fuzz.toml")
                    .err()
                    .map(|e| e.to_string());
                assert_eq!(again, Some(shown), "not deterministic");
            }
        },
        _ => {
            let path = dir.join("top.toml");
            std::fs::write(&path, text).expect("the scratch file");
            match Policy::load(&path) {
                Ok(policy) => judge(&policy, text),
                Err(e) => assert!(!e.to_string().is_empty(), "an empty error"),
            }
        }
    });
});
