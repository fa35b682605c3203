//! The network fence of a session (`[network]`), made with the first task, and each
//! task's part of it.

use std::sync::Arc;

use crate::core::{Code, ToolError};
use crate::net::fence::{NetworkFence, TaskNet};

use super::Env;

impl Env {
    /// The session's network fence: None with `[network] mode = "off"`; Err when
    /// `mode = "enforce"` cannot be met here.
    pub fn network(&self) -> Result<Option<Arc<NetworkFence>>, String> {
        self.network
            .get_or_init(|| {
                let landlock_on = self.sandbox.is_some();
                let net = &self.profile.network;
                if !net.on() {
                    return Ok(None);
                }
                // The namespace fence is the session's network namespace, if it was made;
                // without a factory (`whalebox doctor`, never in a sandbox) a probe says
                // whether one could be.
                if net.kernel != crate::profile::network::KernelFence::Landlock
                    && !super::spaces::factory_running()
                {
                    let enforcement = crate::net::fence::detect(net.kernel, landlock_on);
                    return NetworkFence::new(net, self.fence_settings(), enforcement, None)
                        .map(|f| f.map(Arc::new));
                }
                let spaces = match net.kernel {
                    crate::profile::network::KernelFence::Landlock => None,
                    _ => Some(self.spaces()),
                };
                let namespace = match &spaces {
                    None => Err("[network] kernel = \"landlock\"".to_string()),
                    Some(Ok(s)) if s.made().network => Ok(s.made().user),
                    Some(Ok(s)) => Err(s
                        .spaces
                        .why_not()
                        .first()
                        .cloned()
                        .unwrap_or_else(|| "no network namespace was made".into())),
                    Some(Err(why)) => Err(why.clone()),
                };
                let enforcement =
                    crate::net::fence::detect_with(net.kernel, landlock_on, namespace);
                NetworkFence::new(
                    net,
                    self.fence_settings(),
                    enforcement,
                    spaces.and_then(Result::ok).map(|s| Arc::clone(&s.spaces)),
                )
                .map(|f| f.map(Arc::new))
            })
            .clone()
    }

    /// Whether the session's commands would have their network enforced by the kernel,
    /// without making the fence: the made fence's answer if there is one, else the
    /// probe's. For what is said before any command (the instructions of `serve
    /// --http`, made once from the server's base session, must not make namespaces
    /// no task will use). None: no network fence (`mode = "off"`).
    pub fn network_kernel_enforced(&self) -> Option<bool> {
        let net = &self.profile.network;
        if !net.on() {
            return None;
        }
        let enforcement = match self.network.get() {
            Some(Ok(Some(fence))) => fence.enforcement().clone(),
            Some(_) => return None,
            None => crate::net::fence::detect(net.kernel, self.sandbox.is_some()),
        };
        Some(!matches!(
            enforcement,
            crate::net::fence::Enforcement::VariablesOnly { .. }
        ))
    }

    fn fence_settings(&self) -> crate::net::fence::FenceSettings {
        crate::net::fence::FenceSettings {
            on_ask: self.profile.shell.on_ask,
            approver: self.approver.clone(),
            ask_timeout: std::time::Duration::from_millis(self.profile.input.timeout_ms),
            audit_log: self.profile.shell.audit_log.clone(),
            run_dir: self.private.run.clone(),
            policy_rules: self.network_rules.to_vec(),
            approvals_file: self.profile.shell.approvals_file.clone(),
        }
    }

    /// The network fence's part of a task that is about to start (None: no fence).
    pub fn task_network(
        &self,
        command: &str,
    ) -> Result<Option<(Arc<NetworkFence>, TaskNet)>, ToolError> {
        let fence = self.network().map_err(|why| {
            ToolError::new(
                Code::Unsupported,
                why,
                "see `whalebox doctor`; or set [network] mode = \"best-effort\" in the profile",
            )
        })?;
        match fence {
            None => Ok(None),
            Some(f) => {
                // Out of descriptors (the task's port, the hand-over socket) is the
                // machine's state, not a bug: the message still carries the errno.
                let deny = self.profile.landlock.network
                    == crate::guard::landlock::NetworkMode::Deny
                    && self.sandbox.is_some();
                let net = f.prepare(command, deny).map_err(|e| {
                    ToolError::io(
                        "cannot set up the command's network fence",
                        &std::io::Error::other(e),
                        "the command was not started",
                    )
                })?;
                Ok(Some((f, net)))
            }
        }
    }
}
