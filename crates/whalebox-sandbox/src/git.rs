//! A workspace that is a linked git worktree (`git worktree add`): its `.git` is a file
//! pointing into the main repository's `.git/worktrees/NAME`, whose `commondir` names
//! the `.git` that holds the objects, refs, config and hooks. Git run in the workspace
//! reads all of that, and the model often needs to look at the main checkout, so the
//! profile makes the main worktree a read-only root and opens for writing only what a
//! commit writes (see [`LinkedWorktree::commit_paths`]).

use std::path::{Path, PathBuf};

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkedWorktree {
    /// The main repository's working tree (None for a bare repository).
    pub main_worktree: Option<PathBuf>,
    /// The shared git directory (`main/.git`, or the bare repository).
    pub common_dir: PathBuf,
    /// This worktree's own git directory (`main/.git/worktrees/NAME`).
    pub own_git_dir: PathBuf,
}

impl LinkedWorktree {
    /// What `git commit` (and `add`, `stash`, `switch`) writes from a linked worktree:
    /// new objects, the branch's ref and its lock file, the reflogs, and this worktree's
    /// own HEAD, index and logs. Not the shared directory itself: its `config` and
    /// `hooks` decide what git runs next, outside the sandbox too.
    pub fn commit_paths(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = ["objects", "refs", "logs"]
            .iter()
            .map(|d| self.common_dir.join(d))
            .filter(|p| p.is_dir())
            .collect();
        paths.push(self.own_git_dir.clone());
        paths
    }

    /// What is opened for reading: the main worktree, or the bare repository.
    pub fn read_root(&self) -> &Path {
        self.main_worktree.as_deref().unwrap_or(&self.common_dir)
    }
}

/// The linked worktree `workspace` is in, if it is in one: found from the nearest
/// `.git` at or above it. None for a main worktree, no repository, or a `.git` file
/// that does not lead to a worktree's git directory.
pub fn linked_worktree(workspace: &Path) -> Option<LinkedWorktree> {
    let dot_git = workspace
        .ancestors()
        .map(|d| d.join(".git"))
        .find(|p| p.exists())?;
    if !dot_git.is_file() {
        return None;
    }
    let base = dot_git.parent()?;
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let gitdir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let own_git_dir = base.join(gitdir).canonicalize().ok()?;
    let commondir = std::fs::read_to_string(own_git_dir.join("commondir")).ok()?;
    let common_dir = own_git_dir.join(commondir.trim()).canonicalize().ok()?;
    // A non-bare repository's shared directory is the main worktree's `.git`.
    let main_worktree = (common_dir.file_name()? == ".git")
        .then(|| common_dir.parent().map(Path::to_path_buf))
        .flatten();
    Some(LinkedWorktree {
        main_worktree,
        common_dir,
        own_git_dir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .output()
            .expect("git runs")
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn finds_the_main_worktree_of_a_linked_one() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let main = root.join("main");
        std::fs::create_dir(&main).unwrap();
        git(&main, &["init", "-q"]);
        std::fs::write(main.join("a.txt"), "a\n").unwrap();
        git(&main, &["add", "a.txt"]);
        git(&main, &["commit", "-qm", "a"]);
        git(&main, &["worktree", "add", "-q", "../wt"]);
        let wt = root.join("wt");
        std::fs::create_dir(wt.join("sub")).unwrap();

        let found = linked_worktree(&wt.join("sub")).expect("a linked worktree");
        assert_eq!(found.main_worktree.as_deref(), Some(main.as_path()));
        assert_eq!(found.common_dir, main.join(".git"));
        assert_eq!(found.own_git_dir, main.join(".git/worktrees/wt"));
        assert!(found.commit_paths().contains(&main.join(".git/objects")));
        assert!(!found.commit_paths().contains(&main.join(".git")));

        assert_eq!(
            linked_worktree(&main),
            None,
            "the main worktree is not linked"
        );
        assert_eq!(linked_worktree(&root), None, "no repository");
    }
}
