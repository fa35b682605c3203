//! Skills: folders holding a `SKILL.md` (YAML front matter with `name` and
//! `description`, then instructions) under the profile's skill directories. They are
//! discovered once per session, listed in load_skill's description so a model can find
//! them, and loaded on demand; the folder stays readable for the files it mentions.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::core::{
    BoxFuture, CallContext, Code, Tool, ToolError, ToolOutput, ToolResult, nearest_names,
    run_blocking,
};
use crate::guard::PathGuard;
use crate::text::decode;

use super::Env;
use super::common::args;

const SKILL_FILE: &str = "SKILL.md";
/// How deep below a skill dir a `SKILL.md` is looked for (`<dir>/<group>/<skill>/SKILL.md`).
const MAX_DEPTH: usize = 3;
const MAX_SKILL_BYTES: u64 = 1024 * 1024;
/// How many skills the tool description lists in full.
const LISTED: usize = 100;
const MAX_FILES_LISTED: usize = 50;

#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub dir: PathBuf,
}

/// The skills found at start-up, plus what could not be read.
#[derive(Debug, Default, Clone)]
pub struct SkillIndex {
    pub skills: Vec<Skill>,
    pub problems: Vec<String>,
}

#[derive(Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
}

impl SkillIndex {
    /// Look for skills in the guard's (existing, resolved) skill dirs. The first skill
    /// of a name wins; later duplicates are reported as problems.
    pub fn discover(guard: &PathGuard) -> SkillIndex {
        let mut index = SkillIndex::default();
        for dir in guard.skill_dirs() {
            let mut files = Vec::new();
            find_skill_files(dir, 0, &mut files);
            files.sort();
            for file in files {
                match read_skill_header(&file) {
                    Ok(skill) => {
                        if index.skills.iter().any(|s| s.name == skill.name) {
                            index.problems.push(format!(
                                "{}: a skill named `{}` was already found; this one is ignored",
                                file.display(),
                                skill.name
                            ));
                        } else {
                            index.skills.push(skill);
                        }
                    }
                    Err(problem) => index
                        .problems
                        .push(format!("{}: {problem}", file.display())),
                }
            }
        }
        index
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }
}

fn find_skill_files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let candidate = dir.join(SKILL_FILE);
    if depth > 0 && candidate.is_file() {
        out.push(candidate);
        return;
    }
    if depth >= MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        // Real directories only: a symlinked skill could point outside the skill dir,
        // where reads are not allowed.
        let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if is_dir && !hidden {
            find_skill_files(&entry.path(), depth + 1, out);
        }
    }
}

/// Front matter is looked for in this many leading bytes; the body may be longer.
const FRONT_MATTER_BYTES: u64 = 64 * 1024;

/// Read a `SKILL.md`'s front matter (from its first bytes only) into a [`Skill`].
fn read_skill_header(file: &Path) -> Result<Skill, String> {
    use std::io::Read;
    let mut prefix = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(FRONT_MATTER_BYTES).read_to_end(&mut prefix))
        .map_err(|e| e.to_string())?;
    let prefix = prefix.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&prefix);
    // Decode only up to the closing `---`: the prefix may end inside a character.
    let end = find_closing(prefix).ok_or(
        "no complete YAML front matter: the file must start with a `---` line and close it with another",
    )?;
    let head = decode(&prefix[..end]).map_err(|e| e.to_string())?.text;
    let (yaml, _) = split_front_matter(&head)?;
    skill_from_front_matter(yaml, file)
}

/// Byte offset just past the closing `---` line of the front matter, if any.
fn find_closing(bytes: &[u8]) -> Option<usize> {
    let rest = bytes
        .strip_prefix(b"---\n")
        .or_else(|| bytes.strip_prefix(b"---\r\n"))?;
    let opening = bytes.len() - rest.len();
    let at = rest.windows(4).position(|w| w == b"\n---")?;
    let after = opening + at + 4;
    let line_end = bytes[after..]
        .iter()
        .position(|&b| b == b'\n')
        .map(|i| after + i + 1)
        .unwrap_or(bytes.len());
    Some(line_end)
}

/// `(yaml, body)` of a SKILL.md's text.
fn split_front_matter(text: &str) -> Result<(String, String), String> {
    let text = text.replace("\r\n", "\n");
    let rest = text
        .strip_prefix("---\n")
        .ok_or("no YAML front matter: the file must start with a `---` line")?;
    match rest.find("\n---") {
        Some(end) => {
            let after = &rest[end + 4..];
            let body = after.split_once('\n').map(|(_, b)| b).unwrap_or("");
            Ok((
                rest[..end].to_string(),
                body.trim_start_matches('\n').to_string(),
            ))
        }
        None => Err("the front matter has no closing `---` line".into()),
    }
}

fn skill_from_front_matter(yaml: String, file: &Path) -> Result<Skill, String> {
    let front: FrontMatter =
        yaml_serde::from_str(&yaml).map_err(|e| format!("front matter is not valid YAML: {e}"))?;
    let dir = file.parent().unwrap_or(Path::new("/")).to_path_buf();
    let name = front
        .name
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .or_else(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .ok_or("the skill has no name")?;
    let description = front
        .description
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|d| !d.is_empty())
        .ok_or("the front matter has no `description`")?;
    Ok(Skill {
        name,
        description,
        dir,
    })
}

/// Read a whole `SKILL.md` (already checked to be within the size limit).
fn read_skill(file: &Path) -> Result<(Skill, String), String> {
    let bytes = std::fs::read(file).map_err(|e| e.to_string())?;
    let text = decode(&bytes).map_err(|e| e.to_string())?.text;
    let (yaml, body) = split_front_matter(&text)?;
    Ok((skill_from_front_matter(yaml, file)?, body))
}

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
