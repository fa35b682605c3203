//! Fitting the session to the client that connected, known by its MCP `clientInfo`
//! name. Clients differ in what they do with a result before the model reads it: Codex
//! cuts a long one in the middle (removing whalebox's own truncation marker) and times a
//! call out at 60 s; Claude Code loads MCP tools lazily unless told otherwise. The fit
//! lowers whalebox's limits below each client's and names the tool hints it honours; a
//! profile's `[output.clients."NAME"]` replaces the built-in entry, `[output]
//! fit_to_client = false` turns the built-in ones off. The manual's client table
//! (docs/src/setup/claude-code-and-codex.md) says the same.

use serde_json::{Map, Value, json};

use crate::profile::{OutputSection, ShellSection};

/// What one known client needs.
struct Known {
    /// Its `clientInfo.name`.
    name: &'static str,
    /// A result cap it will neither cut nor spill to a file (None: the profile's).
    max_chars: Option<usize>,
    /// The longest wait that still answers before its tool timeout (None: the profile's).
    max_yield_ms: Option<u64>,
    /// It reads Claude Code's `anthropic/*` tool hints.
    anthropic_hints: bool,
    /// It starts the server with its own environment, where these variables (when set)
    /// lower its limits: the largest result in tokens, and the tool timeout in ms.
    env_limits: Option<(&'static str, &'static str)>,
}

const KNOWN: &[Known] = &[
    // Claude Code 2.1: a result above 50,000 characters (or about 25k tokens) is saved
    // to a file the model is told to read (outside the fences); the profile's 30,000
    // characters stay below that. Its MCP tool timeout is far above whalebox's longest
    // wait. Without `anthropic/alwaysLoad` it defers the tools behind its tool search.
    Known {
        name: "claude-code",
        max_chars: None,
        max_yield_ms: None,
        anthropic_hints: true,
        env_limits: Some(("MAX_MCP_OUTPUT_TOKENS", "MCP_TOOL_TIMEOUT")),
    },
    // Codex CLI 0.171: for a model it has no metadata for, a result is cut to about
    // 12,000 characters in the middle, with its own marker (tests/clients); its default
    // `tool_timeout_sec` is 60, so a wait ends 15 s before it.
    Known {
        name: "codex-mcp-client",
        max_chars: Some(9_000),
        max_yield_ms: Some(45_000),
        anthropic_hints: false,
        // Codex passes the server only a few variables; its `tool_timeout_sec` is in its
        // config, out of sight: `[output.clients."codex-mcp-client"]` follows it.
        env_limits: None,
    },
];

/// The session's limits and hints for one client.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    pub client: String,
    pub max_chars: usize,
    pub max_yield_ms: u64,
    /// `_meta` for each of whalebox's tools in `tools/list` (empty: none).
    pub tool_meta: Map<String, Value>,
    /// Where the limits came from, for the log and `whalebox doctor`.
    pub source: &'static str,
}

/// A token is at least this many characters of whalebox's text (code and prose run
/// 3.5 to 4), so a cap of tokens × 3 characters stays under a token limit.
const CHARS_PER_TOKEN_FLOOR: usize = 3;
/// A wait ends this long before the client's tool timeout.
const TIMEOUT_MARGIN_MS: u64 = 10_000;

/// The fit for the client named `client` (empty when the client gave no name);
/// `var` reads this server's environment (the client's, for clients that pass it on).
pub fn fit_for(
    client: &str,
    output: &OutputSection,
    shell: &ShellSection,
    var: &dyn Fn(&str) -> Option<String>,
) -> Fit {
    let mut fit = Fit {
        client: client.to_string(),
        max_chars: output.max_chars,
        max_yield_ms: shell.max_yield_ms,
        tool_meta: Map::new(),
        source: "the profile",
    };
    let known = KNOWN.iter().find(|k| k.name == client);
    if output.fit_to_client
        && let Some(k) = known
    {
        // The built-in fit only ever lowers the profile's limits.
        fit.max_chars = k.max_chars.map_or(fit.max_chars, |c| c.min(fit.max_chars));
        fit.max_yield_ms = k
            .max_yield_ms
            .map_or(fit.max_yield_ms, |y| y.min(fit.max_yield_ms));
        if k.anthropic_hints {
            fit.tool_meta
                .insert("anthropic/alwaysLoad".into(), json!(true));
        }
        fit.source = "the built-in fit for this client";
        if let Some((tokens_var, timeout_var)) = k.env_limits {
            let number = |name: &str| var(name).and_then(|v| v.trim().parse::<u64>().ok());
            if let Some(tokens) = number(tokens_var).filter(|t| *t > 0) {
                let chars = (tokens as usize).saturating_mul(CHARS_PER_TOKEN_FLOOR);
                fit.max_chars = fit.max_chars.min(chars.max(MIN_FITTED_CHARS));
            }
            if let Some(timeout) = number(timeout_var).filter(|t| *t >= 1_000) {
                let wait = timeout.saturating_sub(TIMEOUT_MARGIN_MS).max(timeout / 2);
                fit.max_yield_ms = fit.max_yield_ms.min(wait);
            }
        }
    }
    if let Some(own) = output.clients.get(client) {
        fit.max_chars = own.max_chars.unwrap_or(fit.max_chars);
        fit.max_yield_ms = own.max_yield_ms.unwrap_or(fit.max_yield_ms);
        fit.source = "the profile's [output.clients] entry";
    }
    if fit.tool_meta.contains_key("anthropic/alwaysLoad") {
        // Claude Code spills a result larger than this to a file: keep it above
        // whalebox's own cap (plus the code and marker around the text), and never
        // below Claude Code's own default.
        fit.tool_meta.insert(
            "anthropic/maxResultSizeChars".into(),
            json!((fit.max_chars + 2_000).max(CLAUDE_SPILL_DEFAULT)),
        );
    }
    fit
}

/// Whatever a client's variables say, a result shows at least this much.
const MIN_FITTED_CHARS: usize = 1_000;

/// The size above which Claude Code 2.1 spills a result to a file.
const CLAUDE_SPILL_DEFAULT: usize = 50_000;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::ClientLimits;

    fn no_vars(_: &str) -> Option<String> {
        None
    }

    fn sections() -> (OutputSection, ShellSection) {
        (OutputSection::default(), ShellSection::default())
    }

    #[test]
    fn an_unknown_client_gets_the_profile() {
        let (out, shell) = sections();
        let fit = fit_for("some-agent", &out, &shell, &no_vars);
        assert_eq!(fit.max_chars, out.max_chars);
        assert_eq!(fit.max_yield_ms, shell.max_yield_ms);
        assert!(fit.tool_meta.is_empty());
    }

    #[test]
    fn codex_gets_a_cap_below_its_cut_and_a_wait_below_its_timeout() {
        let (out, shell) = sections();
        let fit = fit_for("codex-mcp-client", &out, &shell, &no_vars);
        assert!(fit.max_chars < out.max_chars);
        assert!(fit.max_yield_ms <= 45_000);
        assert!(fit.tool_meta.is_empty());
    }

    #[test]
    fn claude_code_gets_its_hints() {
        let (out, shell) = sections();
        let fit = fit_for("claude-code", &out, &shell, &no_vars);
        assert_eq!(fit.tool_meta["anthropic/alwaysLoad"], json!(true));
        assert_eq!(fit.tool_meta["anthropic/maxResultSizeChars"], json!(50_000));
        let mut big = out.clone();
        big.max_chars = 80_000;
        let fit = fit_for("claude-code", &big, &shell, &no_vars);
        assert_eq!(fit.tool_meta["anthropic/maxResultSizeChars"], json!(82_000));
    }

    #[test]
    fn claude_codes_own_variables_lower_the_limits() {
        let (out, shell) = sections();
        let vars = |name: &str| match name {
            "MAX_MCP_OUTPUT_TOKENS" => Some("5000".to_string()),
            "MCP_TOOL_TIMEOUT" => Some("30000".to_string()),
            _ => None,
        };
        let fit = fit_for("claude-code", &out, &shell, &vars);
        assert_eq!(fit.max_chars, 15_000);
        assert_eq!(fit.max_yield_ms, 20_000);
        // Codex does not pass its environment on: the same variables mean nothing there.
        let fit = fit_for("codex-mcp-client", &out, &shell, &vars);
        assert_eq!(fit.max_chars, 9_000);
        let tiny = |name: &str| (name == "MCP_TOOL_TIMEOUT").then(|| "4000".to_string());
        assert_eq!(
            fit_for("claude-code", &out, &shell, &tiny).max_yield_ms,
            2_000
        );
    }

    #[test]
    fn the_profile_turns_the_fit_off_and_its_entries_win() {
        let (mut out, shell) = sections();
        out.fit_to_client = false;
        let fit = fit_for("codex-mcp-client", &out, &shell, &no_vars);
        assert_eq!(fit.max_chars, out.max_chars);
        out.clients.insert(
            "codex-mcp-client".into(),
            ClientLimits {
                max_chars: Some(5_000),
                max_yield_ms: None,
            },
        );
        let fit = fit_for("codex-mcp-client", &out, &shell, &no_vars);
        assert_eq!(fit.max_chars, 5_000);
        assert_eq!(fit.max_yield_ms, shell.max_yield_ms);
    }
}
