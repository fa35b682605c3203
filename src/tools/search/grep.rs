//! The `grep` tool: the regex matcher, the parallel search of the files under the path
//! (filtered by `include`), and the result in the output mode asked for.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::WalkState;
use ignore::overrides::OverrideBuilder;
use nix::fcntl::OFlag;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{BoxFuture, CallContext, Tool, ToolError, ToolOutput, ToolResult, run_blocking};
use crate::guard::Allowed;
use crate::tools::Env;
use crate::tools::common::{args, io_error};
use crate::tools::walk::{Visibility, skipped_note, walker};

use super::collect::{Collector, FileHits, OutputMode};
use super::{Batch, cancelled, fit_rows, search_root};

const GREP_DEFAULT_MAX: usize = 200;
const MAX_CONTEXT: usize = 20;

pub(crate) struct Grep {
    pub(super) env: Arc<Env>,
}

#[derive(Deserialize)]
struct GrepArgs {
    pattern: String,
    path: Option<String>,
    include: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default)]
    fixed_strings: bool,
    context: Option<usize>,
    #[serde(default)]
    output_mode: OutputMode,
    max_results: Option<usize>,
    #[serde(default)]
    multiline: bool,
}

impl Tool for Grep {
    fn name(&self) -> &str {
        "grep"
    }

    fn title(&self) -> Option<String> {
        Some("Search file contents".into())
    }

    fn description(&self) -> String {
        "Search file contents with a regular expression (Rust regex syntax, ripgrep's engine). \
         Output `path:line:text` per matching line (context lines as `path-line-text`), \
         sorted by path; or only the matching files (`files_with_matches`), or match counts \
         per file (`count`). Respects .gitignore and skips hidden and binary files like rg. \
         `include` filters files by glob (e.g. \"*.rs\", \"src/**/*.{ts,tsx}\"). A pattern \
         spanning lines needs `multiline: true`."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression to search for (or a literal string with fixed_strings)."},
                "path": {"type": "string", "description": "File or directory to search (default: the workspace)."},
                "include": {"type": "string", "description": "Only search files matching this glob, e.g. \"*.rs\" or \"*.{ts,tsx}\"."},
                "case_insensitive": {"type": "boolean", "description": "Ignore case."},
                "fixed_strings": {"type": "boolean", "description": "Treat the pattern as a literal string, not a regex."},
                "context": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT, "description": "Lines of context before and after each match (content mode)."},
                "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "content (default): matching lines; files_with_matches: paths only; count: matches per file."},
                "max_results": {"type": "integer", "minimum": 1, "description": "Most matching lines (content) or files (other modes) to show; default 200."},
                "multiline": {"type": "boolean", "description": "Let the pattern match across lines (`.` also matches newlines)."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn run(self: Arc<Self>, input: Value, ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        run_blocking(move || self.grep(args(input)?, &ctx))
    }
}

impl Grep {
    fn build_matcher(&self, a: &GrepArgs) -> Result<RegexMatcher, ToolError> {
        let mut builder = RegexMatcherBuilder::new();
        builder
            .case_insensitive(a.case_insensitive)
            .fixed_strings(a.fixed_strings)
            // NUL bytes mean binary here, so a pattern can never match one.
            .ban_byte(Some(b'\0'));
        if a.multiline {
            builder.multi_line(true).dot_matches_new_line(true);
        } else {
            // Lets the engine search line by line, as rg does.
            builder.line_terminator(Some(b'\n'));
        }
        builder.build(&a.pattern).map_err(|e| {
            let msg = e.to_string();
            let next = if msg.contains("\\n") || msg.to_ascii_lowercase().contains("line terminator") {
                "the pattern matches a newline: set `multiline: true`, or search for one line at a time"
                    .to_string()
            } else if a.fixed_strings {
                "fix the pattern".to_string()
            } else {
                "fix the regex (escape special characters like `(`, `[`, `.`, `*` with `\\`), \
                 or set `fixed_strings: true` to search for the text literally"
                    .to_string()
            };
            ToolError::invalid_input(format!("invalid regex {:?}:\n{msg}", a.pattern), next)
                .with_data(json!({"pattern": a.pattern, "regex_error": msg}))
        })
    }

    fn grep(&self, a: GrepArgs, ctx: &CallContext) -> ToolResult {
        let env = &self.env;
        let matcher = self.build_matcher(&a)?;
        let root = search_root(env, a.path.as_deref())?;
        let context = a.context.unwrap_or(0).min(MAX_CONTEXT);
        let max_results = a.max_results.unwrap_or(GREP_DEFAULT_MAX).max(1);
        let mut walk = walker(&root.abs, Visibility::default());
        if let Some(glob) = a.include.as_deref().filter(|g| !g.trim().is_empty()) {
            let mut overrides = OverrideBuilder::new(&root.abs);
            overrides.add(glob).map_err(|e| {
                ToolError::invalid_input(
                    format!("invalid include glob {glob:?}: {e}"),
                    "use a glob like \"*.rs\", \"*.{ts,tsx}\" or \"src/**/*.py\"",
                )
            })?;
            let overrides = overrides.build().map_err(|e| {
                ToolError::invalid_input(
                    format!("invalid include glob {glob:?}: {e}"),
                    "fix the glob",
                )
            })?;
            walk.overrides(overrides);
        }
        let mut searcher_builder = SearcherBuilder::new();
        searcher_builder
            // Line numbers cost a newline count per block; only content shows them.
            .line_number(a.output_mode == OutputMode::Content)
            .multi_line(a.multiline)
            .binary_detection(BinaryDetection::quit(b'\0'));
        if a.output_mode == OutputMode::Content {
            searcher_builder
                .before_context(context)
                .after_context(context);
        }

        let results: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
        let stored = AtomicUsize::new(0);
        let overflow = AtomicBool::new(false);
        let files_searched = AtomicUsize::new(0);
        let cancel = &ctx.cancel;
        // Each file is opened beneath the root that admitted the search, following no
        // link: a directory a task swaps for a link to /proc/self or /root mid-walk is
        // skipped, not searched.
        let base = root.base_dir().map_err(|e| io_error(env, &root, e))?;
        let base = &base;
        let base_path = root.base.as_path();
        walk.build_parallel().run(|| {
            let mut searcher = searcher_builder.build();
            let matcher = &matcher;
            let mut batch = Batch::new(&results);
            let stored = &stored;
            let overflow = &overflow;
            let files_searched = &files_searched;
            let guard = &env.guard;
            let mode = a.output_mode;
            Box::new(move |entry| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                files_searched.fetch_add(1, Ordering::Relaxed);
                let mut sink = Collector {
                    matcher,
                    mode,
                    matches: 0,
                    lines: Vec::new(),
                    stored,
                    overflow,
                };
                let rel = entry.path().strip_prefix(base_path).unwrap_or(entry.path());
                let Ok(file) = base.open_file(rel, OFlag::O_RDONLY | OFlag::O_NONBLOCK) else {
                    return WalkState::Continue;
                };
                if searcher.search_file(matcher, &file, &mut sink).is_err() {
                    return WalkState::Continue;
                }
                if sink.matches > 0 {
                    batch.push(FileHits {
                        path: guard.show(entry.path()),
                        matches: sink.matches,
                        lines: sink.lines,
                    });
                }
                WalkState::Continue
            })
        });
        if cancel.is_cancelled() {
            return Err(cancelled("grep"));
        }
        let mut files = results.into_inner().unwrap_or_default();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let overflow = overflow.load(Ordering::Relaxed);
        self.render(
            &a,
            &root,
            files,
            max_results,
            context,
            overflow,
            files_searched.into_inner(),
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn render(
        &self,
        a: &GrepArgs,
        root: &Allowed,
        files: Vec<FileHits>,
        max_results: usize,
        context: usize,
        overflow: bool,
        files_searched: usize,
    ) -> ToolResult {
        let total_matches: u64 = files.iter().map(|f| f.matches).sum();
        let total_files = files.len();
        let mut data = json!({
            "pattern": a.pattern,
            "path": root.shown,
            "output_mode": match a.output_mode {
                OutputMode::Content => "content",
                OutputMode::FilesWithMatches => "files_with_matches",
                OutputMode::Count => "count",
            },
            "files_searched": files_searched,
            "files_with_matches": total_files,
        });
        if a.output_mode != OutputMode::FilesWithMatches {
            data["matches"] = json!(total_matches);
        }
        if total_files == 0 {
            let note = skipped_note(Visibility::default()).unwrap_or("");
            let text = format!(
                "No matches for {:?} in {} ({files_searched} files searched; {note}).",
                a.pattern, root.shown
            );
            return Ok(ToolOutput::new(text, data));
        }
        let budget = self.env.limits.max_chars().saturating_sub(400);
        let (rows, shown_units, unit) = match a.output_mode {
            OutputMode::FilesWithMatches => {
                let rows: Vec<String> = files
                    .iter()
                    .take(max_results)
                    .map(|f| f.path.clone())
                    .collect();
                let n = rows.len();
                (rows, n, "files")
            }
            OutputMode::Count => {
                let rows: Vec<String> = files
                    .iter()
                    .take(max_results)
                    .map(|f| format!("{}:{}", f.path, f.matches))
                    .collect();
                let n = rows.len();
                (rows, n, "files")
            }
            OutputMode::Content => {
                let mut rows = Vec::new();
                let mut shown = 0usize;
                'files: for f in &files {
                    for line in &f.lines {
                        match line {
                            None => rows.push("--".to_string()),
                            Some(l) if l.is_match => {
                                if shown >= max_results {
                                    break 'files;
                                }
                                shown += 1;
                                rows.push(format!("{}:{}:{}", f.path, l.number, l.text));
                            }
                            Some(l) => rows.push(format!("{}-{}-{}", f.path, l.number, l.text)),
                        }
                    }
                    if context > 0 {
                        rows.push("--".to_string());
                    }
                }
                while rows.last().is_some_and(|r| r == "--") {
                    rows.pop();
                }
                (rows, shown, "matching lines")
            }
        };
        let (mut text, rows_shown) = fit_rows(&rows, budget);
        let total_units = match a.output_mode {
            OutputMode::Content => total_matches as usize,
            _ => total_files,
        };
        let cut_by_budget = rows_shown < rows.len();
        if cut_by_budget || shown_units < total_units || overflow {
            let shown_note = if cut_by_budget {
                format!("output limit reached after {rows_shown} lines")
            } else {
                format!("showed {shown_units} of {total_units} {unit}")
            };
            text.push_str(&format!(
                "… {shown_note} ({total_matches} matches in {total_files} files); narrow `path`, \
                 `include` or the pattern, or use output_mode \"files_with_matches\"\n"
            ));
        }
        if overflow {
            text.push_str(
                "… too many matches to collect: the results above are incomplete; narrow the search\n",
            );
        }
        data["truncated"] = json!(cut_by_budget || shown_units < total_units || overflow);
        Ok(ToolOutput::new(text, data))
    }
}
