//! A response as a result: a page of a cached document with the notes that say where
//! the rest is, HTTP errors, binary bodies, and the response headers as JSON.

use serde_json::{Value, json};

use crate::core::{Code, ToolError, ToolOutput};
use crate::web::cache::Doc;
use crate::web::client::Response;

use super::Web;

/// What a page call returns: a slice of a cached document.
pub(super) struct Paging {
    pub(super) start_index: usize,
    pub(super) max_length: usize,
}

pub(super) fn paging(start_index: Option<u64>, max_length: Option<u64>, default: usize) -> Paging {
    Paging {
        start_index: start_index.unwrap_or(0) as usize,
        max_length: max_length
            .map(|m| m as usize)
            .unwrap_or(default)
            .clamp(1, default.max(1)),
    }
}

impl Web {
    /// A slice of `doc` with the notes that say where the rest is.
    pub(super) fn page(&self, doc: &Doc, paging: &Paging, cached: bool, head: &str) -> ToolOutput {
        let total = doc.total_chars();
        let start = paging.start_index.min(total);
        let slice = doc.slice(start, paging.max_length);
        let end = start + slice.chars().count();
        let mut text = String::from(head);
        text.push_str(slice);
        let mut data = doc.meta.clone();
        data["total_chars"] = json!(total);
        data["start_index"] = json!(start);
        data["cached"] = json!(cached);
        if end < total {
            data["next_start_index"] = json!(end);
            text.push_str(&format!(
                "\n\n[{} more characters: call again with start_index={end}]",
                total - end
            ));
        }
        if doc.meta["truncated"] == true {
            text.push_str(&format!(
                "\n\n[the body was cut at {} bytes ([web] max_bytes)]",
                self.cfg().max_bytes
            ));
        }
        ToolOutput::new(text, data)
    }
}

pub(super) fn http_error(resp: &Response, text: &str) -> ToolError {
    let snippet: String = text.chars().take(500).collect();
    ToolError::new(
        Code::HttpError,
        format!("{} answered HTTP {}:\n{snippet}", resp.final_url, resp.status),
        match resp.status {
            404 | 410 => "the page does not exist; check the URL or search for where it moved",
            401 | 403 => "the site refuses this request (login or a block); use another source",
            429 => "the site rate-limits requests; wait before retrying",
            _ => "retry later, or use another source",
        },
    )
    .with_data(json!({"status": resp.status, "url": resp.final_url.as_str(), "headers": headers_map(&resp.headers)}))
}

pub(super) fn headers_map(headers: &[(String, String)]) -> Value {
    let mut map = serde_json::Map::new();
    for (k, v) in headers {
        match map.get_mut(k) {
            Some(Value::String(old)) => {
                old.push_str(", ");
                old.push_str(v);
            }
            _ => {
                map.insert(k.clone(), json!(v));
            }
        }
    }
    Value::Object(map)
}

pub(super) fn binary(resp: &Response) -> ToolError {
    ToolError::new(
        Code::BinaryFile,
        format!(
            "{} is {} ({} bytes{}): not text, so its bytes are not shown",
            resp.final_url,
            resp.content_type.as_deref().unwrap_or("binary data"),
            resp.body.len(),
            if resp.cut { ", cut at max_bytes" } else { "" }
        ),
        "download it with a shell command (curl -o) if the shell group is on and the policy allows it",
    )
    .with_data(json!({"content_type": resp.content_type, "bytes": resp.body.len(), "url": resp.final_url.as_str()}))
}
