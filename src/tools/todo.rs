//! Group `todo`: a todo list the server keeps for the agent, changed one item at a time
//! (no call rewrites the whole list, so no call can lose items it did not mention).
//! Ids are short, stable and never reused. Every result shows the list in creation order.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{
    BoxFuture, CallContext, Code, Registry, RegistryError, Tool, ToolError, ToolOutput, ToolResult,
    run_blocking,
};

use super::Env;
use super::board::{Priority, Status, StoreError, Todo, TodoList};
use super::common::args;

pub(crate) fn register(env: &Arc<Env>, registry: &mut Registry) -> Result<(), RegistryError> {
    for op in [
        Op::Add,
        Op::List,
        Op::Update,
        Op::Remove,
        Op::ClearCompleted,
    ] {
        registry.register(
            "todo",
            Arc::new(TodoTool {
                env: Arc::clone(env),
                op,
            }),
        )?;
    }
    Ok(())
}

/// The list as text: one line per item, `id [mark] (priority) content`.
pub fn render(list: &[Todo]) -> String {
    if list.is_empty() {
        return "The todo list is empty.\n".into();
    }
    let done = list
        .iter()
        .filter(|t| t.status == Status::Completed)
        .count();
    let mut text = format!("Todos ({done}/{} done):\n", list.len());
    for t in list {
        let prio = match t.priority {
            Priority::High => "high",
            Priority::Medium => "medium",
            Priority::Low => "low",
        };
        text.push_str(&format!(
            "{} {} ({prio}) {}\n",
            t.id,
            t.status.mark(),
            t.content
        ));
    }
    text
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Add,
    List,
    Update,
    Remove,
    ClearCompleted,
}

struct TodoTool {
    env: Arc<Env>,
    op: Op,
}

#[derive(Deserialize)]
struct AddArgs {
    content: String,
    priority: Option<Priority>,
}

#[derive(Deserialize)]
struct ListArgs {
    status: Option<Status>,
}

#[derive(Deserialize)]
struct UpdateArgs {
    id: String,
    status: Option<Status>,
    content: Option<String>,
    priority: Option<Priority>,
}

#[derive(Deserialize)]
struct RemoveArgs {
    id: String,
}

const STATUS: &[&str] = &["pending", "in_progress", "completed"];
const PRIORITY: &[&str] = &["high", "medium", "low"];

fn content_of(raw: &str) -> Result<String, ToolError> {
    let content = raw.trim();
    if content.is_empty() {
        return Err(ToolError::invalid_input(
            "the todo's content is empty",
            "say in a few words what is to be done",
        ));
    }
    Ok(content.to_string())
}

fn not_found(id: &str, list: &TodoList) -> ToolError {
    let ids = list.ids();
    ToolError::new(
        Code::NotFound,
        format!("no todo with id `{id}`"),
        if ids.is_empty() {
            "the list is empty; add one with todo_add".to_string()
        } else {
            format!("use one of the current ids: {}", ids.join(", "))
        },
    )
    .with_data(json!({"ids": ids}))
}

fn store_error(e: StoreError) -> ToolError {
    let (outcome, path, why) = match &e {
        StoreError::Read { path, why } | StoreError::Write { path, why } => {
            ("the list is as it was", path, why)
        }
        StoreError::Unconfirmed { path, why } => (
            "the change IS in the list, but the disk did not confirm it; do not make it again",
            path,
            why,
        ),
    };
    if crate::core::MachineFault::of(why).is_some() {
        return ToolError::io(format!("the todo file {path}"), why, outcome);
    }
    ToolError::new(
        Code::Internal,
        e.to_string(),
        "fix or move the file named in the profile's [todo] file, then retry",
    )
}

impl TodoTool {
    fn apply(&self, input: Value) -> ToolResult {
        let board = &self.env.board;
        let (head, id, list) = match self.op {
            Op::List => {
                let a: ListArgs = args(input)?;
                let list = board.todos().map_err(store_error)?;
                let shown: Vec<Todo> = list
                    .todos
                    .into_iter()
                    .filter(|t| a.status.is_none_or(|s| t.status == s))
                    .collect();
                let text = render(&shown);
                return Ok(ToolOutput::new(text, json!({"todos": shown})));
            }
            Op::Add => {
                let a: AddArgs = args(input)?;
                let content = content_of(&a.content)?;
                let (id, list) = board
                    .change_todos(|l| {
                        let id = l.new_id();
                        l.todos.push(Todo {
                            id: id.clone(),
                            content: content.clone(),
                            status: Status::Pending,
                            priority: a.priority.unwrap_or(Priority::Medium),
                        });
                        Ok::<_, ToolError>(id)
                    })
                    .map_err(store_error)??;
                (format!("Added {id}."), Some(id), list)
            }
            Op::Update => {
                let a: UpdateArgs = args(input)?;
                if a.status.is_none() && a.content.is_none() && a.priority.is_none() {
                    return Err(ToolError::invalid_input(
                        "nothing to update: give status, content or priority",
                        format!(
                            "for example {{\"id\": \"{}\", \"status\": \"completed\"}}",
                            a.id
                        ),
                    ));
                }
                let content = a.content.as_deref().map(content_of).transpose()?;
                let ((), list) = board
                    .change_todos(|l| {
                        let Some(t) = l.todos.iter_mut().find(|t| t.id == a.id) else {
                            return Err(not_found(&a.id, l));
                        };
                        if let Some(s) = a.status {
                            t.status = s;
                        }
                        if let Some(c) = &content {
                            t.content = c.clone();
                        }
                        if let Some(p) = a.priority {
                            t.priority = p;
                        }
                        Ok(())
                    })
                    .map_err(store_error)??;
                (format!("Updated {}.", a.id), Some(a.id), list)
            }
            Op::Remove => {
                let a: RemoveArgs = args(input)?;
                let ((), list) = board
                    .change_todos(|l| {
                        let before = l.todos.len();
                        l.todos.retain(|t| t.id != a.id);
                        if l.todos.len() == before {
                            return Err(not_found(&a.id, l));
                        }
                        Ok(())
                    })
                    .map_err(store_error)??;
                (format!("Removed {}.", a.id), Some(a.id), list)
            }
            Op::ClearCompleted => {
                let (n, list) = board
                    .change_todos(|l| {
                        let before = l.todos.len();
                        l.todos.retain(|t| t.status != Status::Completed);
                        Ok::<_, ToolError>(before - l.todos.len())
                    })
                    .map_err(store_error)??;
                (format!("Cleared {n} completed."), None, list)
            }
        };
        let text = format!("{head}\n{}", render(&list.todos));
        let mut data = json!({"todos": list.todos});
        if let Some(id) = id {
            data["id"] = json!(id);
        }
        Ok(ToolOutput::new(text, data))
    }
}

impl Tool for TodoTool {
    fn name(&self) -> &str {
        match self.op {
            Op::Add => "todo_add",
            Op::List => "todo_list",
            Op::Update => "todo_update",
            Op::Remove => "todo_remove",
            Op::ClearCompleted => "todo_clear_completed",
        }
    }

    fn title(&self) -> Option<String> {
        Some(
            match self.op {
                Op::Add => "Add todo",
                Op::List => "List todos",
                Op::Update => "Update todo",
                Op::Remove => "Remove todo",
                Op::ClearCompleted => "Clear completed todos",
            }
            .into(),
        )
    }

    fn description(&self) -> String {
        match self.op {
            Op::Add => "Add one item to the session's todo list (status pending). Returns its \
                        id and the whole list."
                .into(),
            Op::List => "Show the todo list in creation order with ids, optionally only the \
                         items with one status."
                .into(),
            Op::Update => "Change one todo by id: its status (pending, in_progress, completed), \
                           content or priority. Returns the whole list."
                .into(),
            Op::Remove => "Remove one todo by id. Returns the whole list.".into(),
            Op::ClearCompleted => "Remove every completed todo. Returns the list.".into(),
        }
    }

    fn parameters(&self) -> Value {
        let status = json!({"type": "string", "enum": STATUS});
        let priority =
            json!({"type": "string", "enum": PRIORITY, "description": "Default medium."});
        let id = json!({"type": "string", "description": "The todo's id, as in `t3`."});
        match self.op {
            Op::Add => json!({
                "type": "object",
                "properties": {"content": {"type": "string", "description": "What is to be done."}, "priority": priority},
                "required": ["content"],
                "additionalProperties": false
            }),
            Op::List => json!({
                "type": "object",
                "properties": {"status": status},
                "additionalProperties": false
            }),
            Op::Update => json!({
                "type": "object",
                "properties": {"id": id, "status": status, "content": {"type": "string"}, "priority": priority},
                "required": ["id"],
                "additionalProperties": false
            }),
            Op::Remove => json!({
                "type": "object",
                "properties": {"id": id},
                "required": ["id"],
                "additionalProperties": false
            }),
            Op::ClearCompleted => {
                json!({"type": "object", "properties": {}, "additionalProperties": false})
            }
        }
    }

    fn read_only(&self) -> bool {
        matches!(self.op, Op::List)
    }

    fn destructive(&self) -> bool {
        matches!(self.op, Op::Remove | Op::ClearCompleted)
    }

    fn idempotent(&self) -> bool {
        !matches!(self.op, Op::Add)
    }

    fn run(self: Arc<Self>, input: Value, _ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        run_blocking(move || self.apply(input))
    }
}
