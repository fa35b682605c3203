//! Deciding a task's connection: the lists and the policy's `[[network]]` rules first,
//! then, for a host none names, the person (whose "for the session" answer is kept as a
//! rule in the approvals file).

use std::sync::Arc;
use std::time::Duration;

use super::Inner;
use crate::boundary::{Approval, ApprovalRequest, OnAsk};
use crate::net::decide::{Decide, Decision, DecisionFuture, Verdict};
use crate::policy::Decision as PolicyDecision;
use crate::policy::network::judge;
use crate::profile::network::OnNewDomain;

/// The decider of one task's door: the lists, then (for an unlisted host) the person.
pub(super) struct TaskDecide {
    pub(super) inner: Arc<Inner>,
    pub(super) token: String,
}

impl Decide for TaskDecide {
    fn decide<'a>(&'a self, host: &'a str, port: u16) -> DecisionFuture<'a> {
        Box::pin(async move {
            // Loopback through the proxy: never what a task needs, whatever the lists say
            // (unless allow_private names it, as before).
            if let Some(refusal) = self.inner.loopback(host, port) {
                return refusal;
            }
            // The profile's ports and deny list first; then the policy's rules, the
            // strictest of which wins over the profile's allow list; then the unlisted.
            let listed = self.inner.rules.verdict(host, port);
            if let Verdict::Denied(d) = listed {
                return d;
            }
            let ruled = judge(&self.inner.policy_rules, host, port);
            let reason = match (ruled, &listed) {
                (Some(r), _) if r.decision == PolicyDecision::Deny => {
                    return Decision::deny(
                        format!(
                            "{host}:{port} is refused by the policy rule {}",
                            r.describe()
                        ),
                        format!(
                            "change the rule at {} (the policy file is versioned with the repository)",
                            r.source
                        ),
                    );
                }
                (Some(r), _) if r.decision == PolicyDecision::Ask => {
                    format!("the policy rule {} asks about {host}", r.describe())
                }
                (Some(_), _) | (None, Verdict::Allowed) => return Decision::Allow,
                (None, _) => match self.inner.section.on_new_domain {
                    OnNewDomain::Allow => return Decision::Allow,
                    OnNewDomain::Deny => return self.inner.rules.decide_now(host, port),
                    OnNewDomain::Ask => format!(
                        "{host} is new, [network] on_new_domain = \"ask\" (in no allow or deny list)"
                    ),
                },
            };
            let inner = self.inner.clone();
            let token = self.token.clone();
            let host = host.to_string();
            let timeout = inner.ask_timeout;
            // The approver blocks while a person thinks.
            let asked = tokio::task::spawn_blocking(move || inner.ask(&token, &host, port, reason));
            match tokio::time::timeout(timeout + Duration::from_secs(5), asked).await {
                Ok(Ok(d)) => d,
                _ => Decision::deny(
                    "no answer to the question in time",
                    "add the host to [network] allow_domains in the profile",
                ),
            }
        })
    }
}

impl Inner {
    /// A refusal that says how loopback is reached, for `localhost` or a loopback
    /// address the profile's `allow_private` does not name.
    fn loopback(&self, host: &str, port: u16) -> Option<Decision> {
        let ip = match host {
            "localhost" => std::net::IpAddr::from([127, 0, 0, 1]),
            _ => host.trim_matches(['[', ']']).parse().ok()?,
        };
        if !ip.is_loopback()
            || crate::web::address::AllowList::parse(&self.section.allow_private)
                .is_ok_and(|a| a.allows(ip))
        {
            return None;
        }
        let how = match self.enforcement {
            super::Enforcement::Namespace { .. } => format!(
                "a server of this session's own is reached directly (NO_PROXY covers loopback), not through the proxy; for this machine's 127.0.0.1:{port}, add {port} to [network] host_ports"
            ),
            _ => format!(
                "add {port} to [network] host_ports: commands then connect to 127.0.0.1:{port} directly (a server another command of this session started on this machine's loopback, or one the person runs)"
            ),
        };
        Some(Decision::deny(
            format!("{host}:{port} is this machine's loopback, which the proxy does not reach"),
            how,
        ))
    }

    /// Ask about a host (`reason`: why it is asked); the answer holds for the session.
    pub(super) fn ask(&self, token: &str, host: &str, port: u16, reason: String) -> Decision {
        if let Some(allowed) = self.answered.lock().ok().and_then(|a| a.get(host).copied()) {
            return if allowed {
                Decision::Allow
            } else {
                Decision::deny(
                    format!("{host} was declined by the person earlier in this session"),
                    format!("add \"{host}\" to [network] allow_domains in the profile"),
                )
            };
        }
        // The task's id arrives just after its spawn returns; a connection can be faster.
        let mut task_id = self.task_of(token).0;
        for _ in 0..100 {
            if task_id.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
            task_id = self.task_of(token).0;
        }
        let answer = self.approver.get().and_then(|ask| {
            ask(&ApprovalRequest {
                command: format!("connect to {host}:{port}"),
                reason: reason.clone(),
                task_id,
            })
        });
        let how = format!(
            "add \"{host}\" to [network] allow_domains in the profile (or answer the question when asked)"
        );
        match answer {
            Some((approval @ (Approval::Once | Approval::Session), who)) => {
                if let Ok(mut a) = self.answered.lock() {
                    a.insert(host.to_string(), true);
                    // "For the session" is also kept as a rule a person can commit.
                    if approval == Approval::Session
                        && let Some(file) = &self.approvals_file
                        && let Err(e) = remember_host(file, host, who)
                    {
                        tracing::warn!("cannot remember the approval in {}: {e}", file.display());
                    }
                }
                Decision::Allow
            }
            Some((Approval::Deny, who)) => {
                if let Ok(mut a) = self.answered.lock() {
                    a.insert(host.to_string(), false);
                }
                Decision::deny(format!("{host} was declined by {who}"), how)
            }
            None => match self.on_ask {
                OnAsk::Allow => Decision::Allow,
                OnAsk::Deny => Decision::deny(
                    format!("{reason}, and no one can answer here ([shell] on_ask = \"deny\")"),
                    how,
                ),
            },
        }
    }
}

/// Append "allow HOST" to the approvals file as a `[[network]]` rule.
fn remember_host(file: &std::path::Path, host: &str, who: &str) -> std::io::Result<()> {
    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    let day = crate::boundary::today();
    let block = format!(
        "\n# Allowed for a session by {who} on {day}: a command's connection to {host}\n\
         [[network]]\nhosts = [{h}]\ndecision = \"allow\"\njustification = {j}\nmatch = [{h}]\n",
        h = quote(host),
        j = quote(&format!("approved for a session by {who} on {day}")),
    );
    crate::boundary::append_approval(file, &block)
}
