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
                let enforcement =
                    crate::net::fence::detect(self.profile.network.kernel, landlock_on);
                NetworkFence::new(
                    &self.profile.network,
                    crate::net::fence::FenceSettings {
                        on_ask: self.profile.shell.on_ask,
                        approver: self.approver.clone(),
                        ask_timeout: std::time::Duration::from_millis(
                            self.profile.input.timeout_ms,
                        ),
                        audit_log: self.profile.shell.audit_log.clone(),
                        run_dir: self.private.run.clone(),
                        policy_rules: self.network_rules.to_vec(),
                        approvals_file: self.profile.shell.approvals_file.clone(),
                    },
                    enforcement,
                )
                .map(|f| f.map(Arc::new))
            })
            .clone()
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
                let net = f.prepare(command).map_err(|e| {
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
