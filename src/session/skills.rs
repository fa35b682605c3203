//! Skills: folders holding a `SKILL.md` (YAML front matter with `name` and
//! `description`, then instructions) under the profile's skill directories. They are
//! discovered once per session, listed in load_skill's description so a model can find
//! them, and loaded on demand (the `load_skill` tool, in `tools::skills`); the folder
//! stays readable for the files it mentions.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::guard::PathGuard;
use crate::text::decode;

pub const SKILL_FILE: &str = "SKILL.md";
/// How deep below a skill dir a `SKILL.md` is looked for (`<dir>/<group>/<skill>/SKILL.md`).
const MAX_DEPTH: usize = 3;
pub const MAX_SKILL_BYTES: u64 = 1024 * 1024;

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
pub fn read_skill(file: &Path) -> Result<(Skill, String), String> {
    let bytes = std::fs::read(file).map_err(|e| e.to_string())?;
    let text = decode(&bytes).map_err(|e| e.to_string())?.text;
    let (yaml, body) = split_front_matter(&text)?;
    Ok((skill_from_front_matter(yaml, file)?, body))
}
