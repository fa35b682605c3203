//! The agent's working state that the server holds for it: the plan (`update_plan`) and
//! the todo list (`todo_*`). One of each per session; the todo list optionally lives in
//! a file (`[todo] file`) so it outlives a client restart. Every change is announced on
//! [`Board::changes`] with the resource URI that changed, for MCP subscribers.

use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::mutation::{CommitError, Expect, commit_path};

pub const PLAN_URI: &str = "whalebox://session/plan";
pub const TODOS_URI: &str = "whalebox://session/todos";
pub const CHECKPOINTS_URI: &str = "whalebox://session/checkpoints";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    InProgress,
    Completed,
}

impl Status {
    /// The checklist mark: done, current, pending.
    pub fn mark(self) -> &'static str {
        match self {
            Status::Completed => "[x]",
            Status::InProgress => "[>]",
            Status::Pending => "[ ]",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub step: String,
    pub status: Status,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    pub plan: Vec<Step>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    High,
    Medium,
    Low,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Todo {
    pub id: String,
    pub content: String,
    pub status: Status,
    pub priority: Priority,
}

/// The list and the counter its ids come from (ids are never reused, so an id the model
/// remembers never names another item).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TodoList {
    pub next: u64,
    pub todos: Vec<Todo>,
}

impl TodoList {
    pub fn new_id(&mut self) -> String {
        self.next += 1;
        format!("t{}", self.next)
    }

    pub fn ids(&self) -> Vec<String> {
        self.todos.iter().map(|t| t.id.clone()).collect()
    }
}

/// Why the todo file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the todo file {path} cannot be read: {why}")]
    Read { path: String, why: std::io::Error },
    #[error("the todo file {path} cannot be written: {why}")]
    Write { path: String, why: std::io::Error },
    /// The file holds the new list, but the disk did not confirm it.
    #[error("the todo file {path} was written, but the disk did not confirm it: {why}")]
    Unconfirmed { path: String, why: std::io::Error },
}

pub struct Board {
    plan: Mutex<Option<Plan>>,
    todos: Mutex<TodoList>,
    file: Option<PathBuf>,
    changes: broadcast::Sender<&'static str>,
}

impl std::fmt::Debug for Board {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Board").field("file", &self.file).finish()
    }
}

impl Board {
    pub fn new(file: Option<PathBuf>) -> Board {
        Board {
            plan: Mutex::new(None),
            todos: Mutex::new(TodoList::default()),
            file,
            changes: broadcast::channel(64).0,
        }
    }

    /// Announces the URI of each change.
    /// Where to announce a change of another resource (a checkpoint taken).
    pub fn announcer(&self) -> broadcast::Sender<&'static str> {
        self.changes.clone()
    }

    pub fn changes(&self) -> broadcast::Receiver<&'static str> {
        self.changes.subscribe()
    }

    pub fn plan(&self) -> Option<Plan> {
        self.plan.lock().map(|p| p.clone()).unwrap_or_default()
    }

    pub fn set_plan(&self, plan: Plan) {
        if let Ok(mut p) = self.plan.lock() {
            *p = Some(plan);
        }
        let _ = self.changes.send(PLAN_URI);
    }

    /// The todo list as it is now (from the file when there is one).
    pub fn todos(&self) -> Result<TodoList, StoreError> {
        let mut held = self.todos.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(path) = &self.file {
            *held = load(path)?.0;
        }
        Ok(held.clone())
    }

    /// Apply `change` to the list and keep the result; `change` refusing leaves the list
    /// (and the file) as they were. With a file, the change is made to the file's current
    /// content and committed only if nobody rewrote it meanwhile (else it is redone).
    pub fn change_todos<T, E>(
        &self,
        mut change: impl FnMut(&mut TodoList) -> Result<T, E>,
    ) -> Result<Result<(T, TodoList), E>, StoreError> {
        let mut held = self.todos.lock().unwrap_or_else(|e| e.into_inner());
        let Some(path) = &self.file else {
            let mut next = held.clone();
            return Ok(match change(&mut next) {
                Ok(t) => {
                    *held = next.clone();
                    let _ = self.changes.send(TODOS_URI);
                    Ok((t, next))
                }
                Err(e) => Err(e),
            });
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|why| StoreError::Write {
                path: path.display().to_string(),
                why,
            })?;
        }
        for _ in 0..8 {
            let (mut list, bytes) = load(path)?;
            let t = match change(&mut list) {
                Ok(t) => t,
                Err(e) => return Ok(Err(e)),
            };
            let mut new = serde_json::to_string_pretty(&list).unwrap_or_default();
            new.push('\n');
            let expect = match &bytes {
                Some(b) => Expect::Bytes(b),
                None => Expect::Absent,
            };
            match commit_path(path, expect, new.as_bytes()) {
                Ok(()) => {
                    *held = list.clone();
                    let _ = self.changes.send(TODOS_URI);
                    return Ok(Ok((t, list)));
                }
                Err(CommitError::Conflict) => continue,
                Err(CommitError::Unconfirmed(why)) => {
                    *held = list;
                    let _ = self.changes.send(TODOS_URI);
                    return Err(StoreError::Unconfirmed {
                        path: path.display().to_string(),
                        why,
                    });
                }
                Err(CommitError::Io(why)) => {
                    return Err(StoreError::Write {
                        path: path.display().to_string(),
                        why,
                    });
                }
            }
        }
        Err(StoreError::Write {
            path: path.display().to_string(),
            why: std::io::Error::other("it kept changing under whalebox (another writer?)"),
        })
    }
}

/// The list in `path` and the bytes it was read from (None: no file yet, an empty list).
fn load(path: &std::path::Path) -> Result<(TodoList, Option<Vec<u8>>), StoreError> {
    let read_err = |why: std::io::Error| StoreError::Read {
        path: path.display().to_string(),
        why,
    };
    match std::fs::read(path) {
        Ok(bytes) => {
            let list = serde_json::from_slice(&bytes).map_err(|e| {
                read_err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("it is not a whalebox todo list ({e}); move it away or fix it"),
                ))
            })?;
            Ok((list, Some(bytes)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((TodoList::default(), None)),
        Err(e) => Err(read_err(e)),
    }
}
