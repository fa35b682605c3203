//! `whalebox serve`: MCP on stdio until the client goes away or a signal comes.

use std::process::ExitCode;
use std::sync::Arc;

use whalebox::core::Registry;
use whalebox::tools::Env;

pub(crate) async fn serve(registry: Registry, env: Arc<Env>) -> ExitCode {
    for problem in &env.skills.problems {
        tracing::warn!("skill skipped: {problem}");
    }
    tracing::info!(
        workspace = %env.guard.workspace().display(),
        profile = %env.profile.source_name(),
        tools = registry.names().len(),
        "serving MCP on stdio"
    );
    if let Some(Ok(checkpoints)) = env.checkpoints.as_ref().map(|s| s.get()) {
        // The first pass reads every file; done now, the first call need not wait for it.
        tokio::task::spawn_blocking(move || {
            if let Err(e) = checkpoints.warm() {
                tracing::warn!("checkpoints: the first pass failed: {e}");
            }
        });
    }
    let server = whalebox::mcp::Server::new(Arc::new(registry), &env);
    let served = tokio::select! {
        r = server.serve_stdio() => r.map_err(|e| e.to_string()),
        signal = shutdown_signal() => {
            tracing::info!("{signal}: shutting down");
            Ok(())
        }
    };
    // Every task's processes go with the server (the supervisors' parent-death signal
    // covers a server that is killed outright).
    env.tasks.kill_all();
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("whalebox: {e}");
            ExitCode::FAILURE
        }
    }
}

/// SIGTERM, SIGINT or SIGHUP: the server should stop (and take its tasks with it).
pub(crate) async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).ok();
    let mut int = signal(SignalKind::interrupt()).ok();
    let mut hup = signal(SignalKind::hangup()).ok();
    async fn next(s: &mut Option<tokio::signal::unix::Signal>) {
        match s {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    }
    tokio::select! {
        _ = next(&mut term) => "SIGTERM",
        _ = next(&mut int) => "SIGINT",
        _ = next(&mut hup) => "SIGHUP",
    }
}
