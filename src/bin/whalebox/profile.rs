//! `whalebox profile check`: the effective profile, as the session would use it.

use std::process::ExitCode;

use serde_json::json;
use whalebox::profile::Profile;
use whalebox::tools::{self, Session};

use crate::{EXIT_USAGE, ProfileArgs};

pub(crate) fn check_profile(args: ProfileArgs, files_only: bool) -> ExitCode {
    let mut profile = match Profile::load(&args.load_options()) {
        Ok(profile) => profile,
        Err(e) => {
            eprintln!("whalebox: profile error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if files_only && profile.landlock.mode == whalebox::profile::LandlockMode::Enforce {
        // Build the session as best-effort so this kernel's ABI is not held against it.
        profile.landlock.mode = whalebox::profile::LandlockMode::BestEffort;
        profile.warnings.push(
            "[landlock] mode = \"enforce\" was not checked against this kernel (--files-only)"
                .into(),
        );
    }
    for warning in &profile.warnings {
        tracing::warn!("{}: {warning}", profile.source_name());
    }
    let (registry, env) = match tools::build_session(profile, Session::OneShot) {
        Ok(ok) => ok,
        Err(e) => {
            eprintln!("whalebox: profile error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let mut report = match serde_json::to_value(&env.profile) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("whalebox: {e}");
            return ExitCode::FAILURE;
        }
    };
    report["enabled_tools"] = json!(registry.names());
    report["available_groups"] = json!(
        tools::GROUPS
            .iter()
            .map(|g| json!({"name": g.name, "tools": g.summary}))
            .collect::<Vec<_>>()
    );
    report["skills"] = json!(
        env.skills
            .skills
            .iter()
            .map(|s| json!({"name": s.name, "description": s.description, "dir": s.dir}))
            .collect::<Vec<_>>()
    );
    report["skill_problems"] = json!(env.skills.problems);
    report["landlock_status"] = json!(env.sandbox_status());
    match serde_json::to_string_pretty(&report) {
        Ok(s) => println!("{s}"),
        Err(e) => {
            eprintln!("whalebox: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
