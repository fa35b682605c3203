//! `whalebox run` and `whalebox shell`: a command or an interactive shell inside the
//! profile's fences.

use std::path::PathBuf;
use std::process::ExitCode;

use whalebox::tools::Session;

use crate::setup::{enter_sandbox, setup_with};
use crate::{EXIT_USAGE, ProfileArgs};

pub(crate) fn run_sandboxed(
    profile: &ProfileArgs,
    extra_ro: Vec<PathBuf>,
    what: whalebox::runner::What,
) -> ExitCode {
    let mut options = profile.load_options();
    options.extra_ro = extra_ro;
    let (_registry, env) = match setup_with(&options, Session::OneShot)
        .and_then(|(registry, env)| enter_sandbox(env, false).map(|env| (registry, env)))
    {
        Ok(ok) => ok,
        Err(code) => return code,
    };
    match whalebox::runner::run(&env, what) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("whalebox: {e}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}
