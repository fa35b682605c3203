//! `[mcp_servers.NAME]`: the upstream MCP servers whalebox starts (fenced) and fronts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[mcp_servers.NAME]`: one upstream MCP server (stdio), in the keys Codex uses.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerSection {
    /// The program (a path or a name in PATH), started by whalebox inside its fences.
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra variables for the server.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// whalebox's own variables passed by name; nothing else of its environment is.
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// true: reachable through tool_search and call_tool; false: listed directly.
    #[serde(default = "yes")]
    pub defer: bool,
    #[serde(default = "startup_timeout")]
    pub startup_timeout_ms: u64,
    #[serde(default = "tool_timeout")]
    pub tool_timeout_ms: u64,
    /// If non-empty, only these tools.
    #[serde(default)]
    pub enabled_tools: Vec<String>,
    #[serde(default)]
    pub disabled_tools: Vec<String>,
}

fn yes() -> bool {
    true
}

fn startup_timeout() -> u64 {
    10_000
}

fn tool_timeout() -> u64 {
    60_000
}

/// `[mcp_servers]` entries that cannot work.
pub(super) fn check(
    servers: &std::collections::BTreeMap<String, McpServerSection>,
) -> Result<(), String> {
    for (name, s) in servers {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            || name.contains("__")
        {
            return Err(format!(
                "[mcp_servers.{name}]: a server's name is letters, digits, `_` and `-` (no `__`): it becomes part of tool names (mcp__NAME__TOOL)"
            ));
        }
        if s.command.trim().is_empty() {
            return Err(format!("[mcp_servers.{name}] command is empty"));
        }
        if s.startup_timeout_ms == 0 || s.tool_timeout_ms == 0 {
            return Err(format!(
                "[mcp_servers.{name}] startup_timeout_ms and tool_timeout_ms must be at least 1"
            ));
        }
    }
    Ok(())
}
