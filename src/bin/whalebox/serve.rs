//! `whalebox serve`: MCP on stdio until the client goes away or a signal comes, or over
//! Streamable HTTP (`--http`) until a signal comes.

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
    warm_checkpoints(&env);
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
    // What the last commands left in the repositories, undone before the person's git
    // runs (said in the log and the audit log: no model is left to tell).
    env.check_git();
    env.private.remove();
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

/// `whalebox serve --http [ADDR]`: MCP over Streamable HTTP until SIGTERM, SIGINT or
/// SIGHUP; then no new connections, calls under way get `[http] grace_period_s` to
/// finish, and every session ends with its tasks.
pub(crate) async fn serve_http(registry: Registry, env: Arc<Env>, addr: String) -> ExitCode {
    use whalebox_http::{Authenticator, Front, Listener, Metrics};
    let mut settings = env.profile.http.clone();
    if !addr.is_empty() {
        match whalebox_http::settings::parse_listen(&addr) {
            Ok(a) => settings.listen = a,
            Err(e) => return usage(&e),
        }
    }
    if let Err(e) = settings.check_exposure() {
        return usage(&e);
    }
    if !env.profile.network.publish.is_empty() && settings.max_sessions > 1 {
        // The machine's port reaches one session's server: with many, whichever took it
        // first would get another caller's OAuth callback.
        return usage(
            "[network] publish hands this machine's ports to one session, and serve --http \
             holds many: set [http] max_sessions = 1 (one agent per server), or leave publish out",
        );
    }
    let auth = match Authenticator::load(&settings).await {
        Ok(a) => a,
        Err(e) => return usage(&e),
    };
    let listener = match Listener::bind(&settings).await {
        Ok(l) => l,
        Err(e) => return usage(&e),
    };
    for problem in &env.skills.problems {
        tracing::warn!("skill skipped: {problem}");
    }
    warm_checkpoints(&env);
    let metrics = Arc::new(Metrics::new());
    let stop_sessions = tokio_util::sync::CancellationToken::new();
    let endpoint = Arc::new(whalebox::mcp::http::McpEndpoint::new(
        registry,
        Arc::clone(&env),
        &settings,
        Arc::clone(&metrics),
        stop_sessions.clone(),
    ));
    let ready_env = Arc::clone(&env);
    let counted = Arc::clone(&endpoint);
    let front = Arc::new(
        Front::new(
            &settings,
            auth,
            Arc::clone(&metrics),
            Arc::clone(&endpoint) as Arc<dyn whalebox_http::Endpoint>,
            move || readiness(&ready_env),
        )
        .before_scrape(move |m| m.set_tasks(counted.tasks_running() as i64)),
    );
    let url = match listener.local_addr() {
        Ok(a) => format!("{}://{a}/mcp", listener.scheme()),
        Err(e) => return usage(&format!("cannot read the bound address: {e}")),
    };
    tracing::info!(
        workspace = %env.guard.workspace().display(),
        profile = %env.profile.source_name(),
        authentication = if settings.authenticated() { "required" } else { "none (loopback)" },
        max_sessions = settings.max_sessions,
        "serving MCP over HTTP; listening on {url}"
    );
    let (stop_accepting, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(whalebox_http::serve(Arc::clone(&front), listener, async {
        let _ = stopped.await;
    }));
    let signal = shutdown_signal().await;
    let grace = settings.grace_period;
    tracing::info!(
        "{signal}: stopping; no new connections, calls under way have {}s to finish",
        grace.as_secs()
    );
    front.drain();
    let _ = stop_accepting.send(());
    let deadline = tokio::time::Instant::now() + grace;
    // A call's result reaches its stream just after the call ends: wait for both.
    while (metrics.calls_in_flight() > 0 || front.answers_unsent() > 0)
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let left = metrics.calls_in_flight();
    if left > 0 {
        tracing::warn!("cancelling {left} call(s) still under way after the grace period");
    }
    // Every session ends (their event streams close), then their tasks.
    stop_sessions.cancel();
    endpoint.kill_all_tasks();
    env.tasks.kill_all();
    env.check_git();
    if tokio::time::timeout(std::time::Duration::from_secs(5), server)
        .await
        .is_err()
    {
        tracing::warn!("connections still open 5 s after the stop; closing them");
    }
    env.private.remove();
    tracing::info!("stopped");
    ExitCode::SUCCESS
}

fn usage(message: &str) -> ExitCode {
    eprintln!("whalebox: {message}");
    ExitCode::from(crate::EXIT_USAGE)
}

/// `/readyz`: the fences as they hold in this server, and whether it can serve.
fn readiness(env: &Env) -> whalebox_http::Ready {
    let mut problems = Vec::new();
    if std::fs::metadata(env.guard.workspace()).is_err() {
        problems.push(format!(
            "the workspace {} cannot be reached",
            env.guard.workspace().display()
        ));
    }
    let landlock = env.sandbox_status();
    let exec = if env.policy.is_some() {
        match env.shell_boundary() {
            Ok(whalebox::session::ShellBoundary::Gated { status, .. }) => status,
            Ok(whalebox::session::ShellBoundary::Ungated { why, .. }) => {
                serde_json::json!({"gated": false, "why": why})
            }
            Err(why) => {
                problems.push(format!("exec boundary: {why}"));
                serde_json::json!({"gated": false, "why": why})
            }
        }
    } else {
        serde_json::json!({"gated": false, "why": "no shell or mcp group, or exec_boundary = off"})
    };
    whalebox_http::Ready {
        ok: problems.is_empty(),
        detail: serde_json::json!({
            "runtime": whalebox::guard::runtime::Runtime::detect(),
            "landlock": landlock,
            "exec_boundary": exec,
            "policy_loaded": env.policy.is_some(),
            "problems": problems,
        }),
    }
}

fn warm_checkpoints(env: &Env) {
    if let Some(Ok(checkpoints)) = env.checkpoints.as_ref().map(|s| s.get()) {
        // The first pass reads every file; done now, the first call need not wait for it.
        tokio::task::spawn_blocking(move || {
            if let Err(e) = checkpoints.warm() {
                tracing::warn!("checkpoints: the first pass failed: {e}");
            }
        });
    }
}
