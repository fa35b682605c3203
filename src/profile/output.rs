//! `[output]` (what one result shows the model, fitted to the client) and `[edit]` (how
//! the edit group guards files).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[output]`: what one result shows the model, and how it is fitted to the client.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct OutputSection {
    /// Characters of `text` one result may show; head and tail are kept around a marker.
    pub max_chars: usize,
    /// Also declare an `outputSchema` and send the envelope as `structuredContent`.
    /// Off by default: Claude Code and Codex then hand the model that JSON instead of the
    /// text. The envelope is always in the result's `_meta` (`whalebox/envelope`).
    pub structured: bool,
    /// Fit the limits to the client that connects (known by its MCP `clientInfo` name):
    /// a result cap the client will not cut or spill to a file, a longest wait under its
    /// tool timeout, the tool hints it honours. Off: the profile as written for everyone.
    pub fit_to_client: bool,
    /// Limits for clients by `clientInfo` name; they replace the built-in fit for that
    /// client (and apply even with `fit_to_client = false`).
    pub clients: std::collections::BTreeMap<String, ClientLimits>,
}

impl Default for OutputSection {
    fn default() -> Self {
        OutputSection {
            max_chars: 30_000,
            structured: false,
            fit_to_client: true,
            clients: std::collections::BTreeMap::new(),
        }
    }
}

/// `[output.clients."NAME"]`: one client's limits; what is left out comes from the profile.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ClientLimits {
    /// Characters of `text` one result may show this client.
    pub max_chars: Option<usize>,
    /// The longest wait a call from this client may ask for (at most 50000).
    pub max_yield_ms: Option<u64>,
}

/// `[edit]`: how the edit group guards files.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EditSection {
    /// `write` over an existing file needs the file to have been read (or written) in
    /// this session, unchanged since. Off: overwrite whatever is there (the CLI, where
    /// every call is its own session, may want this).
    pub write_requires_read: bool,
    /// Largest file edit/multi_edit/write will load or produce.
    pub max_file_bytes: u64,
}

impl Default for EditSection {
    fn default() -> Self {
        EditSection {
            write_requires_read: true,
            max_file_bytes: 1024 * 1024 * 1024,
        }
    }
}
