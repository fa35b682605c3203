//! `whalebox policy check` and `policy test`: decide one command, load policy files.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;
use whalebox::profile::Profile;

use crate::{EXIT_TOOL_ERROR, EXIT_USAGE, ProfileArgs};

pub(crate) fn policy_check(profile: &ProfileArgs, command: &[String]) -> ExitCode {
    let path = match &profile.policy {
        Some(f) => Some(f.clone()),
        None if profile.profile.is_some() => match Profile::load(&profile.load_options()) {
            Ok(p) => p.policy,
            Err(e) => {
                eprintln!("whalebox: profile error: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        },
        None => None,
    };
    let policy = match &path {
        Some(p) => match whalebox::policy::Policy::load(p) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("whalebox: policy error: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        },
        None => whalebox::policy::Policy::embedded(),
    };
    let Some((program, _)) = command.split_first() else {
        eprintln!("whalebox: give the command after --");
        return ExitCode::from(EXIT_USAGE);
    };
    let verdict = policy.evaluate(program, command);
    let report = json!({
        "policy": path.map(|p| p.display().to_string()),
        "command": command,
        "decision": verdict.decision.as_str(),
        "reason": verdict.reason,
        "matched": verdict.matched,
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&report).unwrap_or_default()
    );
    ExitCode::SUCCESS
}

pub(crate) fn policy_test(files: &[PathBuf]) -> ExitCode {
    let mut failed = false;
    for f in files {
        match whalebox::policy::Policy::load(f) {
            Ok(p) => println!("ok   {} ({} rules)", f.display(), p.rules.len()),
            Err(e) => {
                println!("FAIL {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::from(EXIT_TOOL_ERROR)
    } else {
        ExitCode::SUCCESS
    }
}
