//! Bearer tokens from a file: one `NAME:TOKEN` per line, `#` comments. Only each
//! token's SHA-256 is kept, and a presented token is compared with every one in
//! constant time, so neither its bytes nor its length leak through timing. The file is
//! read again when it changes (a rotated Kubernetes Secret).

use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::SystemTime;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Tokens shorter than this are refused when the file is read: a guessable token is no
/// fence.
const MIN_TOKEN_LEN: usize = 16;

pub struct TokenFile {
    path: PathBuf,
    loaded: RwLock<Loaded>,
}

struct Loaded {
    modified: Option<SystemTime>,
    entries: Vec<(String, [u8; 32])>,
}

impl TokenFile {
    pub fn open(path: &Path) -> Result<TokenFile, String> {
        let loaded = read(path)?;
        Ok(TokenFile {
            path: path.to_path_buf(),
            loaded: RwLock::new(loaded),
        })
    }

    /// The name of the token, if it is one of ours.
    pub fn find(&self, token: &str) -> Option<String> {
        self.reload_if_changed();
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let loaded = self.loaded.read().unwrap_or_else(|p| p.into_inner());
        let mut found = None;
        // Every entry is compared, whatever matched before.
        for (name, digest) in &loaded.entries {
            if bool::from(digest.ct_eq(&presented)) {
                found = Some(name.clone());
            }
        }
        found
    }

    fn reload_if_changed(&self) {
        let modified = modified(&self.path);
        let stale = {
            let loaded = self.loaded.read().unwrap_or_else(|p| p.into_inner());
            modified != loaded.modified
        };
        if !stale {
            return;
        }
        match read(&self.path) {
            Ok(fresh) => {
                tracing::info!(path = %self.path.display(), tokens = fresh.entries.len(), "tokens file read again");
                *self.loaded.write().unwrap_or_else(|p| p.into_inner()) = fresh;
            }
            // A file being rewritten, or broken: the tokens read last stay.
            Err(e) => tracing::warn!("tokens file: {e}; keeping the tokens read before"),
        }
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn read(path: &Path) -> Result<Loaded, String> {
    let modified = modified(path);
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("tokens file {}: {e}", path.display()))?;
    let entries = parse(&text).map_err(|e| format!("tokens file {}: {e}", path.display()))?;
    Ok(Loaded { modified, entries })
}

fn parse(text: &str) -> Result<Vec<(String, [u8; 32])>, String> {
    let mut entries: Vec<(String, [u8; 32])> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, token)) = line.split_once(':') else {
            return Err(format!("line {}: expected NAME:TOKEN", n + 1));
        };
        let (name, token) = (name.trim(), token.trim());
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c))
        {
            return Err(format!(
                "line {}: the name must be letters, digits, '-', '_', '.' or '@'",
                n + 1
            ));
        }
        if token.len() < MIN_TOKEN_LEN {
            return Err(format!(
                "line {}: the token of {name} is shorter than {MIN_TOKEN_LEN} characters",
                n + 1
            ));
        }
        if entries.iter().any(|(other, _)| other == name) {
            return Err(format!("line {}: the name {name} is used twice", n + 1));
        }
        entries.push((name.to_string(), Sha256::digest(token.as_bytes()).into()));
    }
    if entries.is_empty() {
        return Err("no token in it (one NAME:TOKEN per line)".into());
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_by_token_and_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(
            &path,
            "# ci\nci:0123456789abcdef0123\nalice@team: fedcba9876543210fedc \n",
        )
        .unwrap();
        let t = TokenFile::open(&path).unwrap();
        assert_eq!(t.find("0123456789abcdef0123").as_deref(), Some("ci"));
        assert_eq!(
            t.find("fedcba9876543210fedc").as_deref(),
            Some("alice@team")
        );
        assert_eq!(t.find("0123456789abcdef012"), None);
        assert_eq!(t.find(""), None);
    }

    #[test]
    fn bad_files_are_refused_with_the_line() {
        assert!(parse("").unwrap_err().contains("no token"));
        assert!(parse("x\n").unwrap_err().contains("line 1"));
        assert!(parse("a:short\n").unwrap_err().contains("shorter"));
        assert!(
            parse("a b:0123456789abcdef\n")
                .unwrap_err()
                .contains("name")
        );
        assert!(
            parse("a:0123456789abcdef\na:0123456789abcdeg\n")
                .unwrap_err()
                .contains("twice")
        );
    }

    #[test]
    fn a_rewritten_file_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(&path, "a:0123456789abcdef\n").unwrap();
        let t = TokenFile::open(&path).unwrap();
        assert!(t.find("0123456789abcdef").is_some());
        std::fs::write(&path, "b:fedcba9876543210\n").unwrap();
        // A modification time one second on, whatever the file system's granularity.
        let later = SystemTime::now() + std::time::Duration::from_secs(1);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert_eq!(t.find("0123456789abcdef"), None);
        assert_eq!(t.find("fedcba9876543210").as_deref(), Some("b"));
    }
}
