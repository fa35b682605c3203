//! Group `search`: grep (file contents) and search_files (paths), both on ripgrep's
//! engine: `ignore`'s parallel walker, `grep-regex` matching, `grep-searcher` reading.
//! Results are collected from all threads and sorted by path, so the same call always
//! gives the same answer.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use globset::{GlobBuilder, GlobMatcher};
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::WalkState;
use ignore::overrides::OverrideBuilder;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{
    BoxFuture, CallContext, Code, Registry, RegistryError, Tool, ToolError, ToolOutput, ToolResult,
    run_blocking,
};
use crate::guard::{Access, Allowed};

use super::Env;
use super::common::{args, guarded, io_error};
use super::walk::{Visibility, skipped_note, walker};

pub(crate) fn register(env: &Arc<Env>, registry: &mut Registry) -> Result<(), RegistryError> {
    registry.register(
        "search",
        Arc::new(Grep {
            env: Arc::clone(env),
        }),
    )?;
    registry.register(
        "search",
        Arc::new(SearchFiles {
            env: Arc::clone(env),
        }),
    )?;
    Ok(())
}

const GREP_DEFAULT_MAX: usize = 200;
const FILES_DEFAULT_MAX: usize = 500;
/// Matched lines longer than this are shown as a window around the match.
const MAX_MATCH_LINE_CHARS: usize = 500;
/// Lines kept in memory across all files before further lines are only counted.
const MAX_STORED_LINES: usize = 200_000;
const MAX_CONTEXT: usize = 20;

fn cancelled(tool: &str) -> ToolError {
    ToolError::new(
        Code::Cancelled,
        format!("{tool} was cancelled"),
        "search a narrower path if the result is still needed",
    )
}

/// Search root: a file or directory the guard allows reading.
fn search_root(env: &Env, path: Option<&str>) -> Result<Allowed, ToolError> {
    let allowed = guarded(env, path.unwrap_or("."), Access::Read)?;
    std::fs::metadata(&allowed.abs).map_err(|e| io_error(env, &allowed, e))?;
    Ok(allowed)
}

/// A walker thread's results, handed to the shared list in batches and, whatever is
/// left, when the thread's visitor is dropped at the end of the walk.
struct Batch<'a, T> {
    local: Vec<T>,
    shared: &'a Mutex<Vec<T>>,
}

impl<'a, T> Batch<'a, T> {
    const SIZE: usize = 256;

    fn new(shared: &'a Mutex<Vec<T>>) -> Self {
        Batch {
            local: Vec::new(),
            shared,
        }
    }

    fn push(&mut self, item: T) {
        self.local.push(item);
        if self.local.len() >= Self::SIZE {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if let Ok(mut all) = self.shared.lock() {
            all.append(&mut self.local);
        }
    }
}

impl<T> Drop for Batch<'_, T> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Join rows until `budget` characters, then say what was left out.
fn fit_rows(rows: &[String], budget: usize) -> (String, usize) {
    let mut text = String::new();
    let mut used = 0;
    for (i, row) in rows.iter().enumerate() {
        let len = row.chars().count() + 1;
        if used + len > budget && i > 0 {
            return (text, i);
        }
        used += len;
        text.push_str(row);
        text.push('\n');
    }
    (text, rows.len())
}

// ---------------------------------------------------------------------------------------
// grep

pub(crate) struct Grep {
    env: Arc<Env>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Default, Debug)]
#[serde(rename_all = "snake_case")]
enum OutputMode {
    #[default]
    Content,
    FilesWithMatches,
    Count,
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

#[derive(Debug, Clone)]
struct Line {
    number: u64,
    text: String,
    is_match: bool,
}

/// One file's results. `lines` holds matches and context, with `None` as a break
/// between non-adjacent groups.
#[derive(Debug)]
struct FileHits {
    path: String,
    matches: u64,
    lines: Vec<Option<Line>>,
}

/// Collects one file's matches (and context) from the searcher.
struct Collector<'a> {
    matcher: &'a RegexMatcher,
    mode: OutputMode,
    matches: u64,
    lines: Vec<Option<Line>>,
    stored: &'a AtomicUsize,
    overflow: &'a AtomicBool,
}

impl Collector<'_> {
    fn keep(&mut self, line: Option<Line>) {
        if self.stored.fetch_add(1, Ordering::Relaxed) >= MAX_STORED_LINES {
            self.overflow.store(true, Ordering::Relaxed);
        } else {
            self.lines.push(line);
        }
    }
}

fn line_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    String::from_utf8_lossy(bytes).into_owned()
}

/// A long line shown as a window around its first match.
fn snippet(matcher: &RegexMatcher, line: &str) -> String {
    let total = line.chars().count();
    if total <= MAX_MATCH_LINE_CHARS {
        return line.to_string();
    }
    let start_byte = matcher
        .find(line.as_bytes())
        .ok()
        .flatten()
        .map(|m| m.start())
        .unwrap_or(0);
    let start_char = line[..floor_char_boundary(line, start_byte)]
        .chars()
        .count();
    let from = start_char.saturating_sub(MAX_MATCH_LINE_CHARS / 5);
    let to = (from + MAX_MATCH_LINE_CHARS).min(total);
    let body: String = line.chars().skip(from).take(to - from).collect();
    let before = if from > 0 {
        format!("[{from} chars] …")
    } else {
        String::new()
    };
    let after = if to < total {
        format!("… [{} more chars]", total - to)
    } else {
        String::new()
    };
    format!("{before}{body}{after}")
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

impl Sink for Collector<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.matches += 1;
        match self.mode {
            OutputMode::FilesWithMatches => return Ok(false),
            OutputMode::Count => return Ok(true),
            OutputMode::Content => {}
        }
        let first = m.line_number().unwrap_or(0);
        for (number, raw) in (first..).zip(m.lines()) {
            let text = snippet(self.matcher, &line_text(raw));
            self.keep(Some(Line {
                number,
                text,
                is_match: true,
            }));
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.mode == OutputMode::Content && !matches!(c.kind(), SinkContextKind::Other) {
            let text = line_text(c.bytes());
            let text = super::common::cut_line(&text, MAX_MATCH_LINE_CHARS);
            self.keep(Some(Line {
                number: c.line_number().unwrap_or(0),
                text,
                is_match: false,
            }));
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if self.mode == OutputMode::Content {
            self.keep(None);
        }
        Ok(true)
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
                if searcher
                    .search_path(matcher, entry.path(), &mut sink)
                    .is_err()
                {
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

// ---------------------------------------------------------------------------------------
// search_files

pub(crate) struct SearchFiles {
    env: Arc<Env>,
}

#[derive(Deserialize)]
struct FilesArgs {
    pattern: String,
    path: Option<String>,
    max_results: Option<usize>,
}

impl Tool for SearchFiles {
    fn name(&self) -> &str {
        "search_files"
    }

    fn title(&self) -> Option<String> {
        Some("Find files by glob".into())
    }

    fn description(&self) -> String {
        "Find files and directories whose path matches a glob, sorted by path. A pattern \
         with a `/` matches the path relative to `path` (e.g. \"src/**/*.rs\", \"**/test_*.py\"); \
         one without matches the name at any depth (e.g. \"*.toml\", \"Cargo.*\"). Respects \
         .gitignore and skips hidden files. Directories are shown with a trailing `/`. To search \
         inside files use grep."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob, e.g. \"**/*.rs\" or \"*.md\"."},
                "path": {"type": "string", "description": "Directory to search (default: the workspace)."},
                "max_results": {"type": "integer", "minimum": 1, "description": "Most paths to show; default 500."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn run(self: Arc<Self>, input: Value, ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        run_blocking(move || self.search(args(input)?, &ctx))
    }
}

/// A compiled path glob: against the whole relative path, or the name only.
struct PathGlob {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl PathGlob {
    fn new(pattern: &str, root: &Path) -> Result<PathGlob, ToolError> {
        let mut pattern = pattern.trim().to_string();
        // An absolute pattern under the search root: make it relative.
        if pattern.starts_with('/') {
            let root_str = format!("{}/", root.display());
            match pattern.strip_prefix(&root_str) {
                Some(rest) => pattern = rest.to_string(),
                None => {
                    return Err(ToolError::invalid_input(
                        format!(
                            "the pattern {pattern:?} is an absolute path outside the search path {}",
                            root.display()
                        ),
                        "put the directory in `path` and a relative glob in `pattern` (e.g. path \"src\", pattern \"**/*.rs\")",
                    ));
                }
            }
        }
        let pattern = pattern.trim_start_matches("./").to_string();
        if pattern.is_empty() {
            return Err(ToolError::invalid_input(
                "the pattern is empty",
                "give a glob such as \"**/*.rs\"",
            ));
        }
        let glob = GlobBuilder::new(&pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| {
                ToolError::invalid_input(
                    format!("invalid glob {pattern:?}: {e}"),
                    "use glob syntax: `*` within a name, `**` across directories, `{a,b}` alternatives, `[abc]` classes",
                )
            })?;
        Ok(PathGlob {
            whole_path: pattern.contains('/'),
            matcher: glob.compile_matcher(),
        })
    }

    fn is_match(&self, rel: &Path) -> bool {
        if self.whole_path {
            self.matcher.is_match(rel)
        } else {
            rel.file_name().is_some_and(|n| self.matcher.is_match(n))
        }
    }
}

impl SearchFiles {
    fn search(&self, a: FilesArgs, ctx: &CallContext) -> ToolResult {
        let env = &self.env;
        let root = search_root(env, a.path.as_deref())?;
        if !root.abs.is_dir() {
            return Err(ToolError::invalid_input(
                format!("{} is a file, not a directory", root.shown),
                "give a directory as `path`",
            ));
        }
        let glob = PathGlob::new(&a.pattern, &root.abs)?;
        let max_results = a.max_results.unwrap_or(FILES_DEFAULT_MAX).max(1);
        let found: Mutex<Vec<(String, bool)>> = Mutex::new(Vec::new());
        let cancel = &ctx.cancel;
        walker(&root.abs, Visibility::default())
            .build_parallel()
            .run(|| {
                let glob = &glob;
                let found = &found;
                let root = &root.abs;
                let guard = &env.guard;
                let mut batch = Batch::new(found);
                Box::new(move |entry| {
                    if cancel.is_cancelled() {
                        return WalkState::Quit;
                    }
                    let Ok(entry) = entry else {
                        return WalkState::Continue;
                    };
                    if entry.depth() == 0 {
                        return WalkState::Continue;
                    }
                    let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
                    if glob.is_match(rel) {
                        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                        batch.push((guard.show(entry.path()), is_dir));
                    }
                    WalkState::Continue
                })
            });
        if cancel.is_cancelled() {
            return Err(cancelled("search_files"));
        }
        let mut found = found.into_inner().unwrap_or_default();
        found.sort();
        let total = found.len();
        let rows: Vec<String> = found
            .iter()
            .take(max_results)
            .map(|(p, is_dir)| if *is_dir { format!("{p}/") } else { p.clone() })
            .collect();
        let budget = self.env.limits.max_chars().saturating_sub(400);
        let (mut text, shown) = fit_rows(&rows, budget);
        let data = json!({
            "pattern": a.pattern,
            "path": root.shown,
            "total": total,
            "shown": shown,
            "paths": rows[..shown],
        });
        if total == 0 {
            let note = skipped_note(Visibility::default()).unwrap_or("");
            text = format!(
                "No paths match {:?} under {} ({note}).",
                a.pattern, root.shown
            );
            if !glob.whole_path {
                text.push_str(
                    " The pattern has no `/`, so it was matched against file names only.",
                );
            }
        } else if shown < total {
            text.push_str(&format!(
                "… showed {shown} of {total} paths; narrow `path` or the pattern\n"
            ));
        }
        Ok(ToolOutput::new(text, data))
    }
}
