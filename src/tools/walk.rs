//! Directory walking with ripgrep's rules (the `ignore` crate): hidden files skipped,
//! `.gitignore` (inside git repositories), `.ignore` and git's global excludes
//! respected, symlinks not followed. One constructor, so list_dir, grep and
//! search_files always agree on what is visible.

use std::path::Path;

use ignore::WalkBuilder;

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Visibility {
    /// Show dotfiles and dot-directories.
    pub hidden: bool,
    /// Show what ignore files exclude.
    pub ignored: bool,
}

pub(crate) fn walker(root: &Path, visibility: Visibility) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(!visibility.hidden)
        .ignore(!visibility.ignored)
        .git_ignore(!visibility.ignored)
        .git_global(!visibility.ignored)
        .git_exclude(!visibility.ignored)
        .parents(!visibility.ignored)
        .follow_links(false)
        // A repository's object store is never what the model is looking for.
        .filter_entry(|entry| entry.file_name() != ".git");
    builder
}

/// Describe what the walk skipped, for "nothing found" and listing notes.
pub(crate) fn skipped_note(visibility: Visibility) -> Option<&'static str> {
    match (visibility.hidden, visibility.ignored) {
        (true, true) => None,
        (false, true) => Some("hidden files are skipped"),
        (true, false) => Some("files excluded by .gitignore/.ignore are skipped"),
        (false, false) => Some("hidden files and files excluded by .gitignore/.ignore are skipped"),
    }
}
