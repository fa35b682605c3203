//! The `load_skill` tool: a skill's instructions on demand, from the session's
//! [`SkillIndex`](crate::session::SkillIndex) (discovered at start-up).

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{
    BoxFuture, CallContext, Code, Tool, ToolError, ToolOutput, ToolResult, nearest_names,
    run_blocking,
};
use crate::session::skills::{MAX_SKILL_BYTES, SKILL_FILE, read_skill};

use super::Env;
use super::common::args;

/// How many skills the tool description lists in full.
const LISTED: usize = 100;
const MAX_FILES_LISTED: usize = 50;

pub(crate) struct LoadSkill {
    env: Arc<Env>,
}

impl LoadSkill {
    pub(crate) fn new(env: Arc<Env>) -> Self {
        LoadSkill { env }
    }
}

#[derive(Deserialize)]
struct LoadArgs {
    name: String,
}

impl Tool for LoadSkill {
    fn name(&self) -> &str {
        "load_skill"
    }

    fn title(&self) -> Option<String> {
        Some("Load skill".into())
    }

    fn description(&self) -> String {
        let index = &self.env.skills;
        let mut text = String::from(
            "Load a skill: task-specific instructions in a folder with a SKILL.md. Returns the \
             instructions and the skill's folder, whose files read_file can then read.",
        );
        if index.skills.is_empty() {
            let dirs: Vec<String> = self
                .env
                .profile
                .skills
                .dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect();
            text.push_str(&format!(
                " No skills are installed (looked in: {}).",
                dirs.join(", ")
            ));
            return text;
        }
        text.push_str(" Available skills (name: when to use it):");
        for skill in index.skills.iter().take(LISTED) {
            text.push_str(&format!(
                "\n- {}: {}",
                skill.name,
                truncate(&skill.description, 240)
            ));
        }
        if index.skills.len() > LISTED {
            let rest: Vec<&str> = index.skills[LISTED..]
                .iter()
                .map(|s| s.name.as_str())
                .collect();
            text.push_str(&format!("\n- also: {}", rest.join(", ")));
        }
        text
    }

    fn parameters(&self) -> Value {
        let names: Vec<&str> = self
            .env
            .skills
            .skills
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        json!({
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "description": if names.is_empty() {
                        "Name of the skill.".to_string()
                    } else {
                        format!("Name of the skill, one of: {}", names.join(", "))
                    }
                }
            },
            "required": ["name"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn run(self: Arc<Self>, input: Value, _ctx: CallContext) -> BoxFuture<'static, ToolResult> {
        run_blocking(move || self.load(args(input)?))
    }
}

impl LoadSkill {
    fn load(&self, a: LoadArgs) -> ToolResult {
        let index = &self.env.skills;
        let name = a.name.trim();
        let Some(skill) = index.get(name) else {
            let names: Vec<&str> = index.skills.iter().map(|s| s.name.as_str()).collect();
            let near = nearest_names(name, names.iter().copied());
            let next = match (near.first(), names.is_empty()) {
                (_, true) => "no skills are installed; continue without one".to_string(),
                (Some(best), _) => {
                    format!("did you mean `{best}`? Available: {}", names.join(", "))
                }
                (None, _) => format!("use one of: {}", names.join(", ")),
            };
            return Err(
                ToolError::new(Code::NotFound, format!("no skill named `{name}`"), next)
                    .with_data(json!({"available": names})),
            );
        };
        let file = skill.dir.join(SKILL_FILE);
        let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        if size > MAX_SKILL_BYTES {
            return Err(ToolError::new(
                Code::TooLarge,
                format!(
                    "{}'s SKILL.md is {size} bytes, over the {MAX_SKILL_BYTES}-byte limit",
                    skill.name
                ),
                format!(
                    "read it in pages with read_file {{\"file_path\": \"{}\"}}",
                    file.display()
                ),
            ));
        }
        let (fresh, body) = read_skill(&file).map_err(|problem| {
            ToolError::new(
                Code::Undecodable,
                format!("{} can no longer be read: {problem}", file.display()),
                "fix the SKILL.md, or continue without this skill",
            )
        })?;
        let folder = self.env.guard.show(&fresh.dir);
        let files = list_files(&fresh.dir);
        let mut text = format!(
            "# Skill: {}\n{}\nFolder: {folder} (read its files with read_file)\n",
            fresh.name, fresh.description
        );
        if !files.is_empty() {
            text.push_str(&format!("Files: {}\n", files.join(", ")));
        }
        text.push('\n');
        text.push_str(&body);
        Ok(ToolOutput::new(
            text,
            json!({
                "name": fresh.name,
                "description": fresh.description,
                "folder": folder,
                "files": files,
            }),
        ))
    }
}

/// The skill folder's files, relative to it, sorted (bounded).
fn list_files(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for entry in ignore::WalkBuilder::new(dir)
        .max_depth(Some(4))
        .sort_by_file_name(|a, b| a.cmp(b))
        .build()
        .flatten()
    {
        if entry.file_type().is_some_and(|t| t.is_file())
            && let Ok(rel) = entry.path().strip_prefix(dir)
            && rel != Path::new(SKILL_FILE)
        {
            files.push(rel.display().to_string());
            if files.len() >= MAX_FILES_LISTED {
                files.push("…".into());
                break;
            }
        }
    }
    files
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
