//! The session's plan, todo list and checkpoints as MCP resources
//! (`whalebox://session/plan`, `whalebox://session/todos`,
//! `whalebox://session/checkpoints`), with `notifications/resources/updated` on every change
//! to clients that subscribed: `resources/subscribe` on the classic lifecycle,
//! `subscriptions/listen` on 2026-07-28.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use rmcp::model::{ReadResourceResult, Resource, ResourceContents};
use rmcp::service::Peer;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::json;

use crate::session::Env;
use crate::session::board::{CHECKPOINTS_URI, PLAN_URI, TODOS_URI};

pub struct Resources {
    env: Arc<Env>,
    /// URIs a classic client subscribed to.
    subscribed: Arc<Mutex<HashSet<String>>>,
    forwarding: std::sync::OnceLock<()>,
}

impl Resources {
    pub fn new(env: Arc<Env>) -> Resources {
        Resources {
            env,
            subscribed: Arc::default(),
            forwarding: std::sync::OnceLock::new(),
        }
    }

    /// The URIs this session offers (by the groups that are on).
    pub fn uris(&self) -> Vec<&'static str> {
        let on = |g: &str| self.env.profile.tools.iter().any(|t| t == g);
        let mut uris = Vec::new();
        if on("plan") {
            uris.push(PLAN_URI);
        }
        if on("todo") {
            uris.push(TODOS_URI);
        }
        if on("checkpoints")
            && self
                .env
                .checkpoints
                .as_ref()
                .is_some_and(|s| s.get().is_ok())
        {
            uris.push(CHECKPOINTS_URI);
        }
        uris
    }

    pub fn list(&self) -> Vec<Resource> {
        self.uris()
            .into_iter()
            .map(|uri| {
                let (name, what) = if uri == PLAN_URI {
                    (
                        "plan",
                        "The agent's plan (update_plan), as JSON with a checklist `text`.",
                    )
                } else if uri == CHECKPOINTS_URI {
                    (
                        "checkpoints",
                        "The workspace's checkpoints, newest first (what each call changed), as \
                         JSON with a rendered `text`; restore one with checkpoint_restore or \
                         `whalebox checkpoints restore ID`.",
                    )
                } else {
                    (
                        "todos",
                        "The session's todo list (todo_*), as JSON with a rendered `text`.",
                    )
                };
                let mut r = Resource::new(uri, name).with_description(what);
                r.mime_type = Some("application/json".into());
                r
            })
            .collect()
    }

    pub fn read(&self, uri: &str) -> Result<ReadResourceResult, McpError> {
        if !self.uris().contains(&uri) {
            return Err(McpError::resource_not_found(
                format!(
                    "no resource {uri}; this session has: {}",
                    self.uris().join(", ")
                ),
                Some(serde_json::json!({"uri": uri})),
            ));
        }
        let body = if uri == CHECKPOINTS_URI {
            let Some(Ok(c)) = self.env.checkpoints.as_ref().map(|s| s.get()) else {
                return Err(McpError::resource_not_found("checkpoints are off", None));
            };
            let list = c
                .list(50, false)
                .map_err(|e| McpError::internal_error(e.to_string(), None))?;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0);
            json!({"text": crate::checkpoint::report::list(&list, now, crate::checkpoint::report::Reader::Person), "checkpoints": list})
        } else if uri == PLAN_URI {
            match self.env.board.plan() {
                Some(plan) => json!({"text": crate::tools::plan_text(&plan), "plan": plan}),
                None => json!({"text": "No plan yet.", "plan": null}),
            }
        } else {
            let list = self
                .env
                .board
                .todos()
                .map_err(|e| McpError::internal_error(e.to_string(), None))?;
            json!({"text": crate::tools::todos_text(&list.todos), "todos": list.todos})
        };
        let mut contents = ResourceContents::text(body.to_string(), uri);
        if let ResourceContents::TextResourceContents { mime_type, .. } = &mut contents {
            *mime_type = Some("application/json".into());
        }
        Ok(ReadResourceResult::new(vec![contents]))
    }

    /// A classic client's `resources/subscribe`: remember the URI, and start forwarding
    /// changes to this peer (once).
    pub fn subscribe(&self, uri: &str, peer: Peer<RoleServer>) -> Result<(), McpError> {
        if !self.uris().contains(&uri) {
            return Err(McpError::resource_not_found(
                format!("no resource {uri}"),
                Some(serde_json::json!({"uri": uri})),
            ));
        }
        self.subscribed
            .lock()
            .map_err(|_| McpError::internal_error("subscriptions poisoned", None))?
            .insert(uri.to_string());
        self.forwarding.get_or_init(|| {
            let mut changes = self.env.board.changes();
            let subscribed = Arc::clone(&self.subscribed);
            tokio::spawn(async move {
                loop {
                    let uri = match changes.recv().await {
                        Ok(uri) => uri,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(_) => break,
                    };
                    let wanted = subscribed.lock().map(|s| s.contains(uri)).unwrap_or(false);
                    if wanted
                        && peer
                            .notify_resource_updated(
                                rmcp::model::ResourceUpdatedNotificationParam::new(uri),
                            )
                            .await
                            .is_err()
                    {
                        break;
                    }
                }
            });
        });
        Ok(())
    }

    pub fn unsubscribe(&self, uri: &str) {
        if let Ok(mut s) = self.subscribed.lock() {
            s.remove(uri);
        }
    }

    /// A 2026-07-28 `subscriptions/listen`: send the accepted URIs' changes until the
    /// client cancels.
    pub async fn listen(&self, context: rmcp::service::SubscriptionContext) {
        let wanted: HashSet<String> = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect();
        let mut changes = self.env.board.changes();
        loop {
            tokio::select! {
                _ = context.cancelled() => break,
                change = changes.recv() => match change {
                    Ok(uri) if wanted.contains(uri) => {
                        if context.sink().notify_resource_updated(uri).await.is_err() {
                            break;
                        }
                    }
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(_) => break,
                },
            }
        }
    }
}
