//! Approvals waiting for a person on the 2026-07-28 lifecycle, where the server cannot
//! ask on its own: the decision server's thread parks the question here and blocks; the
//! next shell_run / shell_wait call waiting on that task hands it to the client as an
//! `input_required` result, and the client's retry brings the answer back through
//! [`PendingApprovals::answer`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use super::{Approval, ApprovalRequest, Approver};

struct Pending {
    request: ApprovalRequest,
    /// None: nobody answered.
    reply: mpsc::SyncSender<Option<Approval>>,
}

#[derive(Clone, Default)]
pub struct PendingApprovals {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    waiting: Mutex<HashMap<u64, Pending>>,
    next: AtomicU64,
    arrived: tokio::sync::Notify,
}

impl std::fmt::Debug for PendingApprovals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PendingApprovals")
    }
}

impl PendingApprovals {
    /// An approver that parks each question here for at most `timeout` (then nobody
    /// answered, and `on_ask` decides).
    pub fn approver(&self, timeout: Duration) -> Approver {
        let me = self.clone();
        Arc::new(move |req: &ApprovalRequest| {
            let (reply, answer) = mpsc::sync_channel(1);
            let id = me.inner.next.fetch_add(1, Ordering::Relaxed) + 1;
            me.inner.waiting.lock().ok()?.insert(
                id,
                Pending {
                    request: req.clone(),
                    reply,
                },
            );
            me.inner.arrived.notify_waiters();
            let got = answer.recv_timeout(timeout).ok();
            if let Ok(mut w) = me.inner.waiting.lock() {
                w.remove(&id);
            }
            got.flatten().map(|a| (a, "the user (MCP input_required)"))
        })
    }

    /// The first question parked for `task_id`, once there is one.
    pub async fn next_for(&self, task_id: &str) -> (u64, ApprovalRequest) {
        loop {
            let arrived = self.inner.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            if let Some(found) = self.inner.waiting.lock().ok().and_then(|w| {
                w.iter()
                    .filter(|(_, p)| p.request.task_id.as_deref() == Some(task_id))
                    .min_by_key(|(id, _)| **id)
                    .map(|(id, p)| (*id, p.request.clone()))
            }) {
                return found;
            }
            arrived.await;
        }
    }

    /// Answer question `id`; false when it is no longer waiting (it timed out).
    pub fn answer(&self, id: u64, approval: Option<Approval>) -> bool {
        let pending = self
            .inner
            .waiting
            .lock()
            .ok()
            .and_then(|mut w| w.remove(&id));
        match pending {
            Some(p) => p.reply.send(approval).is_ok(),
            None => false,
        }
    }
}

/// The form that asks a person about `req`.
pub fn approval_form(req: &ApprovalRequest) -> crate::core::Form {
    let task = req
        .task_id
        .as_deref()
        .map(|t| format!(" (task {t})"))
        .unwrap_or_default();
    crate::core::Form {
        message: format!(
            "whalebox: the agent wants to run `{}`{task}. The exec policy asks a person: {}. Allow it?",
            req.command, req.reason
        ),
        schema: serde_json::json!({
            "type": "object",
            "properties": {"decision": {"type": "string", "title": "Decision",
                "enum": ["allow_once", "allow_session", "deny"]}},
            "required": ["decision"]
        }),
    }
}

/// A person's answer to [`approval_form`]; anything but an explicit allow is a denial.
/// None: nobody answered (no reply in time, or the client dismissed the question
/// itself), which the profile's `on_ask` decides as when no one can be asked.
pub fn approval_of(answer: &crate::core::Answer) -> Option<Approval> {
    use crate::core::Answer;
    Some(match answer {
        Answer::Timeout | Answer::Unread { .. } => return None,
        crate::core::Answer::Accept(content) => {
            match content.get("decision").and_then(|d| d.as_str()) {
                Some("allow_once") => Approval::Once,
                Some("allow_session") => Approval::Session,
                _ => Approval::Deny,
            }
        }
        _ => Approval::Deny,
    })
}
