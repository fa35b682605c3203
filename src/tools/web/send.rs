//! A request and its redirects under the guard of [`crate::web`], within `timeout_ms`,
//! and the approval of new hosts: `on_new_host` allows, refuses, or asks the person
//! (now, or through a retry that brings the answer).

use std::collections::HashSet;
use std::time::Duration;

use reqwest::Method;
use serde_json::json;
use url::Url;

use crate::boundary::{Approval, ApprovalRequest, approval_form, approval_of};
use crate::core::{Asking, CallContext, Code, ToolError, input_required};
use crate::profile::OnNewHost;
use crate::web::client::{self, Failure, Limits, Request, Response};
use crate::web::guard::host_matches;

use super::Web;

/// A first request to a host that nobody answered the question about.
fn unanswered(url: &Url, host: &str, answer: &crate::core::Answer) -> ToolError {
    let why = answer
        .unread_reason()
        .unwrap_or_else(|| "no one answered in time".into());
    denied(
        url,
        &format!("{host} needs a person's yes, and {why}"),
        "fetch a host allowed already, or put the request in your reply for the person",
    )
}

fn denied(url: &Url, why: &str, how: &str) -> ToolError {
    ToolError::new(Code::UrlDenied, format!("refused {url}: {why}"), how)
        .with_data(json!({"url": url.as_str()}))
}

impl Web {
    /// Hosts that need no question (allow_hosts), and the rule for the others.
    fn host_allowed_without_asking(&self, host: &str) -> bool {
        self.cfg().allow_hosts.iter().any(|p| host_matches(p, host))
    }

    /// The request with its redirects, asking the person about new hosts when the
    /// profile says so; the whole of it within `timeout_ms`.
    pub(super) async fn send(
        &self,
        url: Url,
        method: Method,
        headers: &[(String, String)],
        ctx: &CallContext,
    ) -> Result<Response, ToolError> {
        let cfg = self.cfg();
        let mut this_call: HashSet<String> = HashSet::new();
        // A retry bringing the person's answer about a host.
        if let Asking::Retry(Some(r)) = &ctx.ask
            && let Some(host) = r.state["host"].as_str()
        {
            match approval_of(&r.answer) {
                Some(Approval::Once) => {
                    this_call.insert(host.to_string());
                }
                Some(Approval::Session) => {
                    if let Ok(mut a) = self.approved.lock() {
                        a.insert(host.to_string());
                    }
                }
                Some(Approval::Deny) => {
                    return Err(denied(
                        &url,
                        &format!("the person did not allow {host}"),
                        "fetch another host, or ask the person why",
                    ));
                }
                None => return Err(unanswered(&url, host, &r.answer)),
            }
        }
        let timeout = Duration::from_millis(cfg.timeout_ms);
        let work = async {
            loop {
                let approved: Option<HashSet<String>> = match cfg.on_new_host {
                    OnNewHost::Allow => None,
                    _ => {
                        let mut set = self.approved.lock().map(|a| a.clone()).unwrap_or_default();
                        set.extend(this_call.iter().cloned());
                        Some(set)
                    }
                };
                let limits = Limits {
                    max_bytes: cfg.max_bytes,
                    max_redirects: cfg.max_redirects,
                    user_agent: &self.user_agent,
                    approved: approved.as_ref(),
                };
                let req = Request {
                    url: url.clone(),
                    method: method.clone(),
                    headers,
                    exempt: false,
                    body: None,
                };
                match client::send(req, &self.guard, &limits).await {
                    Ok(resp) => return Ok(resp),
                    Err(Failure::NewHost { url: at, host }) => {
                        if self.host_allowed_without_asking(&host) {
                            this_call.insert(host);
                            continue;
                        }
                        if cfg.on_new_host == OnNewHost::Deny {
                            return Err(denied(
                                &at,
                                &format!(
                                    "{host} is not in [web] allow_hosts and on_new_host = \"deny\""
                                ),
                                &format!("add \"{host}\" to [web] allow_hosts in the profile"),
                            ));
                        }
                        let question = ApprovalRequest {
                            command: format!("fetch {at}"),
                            reason: format!(
                                "[web] on_new_host = \"ask\": the first request to {host} in this session"
                            ),
                            task_id: None,
                        };
                        let form = approval_form(&question);
                        match &ctx.ask {
                            Asking::Now(asker) => {
                                let answer = asker(form, timeout).await;
                                match approval_of(&answer) {
                                    Some(Approval::Once) => {
                                        this_call.insert(host);
                                    }
                                    Some(Approval::Session) => {
                                        if let Ok(mut a) = self.approved.lock() {
                                            a.insert(host);
                                        }
                                    }
                                    Some(Approval::Deny) => {
                                        return Err(denied(
                                            &at,
                                            &format!("the person did not allow {host}"),
                                            "fetch another host, or ask the person why",
                                        ));
                                    }
                                    None => return Err(unanswered(&at, &host, &answer)),
                                }
                            }
                            Asking::Retry(_) => {
                                return Err(input_required(form, json!({"host": host})));
                            }
                            Asking::Nobody(why) => {
                                return Err(denied(
                                    &at,
                                    &format!(
                                        "{host} is new, [web] on_new_host = \"ask\", and nobody can be asked here ({why})"
                                    ),
                                    &format!(
                                        "add \"{host}\" to [web] allow_hosts, or use a client that supports elicitation"
                                    ),
                                ));
                            }
                        }
                    }
                    Err(Failure::Denied { url, denied: d }) => {
                        return Err(denied(&url, &d.why, &d.how));
                    }
                    Err(Failure::TooManyRedirects { url, max }) => {
                        return Err(ToolError::new(
                            Code::NetworkError,
                            format!("more than {max} redirects, the last to {url}"),
                            "fetch the last URL directly, or raise [web] max_redirects",
                        ));
                    }
                    Err(Failure::Network { url, why, next }) => {
                        return Err(ToolError::new(
                            Code::NetworkError,
                            format!("{url}: {why}"),
                            next,
                        )
                        .with_data(json!({"url": url.as_str()})));
                    }
                }
            }
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(r) => r,
            Err(_) => Err(ToolError::new(
                Code::Timeout,
                format!(
                    "{url} did not finish within {} ms ([web] timeout_ms)",
                    cfg.timeout_ms
                ),
                "the site is slow or keeps the connection open; try again later or another source",
            )),
        }
    }
}
