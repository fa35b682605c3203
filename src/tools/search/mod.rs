//! Group `search`: grep (file contents) and search_files (paths), both on ripgrep's
//! engine: `ignore`'s parallel walker, `grep-regex` matching, `grep-searcher` reading.
//! Results are collected from all threads and sorted by path, so the same call always
//! gives the same answer.
//!
//! This module registers the tools and owns what they share: the search root, the
//! batches walker threads hand their results in, fitting rows into the result, and the
//! cancelled error. `grep` searches contents with `collect` as its sink; `search_files`
//! matches paths.

mod collect;
mod grep;
mod search_files;

use std::sync::{Arc, Mutex};

use crate::core::{Code, Registry, RegistryError, ToolError};
use crate::guard::{Access, Allowed};

use super::Env;
use super::common::{guarded, io_error};
use grep::Grep;
use search_files::SearchFiles;

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
