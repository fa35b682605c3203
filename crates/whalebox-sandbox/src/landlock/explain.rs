//! Refusals in the profile's terms: why the sandbox would refuse a path or a program
//! (the preset that grants it, the reason none does, the sets that apply) and the line
//! to add to the profile, so a command that hit a fence says how to open it.

use std::path::{Path, PathBuf};

use super::{Grant, Sandbox};
use crate::presets::{Excluded, Preset, PresetPath};

impl Sandbox {
    /// Why the sandbox would refuse `path`, in the profile's terms: the preset that
    /// grants it, the reason none does, or the sets that apply.
    fn cause(&self, path: &Path) -> Cause<'_> {
        // A rule holds the file its path led to when it was made: a path resolved
        // through its symlinks is under it too.
        let covering: Vec<&(PathBuf, Grant)> = self
            .paths
            .iter()
            .filter(|(p, _)| {
                path.starts_with(p) || p.canonicalize().is_ok_and(|c| path.starts_with(c))
            })
            .collect();
        if covering
            .iter()
            .any(|(_, g)| *g == Grant::Full || *g == Grant::Device)
        {
            return Cause::Writable;
        }
        let h = &self.hints;
        if let Some(x) = h.excluded.iter().find(|x| path.starts_with(&x.path)) {
            return Cause::Excluded(x);
        }
        if let Some(entry) = h
            .catalog
            .iter()
            .filter(|e| path.starts_with(&e.path))
            .max_by_key(|e| e.path.components().count())
        {
            return if !h.presets.contains(&entry.preset) {
                Cause::PresetOff(vec![entry])
            } else if covering.is_empty() {
                Cause::PresetMissing(entry)
            } else {
                Cause::PresetLimited(entry)
            };
        }
        // A directory the tool tried to create on the way to a preset's cache.
        let mut parents: Vec<&PresetPath> = Vec::new();
        for e in &h.catalog {
            if e.kind.created()
                && e.path.starts_with(path)
                && !h.presets.contains(&e.preset)
                && !parents.iter().any(|p| p.preset == e.preset)
            {
                parents.push(e);
            }
        }
        if !parents.is_empty() {
            return Cause::PresetOff(parents);
        }
        if covering.is_empty() {
            Cause::Outside
        } else {
            Cause::ReadOnly
        }
    }

    /// "in PROFILE", or how to get a profile when the embedded default is in use.
    fn in_profile(&self) -> String {
        if self.hints.profile_is_file {
            format!("in {}", self.hints.profile)
        } else {
            "in a profile (whalebox runs with its embedded default; write one and pass --profile FILE)"
                .into()
        }
    }

    /// `presets = ["node", "rust"]`: the profile's presets plus `add`.
    fn presets_with(&self, add: Preset) -> String {
        let mut all = self.hints.presets.clone();
        all.push(add);
        let names: Vec<String> = all.iter().map(|p| format!("\"{p}\"")).collect();
        format!("presets = [{}]", names.join(", "))
    }

    /// The preset-based part of an explanation: `(reason, fix)`, or `None` when no
    /// preset is involved.
    fn preset_advice(&self, cause: &Cause) -> Option<(String, String)> {
        Some(match cause {
            Cause::Excluded(x) => (
                format!("{} (left out of preset \"{}\" on purpose)", x.why, x.preset),
                x.instead.to_string(),
            ),
            Cause::PresetOff(entries) if entries.len() == 1 => {
                let e = entries[0];
                let how = if !e.kind.created() {
                    format!("{}, {}", e.what, e.access)
                } else {
                    format!("{}, {}, created if missing", e.what, e.access)
                };
                (
                    format!("is in preset \"{}\" ({how})", e.preset),
                    format!(
                        "add {} to [landlock] {}",
                        self.presets_with(e.preset),
                        self.in_profile()
                    ),
                )
            }
            Cause::PresetOff(entries) => {
                let names: Vec<String> = entries
                    .iter()
                    .map(|e| format!("\"{}\"", e.preset))
                    .collect();
                (
                    format!(
                        "is on the way to caches that presets {} create and grant",
                        names.join(", ")
                    ),
                    format!(
                        "add the preset of the tool you ran to `presets` in [landlock] {}",
                        self.in_profile()
                    ),
                )
            }
            Cause::PresetLimited(e) => (
                format!(
                    "is in preset \"{}\" ({}), which grants it {} only",
                    e.preset, e.what, e.access
                ),
                "do that outside the sandbox (installing toolchains or programs there is not a \
                 build step), or ask the user to add the path to [landlock] rw"
                    .into(),
            ),
            Cause::PresetMissing(e) => (
                format!(
                    "is in preset \"{}\" ({}), which is on, but it did not exist when whalebox \
                     started",
                    e.preset, e.what
                ),
                "restart whalebox (or the command) now that it exists".into(),
            ),
            _ => return None,
        })
    }

    /// Whether a task may execute `program` (a path resolved through its symlinks): a
    /// read-and-execute or full grant covers it. A rule holds the file it was opened on,
    /// so a granted path that is itself a symlink counts where it leads.
    pub fn executable(&self, program: &Path) -> bool {
        self.paths.iter().any(|(p, g)| {
            matches!(g, Grant::ReadExec | Grant::Full)
                && (program.starts_with(p)
                    || p.canonicalize().is_ok_and(|c| program.starts_with(c)))
        })
    }

    /// Why a task may not execute the `programs` (each resolved through its symlinks)
    /// and the one profile line that would allow them all; `None` when every one may
    /// be executed. `rox` is the profile's own `[landlock] rox`, which the line repeats.
    pub fn exec_refusal(&self, programs: &[PathBuf], rox: &[PathBuf]) -> Option<String> {
        let refused: Vec<&PathBuf> = programs.iter().filter(|p| !self.executable(p)).collect();
        let first = refused.first()?;
        // A preset that is off, or a path left out of one on purpose: its own advice.
        let cause = self.cause(first);
        if matches!(
            cause,
            Cause::Excluded(_) | Cause::PresetOff(_) | Cause::PresetMissing(_)
        ) && let Some((reason, fix)) = self.preset_advice(&cause)
        {
            return Some(format!(
                "the sandbox refuses to execute {}: it {reason}; {fix}",
                first.display()
            ));
        }
        let mut dirs: Vec<PathBuf> = Vec::new();
        for p in &refused {
            let dir = installation(p);
            if !dirs.iter().any(|d| dir.starts_with(d)) {
                dirs.retain(|d| !d.starts_with(&dir));
                dirs.push(dir);
            }
        }
        let names: Vec<String> = refused.iter().map(|p| p.display().to_string()).collect();
        let why = match cause {
            Cause::Outside => "outside every sandbox root",
            _ => "readable in the sandbox, not executable",
        };
        let list: Vec<String> = rox
            .iter()
            .filter(|p| !dirs.contains(p))
            .chain(&dirs)
            .map(|p| toml::Value::String(p.display().to_string()).to_string())
            .collect();
        Some(format!(
            "the sandbox refuses to execute {} ({why}); to allow it, set in [landlock] {}: rox = [{}]",
            names.join(" and "),
            self.in_profile(),
            list.join(", ")
        ))
    }

    /// The sets, as paths: what writes and reads are allowed under.
    fn list(&self, want: &[Grant]) -> String {
        let v: Vec<String> = self
            .paths
            .iter()
            .filter(|(p, g)| want.contains(g) && !p.starts_with("/dev"))
            .map(|(p, _)| p.display().to_string())
            .collect();
        v.join(", ")
    }

    /// Which sets cover `path` and what would allow it, to explain a permission error
    /// (shell results, file-tool errors).
    pub fn explain(&self, path: &Path) -> String {
        let cause = self.cause(path);
        if let Some((reason, fix)) = self.preset_advice(&cause) {
            return format!("{} {reason}: {fix}", path.display());
        }
        match cause {
            Cause::Writable => format!(
                "{} is writable in the sandbox, so the error has another cause (file mode, owner)",
                path.display()
            ),
            Cause::ReadOnly => format!(
                "{} is read-only in the sandbox: writes are allowed only under {}",
                path.display(),
                self.list(&[Grant::Full])
            ),
            _ => format!(
                "{} is outside every sandbox root: writes are allowed only under {}; \
                 reads also under {}. This path is not in any read root; add it to read_roots \
                 (read-only) or to [landlock] ro / rox / rw {}",
                path.display(),
                self.list(&[Grant::Full]),
                self.list(&[Grant::Read, Grant::ReadExec]),
                self.in_profile()
            ),
        }
    }

    /// One line for `whalebox run` after a command failed on `path`: "it is in preset
    /// …; add …", or `None` when the sandbox allows writing there (not its refusal).
    pub fn refusal(&self, path: &Path) -> Option<String> {
        let cause = self.cause(path);
        if let Some((reason, fix)) = self.preset_advice(&cause) {
            return Some(format!("it {reason}; {fix}"));
        }
        match cause {
            Cause::Writable => None,
            Cause::ReadOnly => Some(format!(
                "it is read-only in the sandbox; add it to [landlock] rw {} if commands must write there",
                self.in_profile()
            )),
            _ => Some(format!(
                "it is outside every sandbox root; add it to read_roots (read-only) or to \
                 [landlock] ro / rox / rw {}",
                self.in_profile()
            )),
        }
    }
}

/// The installation an executable belongs to, to grant as a whole (its libraries and
/// standard library sit beside its `bin`): `PREFIX` for `PREFIX/bin/NAME`, unless that
/// is the home directory or a top-level directory; else the executable's directory.
fn installation(program: &Path) -> PathBuf {
    let dir = program.parent().unwrap_or(program);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if dir.file_name().is_some_and(|n| n == "bin")
        && let Some(prefix) = dir.parent()
        && prefix.components().count() > 2
        && home.as_deref() != Some(prefix)
    {
        return prefix.to_path_buf();
    }
    dir.to_path_buf()
}

/// What [`Sandbox::cause`] found.
enum Cause<'a> {
    /// A writable set covers it: something other than the sandbox refused.
    Writable,
    /// A path no preset grants, on purpose.
    Excluded(&'a Excluded),
    /// Presets that are off would grant it (one), or create caches below it (several).
    PresetOff(Vec<&'a PresetPath>),
    /// Its preset is on and grants it less than was asked (read-only, read and execute).
    PresetLimited(&'a PresetPath),
    /// Its preset is on, but the path was missing at start and so never granted.
    PresetMissing(&'a PresetPath),
    Outside,
    ReadOnly,
}

#[cfg(test)]
mod tests {
    use super::super::{Hints, LandlockMode, NetworkMode};
    use super::*;
    use crate::presets::{self, Context, Kind};

    /// A sandbox with the workspace /ws, the given presets on (their paths granted as
    /// `Sandbox::new` would) and every preset's hints, for a home of /home/me.
    fn sandbox(on: &[Preset]) -> Sandbox {
        let var = |_: &str| None;
        let ctx = Context {
            home: Some(Path::new("/home/me")),
            cwd: Path::new("/"),
            var: &var,
        };
        let mut paths = vec![
            (PathBuf::from("/ws"), Grant::Full),
            (PathBuf::from("/usr"), Grant::ReadExec),
        ];
        for p in on.iter().flat_map(|p| p.resolve(&ctx)) {
            let grant = match p.kind {
                Kind::Cache => Grant::Full,
                Kind::LockFile => Grant::Device,
                Kind::Toolchain => Grant::ReadExec,
                _ => Grant::Read,
            };
            paths.push((p.path, grant));
        }
        Sandbox {
            mode: LandlockMode::Enforce,
            min_abi: 1,
            paths,
            network: NetworkMode::Allow,
            connect: vec![],
            server_connect: vec![],
            server_write: vec![],
            server_private: vec![],
            server_read: vec![],
            server_rmdir: vec![],
            server_devices: false,
            server_roots: Vec::new(),
            bind: vec![],
            proxy_port: None,
            task_connect: Vec::new(),
            server_bind: Vec::new(),
            create: vec![],
            hints: Hints {
                profile: "/p/ci.toml".into(),
                profile_is_file: true,
                presets: on.to_vec(),
                catalog: presets::catalog(&ctx),
                excluded: presets::excluded(&ctx),
            },
        }
    }

    #[test]
    fn a_refused_cache_names_its_preset_and_the_line_to_add() {
        let s = sandbox(&[]);
        let path = Path::new("/home/me/.cargo/registry/index/x/.cache/wb/de/wbdep");
        let msg = s.explain(path);
        assert!(
            msg.contains("is in preset \"rust\" (cargo's registry cache, read-write")
                && msg.contains("add presets = [\"rust\"] to [landlock] in /p/ci.toml"),
            "{msg}"
        );
        assert_eq!(
            s.refusal(path).unwrap(),
            "it is in preset \"rust\" (cargo's registry cache, read-write, created if missing); \
             add presets = [\"rust\"] to [landlock] in /p/ci.toml"
        );
        // Presets already on are kept in the suggestion.
        let s = sandbox(&[Preset::Node]);
        let msg = s.explain(Path::new("/home/me/go/pkg/mod/cache"));
        assert!(msg.contains("presets = [\"node\", \"go\"]"), "{msg}");
        // A config is read-only, and so says the hint.
        let msg = s.explain(Path::new("/home/me/.cargo/config.toml"));
        assert!(msg.contains("cargo's configuration, read-only"), "{msg}");
    }

    #[test]
    fn a_directory_on_the_way_to_a_cache_names_the_presets_that_create_below_it() {
        let s = sandbox(&[]);
        let msg = s.explain(Path::new("/home/me/go"));
        assert!(msg.contains("presets = [\"go\"]"), "{msg}");
        let msg = s.explain(Path::new("/home/me/.cache"));
        assert!(
            msg.contains("presets \"node\", \"python\", \"go\", \"nix\""),
            "{msg}"
        );
        // With the presets on, the caches are writable: not the sandbox's refusal.
        let s = sandbox(&[Preset::Go]);
        assert_eq!(s.refusal(Path::new("/home/me/.cache/go-build/00")), None);
    }

    #[test]
    fn credentials_are_never_suggested() {
        for on in [&[][..], &[Preset::Rust][..]] {
            let msg = sandbox(on).explain(Path::new("/home/me/.cargo/credentials.toml"));
            assert!(
                msg.contains("registry tokens")
                    && msg.contains("left out of preset \"rust\" on purpose"),
                "{msg}"
            );
            assert!(!msg.contains("add presets"), "{msg}");
        }
        let msg = sandbox(&[Preset::Nix]).explain(Path::new("/nix/var/nix/db/big-lock"));
        assert!(msg.contains("NIX_REMOTE=daemon"), "{msg}");
    }

    #[test]
    fn a_toolchain_is_read_and_execute_only_and_other_paths_name_the_keys() {
        let s = sandbox(&[Preset::Rust]);
        let msg = s.explain(Path::new("/home/me/.rustup/toolchains/x/bin/new"));
        assert!(msg.contains("grants it read and execute only"), "{msg}");
        let msg = s.explain(Path::new("/srv/data"));
        assert!(
            msg.contains("writes are allowed only under /ws")
                && msg.contains("read_roots")
                && msg.contains("[landlock] ro / rox / rw in /p/ci.toml"),
            "{msg}"
        );
        assert!(
            s.refusal(Path::new("/usr/x"))
                .unwrap()
                .contains("read-only in the sandbox")
        );
        assert_eq!(s.refusal(Path::new("/ws/target")), None);
    }

    #[test]
    fn a_refused_executable_names_its_installation_as_one_rox_line() {
        let s = sandbox(&[]);
        assert!(s.executable(Path::new("/usr/bin/env")) && s.executable(Path::new("/ws/x")));
        assert_eq!(s.exec_refusal(&[PathBuf::from("/usr/bin/env")], &[]), None);
        let python = PathBuf::from("/srv/py/versions/3.12/bin/python3.12");
        let msg = s.exec_refusal(std::slice::from_ref(&python), &[]).unwrap();
        assert!(
            msg.starts_with("the sandbox refuses to execute /srv/py/versions/3.12/bin/python3.12 (outside every sandbox root)")
                && msg.ends_with("set in [landlock] in /p/ci.toml: rox = [\"/srv/py/versions/3.12\"]"),
            "{msg}"
        );
        // The profile's own list is repeated, so the line replaces it.
        let msg = s.exec_refusal(&[python], &[PathBuf::from("/a")]).unwrap();
        assert!(
            msg.ends_with("rox = [\"/a\", \"/srv/py/versions/3.12\"]"),
            "{msg}"
        );
        // A script and its interpreter in one installation: one directory.
        let msg = s
            .exec_refusal(
                &[
                    PathBuf::from("/srv/node/lib/node_modules/npm/bin/npx-cli.js"),
                    PathBuf::from("/srv/node/bin/node"),
                ],
                &[],
            )
            .unwrap();
        assert!(msg.ends_with("rox = [\"/srv/node\"]"), "{msg}");
        // Readable is not executable.
        let mut s = s;
        s.paths.push((PathBuf::from("/srv/tools"), Grant::Read));
        let msg = s
            .exec_refusal(&[PathBuf::from("/srv/tools/run")], &[])
            .unwrap();
        assert!(
            msg.contains("(readable in the sandbox, not executable)"),
            "{msg}"
        );
        assert!(msg.ends_with("rox = [\"/srv/tools\"]"), "{msg}");
    }
}
