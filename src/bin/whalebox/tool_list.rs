//! `whalebox tools`: what the profile enables, for people or as JSON.

use std::process::ExitCode;

use whalebox::tools::Session;

use crate::ProfileArgs;
use crate::setup::setup;

pub(crate) fn list_tools(as_json: bool, profile: &ProfileArgs) -> ExitCode {
    let (registry, _env) = match setup(profile, Session::OneShot) {
        Ok(ok) => ok,
        Err(code) => return code,
    };
    if as_json {
        let specs: Vec<_> = registry.specs().collect();
        match serde_json::to_string_pretty(&specs) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("whalebox: {e}");
                return ExitCode::FAILURE;
            }
        }
        return ExitCode::SUCCESS;
    }
    for spec in registry.specs() {
        let mode = if spec.annotations.read_only {
            "read-only"
        } else {
            "writes"
        };
        let summary = spec.description.split(". ").next().unwrap_or("");
        println!("{:<14} {:<7} {:<9} {summary}", spec.name, spec.group, mode);
    }
    ExitCode::SUCCESS
}
