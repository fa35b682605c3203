//! How a call reaches a person over MCP, by lifecycle:
//! - classic (`initialize`), client with form elicitation: `elicitation/create` while
//!   the call waits ([`Asking::Now`]);
//! - 2026-07-28: no server-initiated requests; the call answers `input_required` with
//!   the form and a sealed `requestState`, and the client's retry of the same call
//!   carries the answer ([`Asking::Retry`]). The state is sealed with a key this server
//!   drew at start (a state from another server never opens), bound to the tool and its
//!   arguments (a state moved to another call never opens) and short-lived;
//! - otherwise nobody can be asked, and the tool says so.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequiredResult, InputResponses, ProtocolVersion, RequestStateCodec, SealOptions,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{RoleServer, ServiceError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::core::{Answer, Asker, Asking, Form, Resumed};

/// The key of whalebox's one question in `inputRequests` / `inputResponses`.
const INPUT_KEY: &str = "whalebox";

/// What the sealed `requestState` carries: the tool's continuation state, and when the
/// question went out (to tell a client's instant dismissal from a person's answer).
#[derive(Serialize, Deserialize)]
struct Sealed {
    state: Value,
    #[serde(default)]
    asked_at_ms: u64,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

pub struct Questions {
    codec: RequestStateCodec,
}

/// Can this 2026-07-28 request carry a question back (its client declared elicitation)?
pub fn can_retry(context: &RequestContext<RoleServer>) -> bool {
    modern(context)
        && context
            .meta
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some())
}

/// Is this session on the 2026-07-28 lifecycle (or later)?
pub fn modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// The bytes a state is bound to: the tool and its arguments as the client sent them.
fn binding(tool: &str, args: &Value) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(tool.as_bytes());
    h.update([0]);
    h.update(args.to_string().as_bytes());
    h.finalize().to_vec()
}

/// Puts forms to the client's user with `elicitation/create`, when it declared form mode.
pub fn elicitation_asker(context: &RequestContext<RoleServer>) -> Option<Asker> {
    let peer = context.peer.clone();
    if !peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
    {
        return None;
    }
    Some(Arc::new(move |form: Form, timeout: Duration| {
        let peer = peer.clone();
        Box::pin(async move {
            let Some(params) = elicit_params(&form) else {
                return Answer::Cancel;
            };
            let asked = std::time::Instant::now();
            let answer = match peer
                .create_elicitation_with_timeout(params, Some(timeout))
                .await
            {
                Ok(result) => match result.action {
                    ElicitationAction::Accept => Answer::Accept(
                        result
                            .content
                            .and_then(|c| c.as_object().cloned())
                            .unwrap_or_default(),
                    ),
                    ElicitationAction::Decline => Answer::Decline,
                    _ => Answer::Cancel,
                },
                Err(ServiceError::Timeout { .. }) => Answer::Timeout,
                Err(e) => {
                    tracing::warn!("elicitation failed: {e}");
                    Answer::Cancel
                }
            };
            answer.judged(asked.elapsed())
        })
    }))
}

fn elicit_params(form: &Form) -> Option<ElicitRequestParams> {
    let schema: ElicitationSchema = match serde_json::from_value(form.schema.clone()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("a form whalebox built is not an elicitation schema: {e}");
            return None;
        }
    };
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: form.message.clone(),
        requested_schema: schema,
    })
}

impl Questions {
    pub fn new() -> Questions {
        let mut key = [0u8; 32];
        if let Err(e) = getrandom::fill(&mut key) {
            // Without randomness no state could be trusted: refuse to start rather than
            // seal with a guessable key.
            panic!("cannot draw the request-state key from the kernel: {e}");
        }
        Questions {
            codec: RequestStateCodec::try_new(key.to_vec())
                .expect("32 random bytes are a long enough request-state key"),
        }
    }

    /// How the call `tool(args)` can ask; Err: a retry whose state does not open.
    pub fn asking(
        &self,
        tool: &str,
        args: &Value,
        context: &RequestContext<RoleServer>,
        responses: Option<&InputResponses>,
        state: Option<&str>,
    ) -> Result<Asking, String> {
        let modern = modern(context);
        if let Some(state) = state {
            if !modern {
                return Err(
                    "a requestState came on a session without the 2026-07-28 lifecycle".into(),
                );
            }
            let bound = binding(tool, args);
            let sealed: Sealed = self
                .codec
                .open_json_with(state, &bound)
                .map_err(|e| {
                    format!(
                        "the requestState does not belong to this call of {tool} on this server, or has expired ({e}); nothing was answered"
                    )
                })?;
            let asked = Duration::from_millis(now_ms().saturating_sub(sealed.asked_at_ms));
            let answer = responses
                .and_then(|r| r.get(INPUT_KEY))
                .map(Answer::from_elicit_result)
                .unwrap_or(Answer::Cancel)
                .judged(asked);
            return Ok(Asking::Retry(Some(Resumed {
                state: sealed.state,
                answer,
            })));
        }
        if modern {
            // Capabilities travel with each request on this lifecycle.
            return Ok(if can_retry(context) {
                Asking::Retry(None)
            } else {
                Asking::Nobody("the client did not declare the elicitation capability".into())
            });
        }
        Ok(match elicitation_asker(context) {
            Some(asker) => Asking::Now(asker),
            None => Asking::Nobody("the client did not declare the elicitation capability".into()),
        })
    }

    /// The `input_required` result for a tool's [`crate::core::input_required`] answer
    /// (its envelope's `data`), or None when that data is not one.
    pub fn input_required(
        &self,
        tool: &str,
        args: &Value,
        data: &Value,
        ttl: Duration,
    ) -> Option<InputRequiredResult> {
        let form = Form {
            message: data["form"]["message"].as_str()?.to_string(),
            schema: data["form"]["schema"].clone(),
        };
        let params = elicit_params(&form)?;
        let bound = binding(tool, args);
        let sealed = self
            .codec
            .seal_json_with(
                &Sealed {
                    state: data["state"].clone(),
                    asked_at_ms: now_ms(),
                },
                &SealOptions::new().associated_data(&bound).ttl(ttl),
            )
            .ok()?;
        let requests = BTreeMap::from([(
            INPUT_KEY.to_string(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        )]);
        Some(InputRequiredResult::new(Some(requests), Some(sealed)))
    }
}

impl Default for Questions {
    fn default() -> Self {
        Self::new()
    }
}
