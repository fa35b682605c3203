//! A config file read and edited by git's own parser, on a private copy: the guard
//! never parses git configuration itself.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A private copy of a config file, read and edited by git itself.
pub(super) struct Copy<'a> {
    git: &'a Path,
    home: PathBuf,
    pub(super) path: PathBuf,
    _dir: tempfile::TempDir,
}

impl<'a> Copy<'a> {
    pub(super) fn new(scratch: &Path, git: &'a Path, bytes: &[u8]) -> std::io::Result<Copy<'a>> {
        std::fs::create_dir_all(scratch)?;
        let dir = tempfile::Builder::new()
            .prefix("gitcfg-")
            .tempdir_in(scratch)?;
        let home = dir.path().join("home");
        std::fs::create_dir(&home)?;
        let path = dir.path().join("config");
        std::fs::write(&path, bytes)?;
        Ok(Copy {
            git,
            home,
            path,
            _dir: dir,
        })
    }

    /// `git config --file COPY ARGS…`, with no system, global or user configuration.
    pub(super) fn git(&self, args: &[&str]) -> Result<Vec<u8>, String> {
        let out = Command::new(self.git)
            .arg("config")
            .arg("--file")
            .arg(&self.path)
            .args(args)
            .env_clear()
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("LC_ALL", "C")
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.git.display()))?;
        if !out.status.success() {
            return Err(format!(
                "git config {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(out.stdout)
    }

    /// Every `key = value` of the file, as git reads it (includes not followed: an
    /// include is an exec-carrying key itself).
    pub(super) fn entries(&self) -> Result<Vec<(String, String)>, String> {
        let out = self.git(&["--list", "--null", "--no-includes"])?;
        Ok(out
            .split(|&b| b == 0)
            .filter(|e| !e.is_empty())
            .map(|e| {
                let e = String::from_utf8_lossy(e);
                match e.split_once('\n') {
                    Some((k, v)) => (k.to_string(), v.to_string()),
                    None => (e.to_string(), String::new()),
                }
            })
            .collect())
    }
}

/// The git program the server runs: the first `git` on its PATH (resolved now, before
/// any task runs).
pub fn find_git() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("git"))
        .find(|p| p.is_file())
        .and_then(|p| p.canonicalize().ok())
}
