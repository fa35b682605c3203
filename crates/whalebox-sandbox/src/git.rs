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
    /// Why these roots are trusted (what was verified outside the workspace).
    pub evidence: String,
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
            // A real directory, not a symlink a task planted to widen the grant.
            .filter(|p| p.symlink_metadata().is_ok_and(|m| m.is_dir()))
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
/// `.git` at or above it. `Ok(None)` for a main worktree or no repository.
///
/// A `.git` file is workspace content: a task can write one naming any directory. So
/// what it names is accepted only on evidence a task cannot forge, and `Err` says which
/// piece was missing (the caller derives no root then):
/// - the worktree's own git directory is `COMMON/worktrees/NAME` of the common
///   directory it names (its `commondir`), and its `gitdir` file points back at this
///   very `.git` file: that pair lives in the main repository, outside the workspace;
/// - the common directory is a real git directory (`HEAD`, `objects/`, `refs/`, none of
///   them a symlink), owned by the workspace's owner;
/// - nothing on the way is a symlink where git itself writes a file.
pub fn linked_worktree(workspace: &Path) -> Result<Option<LinkedWorktree>, String> {
    use std::os::unix::fs::MetadataExt;
    let Some(dot_git) = workspace
        .ancestors()
        .map(|d| d.join(".git"))
        .find(|p| p.symlink_metadata().is_ok())
    else {
        return Ok(None);
    };
    let meta = dot_git
        .symlink_metadata()
        .map_err(|e| format!("{}: {e}", dot_git.display()))?;
    if meta.is_dir() {
        return Ok(None);
    }
    let refuse = |why: String| Err(format!("{}: {why}", dot_git.display()));
    if !meta.is_file() {
        return refuse("not a regular file (a symlink?): no worktree root derived".into());
    }
    let base = dot_git.parent().unwrap_or(Path::new("/"));
    let text = read_no_follow(&dot_git)?;
    let Some(gitdir) = text.lines().find_map(|l| l.strip_prefix("gitdir:")) else {
        return refuse("has no `gitdir:` line".into());
    };
    let own_git_dir = canon(&base.join(gitdir.trim()))?;
    let commondir = read_no_follow(&own_git_dir.join("commondir"))?;
    let common_dir = canon(&own_git_dir.join(commondir.trim()))?;
    // The evidence that lives in the main repository: its worktrees/NAME points back.
    if own_git_dir.parent() != Some(common_dir.join("worktrees").as_path()) {
        return refuse(format!(
            "its git directory {} is not in {}/worktrees: not a worktree of that repository",
            own_git_dir.display(),
            common_dir.display()
        ));
    }
    let back = read_no_follow(&own_git_dir.join("gitdir"))?;
    let back = canon(Path::new(back.trim()))?;
    if back != canon(&dot_git)? {
        return refuse(format!(
            "{}/gitdir names {}, not this `.git`: the repository does not know this worktree",
            own_git_dir.display(),
            back.display()
        ));
    }
    for (name, dir) in [("HEAD", false), ("objects", true), ("refs", true)] {
        let p = common_dir.join(name);
        match p.symlink_metadata() {
            Ok(m) if m.is_dir() == dir && !m.file_type().is_symlink() => {}
            _ => {
                return refuse(format!(
                    "{} is not a git directory ({name} missing or a symlink)",
                    common_dir.display()
                ));
            }
        }
    }
    let owner = workspace
        .metadata()
        .map_err(|e| format!("{}: {e}", workspace.display()))?
        .uid();
    for dir in [&common_dir, &own_git_dir] {
        let uid = dir
            .symlink_metadata()
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .uid();
        if uid != owner {
            return refuse(format!(
                "{} is owned by uid {uid}, the workspace by uid {owner}",
                dir.display()
            ));
        }
    }
    // A non-bare repository's shared directory is the main worktree's `.git`.
    let main_worktree = (common_dir.file_name() == Some(".git".as_ref()))
        .then(|| common_dir.parent().map(Path::to_path_buf))
        .flatten();
    Ok(Some(LinkedWorktree {
        main_worktree,
        evidence: format!(
            "{}/gitdir points back at {} and {} is a git directory owned by uid {owner}",
            own_git_dir.display(),
            dot_git.display(),
            common_dir.display()
        ),
        common_dir,
        own_git_dir,
    }))
}

/// A small file git wrote, read without following a final symlink (a task may have
/// swapped one in).
fn read_no_follow(path: &Path) -> Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut text = String::new();
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)
        .and_then(|f| f.take(64 * 1024).read_to_string(&mut text))
        .map_err(|e| format!("{}: {e} (read without following links)", path.display()))?;
    Ok(text)
}

fn canon(path: &Path) -> Result<PathBuf, String> {
    path.canonicalize()
        .map_err(|e| format!("{}: {e}", path.display()))
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

        let found = linked_worktree(&wt.join("sub"))
            .unwrap()
            .expect("a linked worktree");
        assert_eq!(found.main_worktree.as_deref(), Some(main.as_path()));
        assert_eq!(found.common_dir, main.join(".git"));
        assert_eq!(found.own_git_dir, main.join(".git/worktrees/wt"));
        assert!(found.commit_paths().contains(&main.join(".git/objects")));
        assert!(!found.commit_paths().contains(&main.join(".git")));

        assert_eq!(
            linked_worktree(&main),
            Ok(None),
            "the main worktree is not linked"
        );
        assert_eq!(linked_worktree(&root), Ok(None), "no repository");
    }

    /// The attack of issue 41: a planted `.git` file whose own git directory (inside the
    /// workspace) names an outside directory as its common dir. Nothing outside points
    /// back at the workspace, so no root is derived; nor from a real repository that
    /// does not know this worktree.
    #[test]
    fn a_planted_git_file_derives_no_root() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join(".wt/x")).unwrap();
        std::fs::write(ws.join(".git"), "gitdir: .wt/x\n").unwrap();
        std::fs::write(ws.join(".wt/x/commondir"), "/root\n").unwrap();
        std::fs::write(
            ws.join(".wt/x/gitdir"),
            format!("{}\n", ws.join(".git").display()),
        )
        .unwrap();
        let why = linked_worktree(&ws).expect_err("refused");
        assert!(why.contains("worktrees"), "{why}");

        // A real repository outside, named as the common dir: it has no worktrees/x
        // pointing back, so it is refused too.
        let other = root.join("other");
        std::fs::create_dir(&other).unwrap();
        git(&other, &["init", "-q"]);
        std::fs::write(
            ws.join(".wt/x/commondir"),
            format!("{}\n", other.join(".git").display()),
        )
        .unwrap();
        assert!(linked_worktree(&ws).is_err());
        // Even a forged worktrees/NAME that does not point back (a task cannot write
        // there; this is the repository's own, for another worktree).
        std::fs::create_dir_all(other.join(".git/worktrees/x")).unwrap();
        std::fs::write(other.join(".git/worktrees/x/gitdir"), "/elsewhere/.git\n").unwrap();
        std::fs::write(
            ws.join(".git"),
            format!("gitdir: {}\n", other.join(".git/worktrees/x").display()),
        )
        .unwrap();
        std::fs::write(other.join(".git/worktrees/x/commondir"), "../..\n").unwrap();
        assert!(linked_worktree(&ws).is_err());
    }
}
