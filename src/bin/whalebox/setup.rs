//! What every command does first: load the profile, build the session, enter the
//! sandbox, start the runtime; and how results are printed.

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::Value;
use whalebox::core::Registry;
use whalebox::profile::{LoadOptions, Profile};
use whalebox::tools::{self, Env, Session};

use crate::{EXIT_USAGE, ProfileArgs};

/// Load the profile and build the registry, or explain on stderr why not.
pub(crate) fn setup(
    args: &ProfileArgs,
    session: Session,
) -> Result<(Registry, Arc<Env>), ExitCode> {
    setup_with(&args.load_options(), session)
}

pub(crate) fn setup_with(
    options: &LoadOptions,
    session: Session,
) -> Result<(Registry, Arc<Env>), ExitCode> {
    let profile = Profile::load(options).map_err(|e| {
        eprintln!("whalebox: profile error: {e}");
        ExitCode::from(EXIT_USAGE)
    })?;
    // Before any thread starts: the credentials' secrets out of the environment (and of
    // /proc/PID/environ), the process non-dumpable.
    whalebox::net::secrets::take(profile.network.credentials.values().map(|c| c.env.as_str()));
    for warning in &profile.warnings {
        tracing::warn!("{}: {warning}", profile.source_name());
    }
    if profile.landlock.mode != whalebox::profile::LandlockMode::Off {
        tracing::info!("toolchain presets: {}", presets_line(&profile.landlock));
    }
    tools::build_session(profile, session).map_err(|e| {
        eprintln!("whalebox: profile error: {e}");
        ExitCode::from(EXIT_USAGE)
    })
}

/// [`setup`], then enter the sandbox (exit 2 when the profile's fences cannot hold).
/// `http`: the server will take many sessions (`max_sessions`), not one.
pub(crate) fn setup_sandboxed(
    args: &ProfileArgs,
    session: Session,
    http: bool,
) -> Result<(Registry, Arc<Env>), ExitCode> {
    let (registry, env) = setup(args, session)?;
    Ok((registry, enter_sandbox(env, http)?))
}

pub(crate) fn enter_sandbox(env: Arc<Env>, http: bool) -> Result<Arc<Env>, ExitCode> {
    let sessions = if http {
        env.profile.http.max_sessions
    } else {
        1
    };
    match env.enter_sandbox(sessions) {
        Ok(status) => {
            tracing::info!("{}", status.summary());
            Ok(env)
        }
        Err(e) => {
            eprintln!("whalebox: sandbox: {e}");
            Err(ExitCode::from(EXIT_USAGE))
        }
    }
}

pub(crate) fn with_runtime(job: impl std::future::Future<Output = ExitCode>) -> ExitCode {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => {
            let code = rt.block_on(job);
            // A blocking read of stdin (the stdio transport's) never ends while the client
            // keeps it open: the runtime must not wait for it after a signal.
            rt.shutdown_timeout(std::time::Duration::from_secs(2));
            code
        }
        Err(e) => {
            eprintln!("whalebox: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn init_logging(serving: bool, format: crate::LogFormat) {
    let default = if serving {
        "whalebox=info,whalebox_http=info"
    } else {
        "warn"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false);
    match format {
        crate::LogFormat::Text => builder.init(),
        crate::LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}

pub(crate) fn print_json(value: &Value) -> ExitCode {
    match serde_json::to_string_pretty(value) {
        Ok(s) => {
            println!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("whalebox: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The presets on and why: listed by the profile, or found by `presets = "auto"`.
pub(crate) fn presets_line(l: &whalebox::profile::LandlockSection) -> String {
    match &l.presets_auto {
        Some(found) if found.is_empty() => {
            "none (auto: no Cargo.toml, package.json, pyproject.toml, requirements*.txt, go.mod \
             or flake.nix at the top of the workspace)"
                .into()
        }
        Some(found) => format!(
            "{} (auto, from the workspace)",
            found
                .iter()
                .map(|(p, marker)| format!("{p} ({marker})"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None if l.presets.is_empty() => "none (the profile lists none)".into(),
        None => l
            .presets
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", "),
    }
}
