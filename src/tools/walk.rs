//! Directory walking with ripgrep's rules (the `ignore` crate): hidden files skipped,
//! `.gitignore` (inside git repositories), `.ignore`, `.git/info/exclude` and git's
//! global excludes respected, symlinks not followed. list_dir and search_files walk by
//! descriptor ([`walk_beneath`]); grep walks by path ([`walker`]) and opens each file
//! beneath its root. Both apply the same rules, so the tools agree on what is visible.

use std::ffi::OsStr;
use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{Match, WalkBuilder};
use nix::fcntl::OFlag;
use nix::sys::stat::SFlag;

use crate::guard::Allowed;
use crate::guard::beneath::{Dir, Entry, Kind};

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Visibility {
    /// Show dotfiles and dot-directories.
    pub hidden: bool,
    /// Show what ignore files exclude.
    pub ignored: bool,
}

pub(crate) fn walker(root: &Path, visibility: Visibility) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(!visibility.hidden)
        .ignore(!visibility.ignored)
        .git_ignore(!visibility.ignored)
        .git_global(!visibility.ignored)
        .git_exclude(!visibility.ignored)
        .parents(!visibility.ignored)
        .follow_links(false)
        // A repository's object store is never what the model is looking for.
        .filter_entry(|entry| entry.file_name() != ".git");
    builder
}

/// Describe what the walk skipped, for "nothing found" and listing notes.
pub(crate) fn skipped_note(visibility: Visibility) -> Option<&'static str> {
    match (visibility.hidden, visibility.ignored) {
        (true, true) => None,
        (false, true) => Some("hidden files are skipped"),
        (true, false) => Some("files excluded by .gitignore/.ignore are skipped"),
        (false, false) => Some("hidden files and files excluded by .gitignore/.ignore are skipped"),
    }
}

/// Deeper than this a descriptor walk does not go: it holds one descriptor and one
/// stack frame per level, and no real tree is this deep (a task's can be).
const MAX_WALK_DEPTH: usize = 256;

/// An entry a descriptor walk visits: `name` in `dir` (held open), `rel` its path
/// relative to the start, `depth` 1 for the start's own entries.
pub(crate) struct Found<'a> {
    pub dir: &'a Dir,
    pub name: &'a OsStr,
    pub rel: &'a Path,
    pub depth: usize,
    pub kind: Kind,
}

/// Walk the directory `start` by descriptor, visiting what [`walker`] would yield (in
/// name order, depth first, `max_depth` levels): it is opened beneath the root that
/// admitted it and each directory beneath its parent, following no link ([`Dir::sub`]).
/// A link is visited as a link and never descended; a directory swapped for a link
/// after its listing is refused at the descent (and skipped, as the walker skips what it
/// cannot read), so the walk never lists a name outside `start`. The start itself
/// swapped for a link is an error (`ENOTDIR` for the link, `ELOOP` for one on the way).
///
/// Ignore files are read the same way, by descriptor, and fed to `ignore`'s
/// [`Gitignore`] matcher, combined as its walker does (see [`Rules::matched`]).
pub(crate) fn walk_beneath(
    start: &Allowed,
    visibility: Visibility,
    max_depth: Option<usize>,
    mut visit: impl FnMut(&Found<'_>) -> ControlFlow<()>,
) -> io::Result<()> {
    let dir = start.dir()?;
    let mut rules = Rules::new(visibility);
    if rules.active {
        rules.add_parents(start);
    }
    let max_depth = max_depth.unwrap_or(MAX_WALK_DEPTH).min(MAX_WALK_DEPTH);
    let mut rel = PathBuf::new();
    let _ = descend(
        &dir, &start.abs, &mut rel, 1, max_depth, &mut rules, &mut visit,
    );
    Ok(())
}

/// [`walk_beneath`] on several threads, in no particular order (for a caller that sorts
/// what it collects): each directory is still opened beneath the one it was listed in,
/// following no link, by whichever thread lists it. Pending directories are kept as
/// (parent, name), so a wide tree holds one descriptor per parent, not per child.
pub(crate) fn walk_beneath_parallel(
    start: &Allowed,
    visibility: Visibility,
    visit: &(dyn Fn(&Found<'_>) -> ControlFlow<()> + Sync),
) -> io::Result<()> {
    let dir = start.dir()?;
    let mut rules = Rules::new(visibility);
    if rules.active {
        rules.add_parents(start);
    }
    let first = Job {
        dir: Pending::Open(dir),
        abs: start.abs.clone(),
        rel: PathBuf::new(),
        depth: 1,
        rules,
    };
    let work = Work {
        queue: Mutex::new((vec![first], 0)),
        changed: Condvar::new(),
        stop: AtomicBool::new(false),
    };
    let threads = std::thread::available_parallelism()
        .map(|n| n.get().min(8))
        .unwrap_or(1);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| work.run(visit));
        }
    });
    Ok(())
}

/// A directory to list: open already (the start) or a name in its parent.
enum Pending {
    Open(Dir),
    In(Arc<Dir>, std::ffi::OsString),
}

struct Job {
    dir: Pending,
    abs: PathBuf,
    rel: PathBuf,
    depth: usize,
    /// The rules above this directory.
    rules: Rules,
}

/// The parallel walk's shared state: the jobs and how many threads hold one.
struct Work {
    queue: Mutex<(Vec<Job>, usize)>,
    changed: Condvar,
    stop: AtomicBool,
}

impl Work {
    fn run(&self, visit: &(dyn Fn(&Found<'_>) -> ControlFlow<()> + Sync)) {
        loop {
            let job = {
                let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
                loop {
                    if self.stop.load(Ordering::Relaxed) {
                        self.changed.notify_all();
                        return;
                    }
                    if let Some(job) = q.0.pop() {
                        q.1 += 1;
                        break job;
                    }
                    if q.1 == 0 {
                        // Nothing queued and nobody listing: the walk is over.
                        self.changed.notify_all();
                        return;
                    }
                    q = self.changed.wait(q).unwrap_or_else(|p| p.into_inner());
                }
            };
            self.list(job, visit);
            let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            q.1 -= 1;
            self.changed.notify_all();
        }
    }

    fn list(&self, job: Job, visit: &(dyn Fn(&Found<'_>) -> ControlFlow<()> + Sync)) {
        let dir = match job.dir {
            Pending::Open(dir) => dir,
            // Opened beneath its parent without following a link: an entry swapped for
            // a link since the listing is refused here (ELOOP/ENOTDIR), and skipped.
            Pending::In(parent, name) => match parent.sub(Path::new(&name)) {
                Ok(dir) => dir,
                Err(_) => return,
            },
        };
        // Unreadable: skipped, as the path walker skips it.
        let Ok(entries) = dir.list() else {
            return;
        };
        let mut rules = job.rules;
        rules.push(&dir, &job.abs, Some(&entries));
        let dir = Arc::new(dir);
        for entry in &entries {
            if entry.name == ".git" {
                continue;
            }
            let is_dir = entry.kind == Kind::Dir;
            let path = job.abs.join(&entry.name);
            if rules.skips(&path, &entry.name, is_dir) {
                continue;
            }
            let rel = job.rel.join(&entry.name);
            let found = Found {
                dir: &dir,
                name: &entry.name,
                rel: &rel,
                depth: job.depth,
                kind: entry.kind,
            };
            if visit(&found).is_break() {
                self.stop.store(true, Ordering::Relaxed);
                return;
            }
            if is_dir && job.depth < MAX_WALK_DEPTH {
                // Queued at once, so an idle thread starts on it while this one lists on.
                let below = Job {
                    dir: Pending::In(Arc::clone(&dir), entry.name.clone()),
                    abs: path,
                    rel,
                    depth: job.depth + 1,
                    rules: rules.clone(),
                };
                self.queue
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .0
                    .push(below);
                self.changed.notify_one();
            }
        }
    }
}

/// Visit the entries of `dir` (at `abs`, `rel` from the start) and descend into its
/// directories.
fn descend(
    dir: &Dir,
    abs: &Path,
    rel: &mut PathBuf,
    depth: usize,
    max_depth: usize,
    rules: &mut Rules,
    visit: &mut impl FnMut(&Found<'_>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    // Unreadable: skipped, as the path walker skips it.
    let Ok(mut entries) = dir.list() else {
        return ControlFlow::Continue(());
    };
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    rules.push(dir, abs, Some(&entries));
    let mut flow = ControlFlow::Continue(());
    for entry in &entries {
        // A repository's object store is never what the model is looking for.
        if entry.name == ".git" {
            continue;
        }
        let is_dir = entry.kind == Kind::Dir;
        let path = abs.join(&entry.name);
        if rules.skips(&path, &entry.name, is_dir) {
            continue;
        }
        rel.push(&entry.name);
        let found = Found {
            dir,
            name: &entry.name,
            rel,
            depth,
            kind: entry.kind,
        };
        flow = visit(&found);
        if flow.is_continue() && is_dir && depth < max_depth {
            // Opened beneath `dir` without following a link: an entry swapped for a
            // link since the listing is refused here (ELOOP/ENOTDIR), and skipped.
            if let Ok(sub) = dir.sub(Path::new(&entry.name)) {
                flow = descend(&sub, &path, rel, depth + 1, max_depth, rules, visit);
            }
        }
        rel.pop();
        if flow.is_break() {
            break;
        }
    }
    rules.pop();
    flow
}

/// One directory's ignore files, as `ignore` keeps them.
struct Level {
    ignore: Gitignore,
    gitignore: Gitignore,
    exclude: Gitignore,
    has_git: bool,
}

/// One level of [`Rules`] and those above it, shared by the directories below (the
/// parallel walk hands each directory's rules to whichever thread lists it).
struct Chain {
    level: Level,
    /// Whether this level or one above has a repository (`.git`, `.jj`).
    any_git: bool,
    up: Option<Arc<Chain>>,
}

/// The ignore rules in force during a walk: one level per directory from `/` down to
/// the one being listed. Cheap to clone.
#[derive(Clone)]
struct Rules {
    /// Whether ignore files apply at all (not with `include_ignored`).
    active: bool,
    hidden: bool,
    /// The deepest level (the directory being listed), linked to those above.
    top: Option<Arc<Chain>>,
    global: Arc<Gitignore>,
}

impl Rules {
    fn new(visibility: Visibility) -> Rules {
        let active = !visibility.ignored;
        Rules {
            active,
            hidden: !visibility.hidden,
            top: None,
            // git's core.excludesFile (or ~/.config/git/ignore): the server's own
            // configuration, read by path as the walker reads it.
            global: Arc::new(if active {
                Gitignore::global().0
            } else {
                Gitignore::empty()
            }),
        }
    }

    /// The ignore files of the directories above the start, as `ignore`'s `parents`
    /// option reads them. The start is a physical path, so are its ancestors: each is
    /// opened beneath `/` following no link (those inside the admitting root beneath
    /// it), so these are read by descriptor too.
    fn add_parents(&mut self, start: &Allowed) {
        let root = Dir::open(Path::new("/")).ok();
        let base = start.base_dir().ok();
        let mut ancestors: Vec<&Path> = start.abs.ancestors().skip(1).collect();
        ancestors.reverse();
        for abs in ancestors {
            let dir = match abs.strip_prefix(&start.base) {
                Ok(rel) => base.as_ref().and_then(|b| b.sub(rel).ok()),
                Err(_) => root
                    .as_ref()
                    .and_then(|r| r.sub(abs.strip_prefix("/").unwrap_or(abs)).ok()),
            };
            match dir {
                Some(dir) => self.push(&dir, abs, None),
                None => self.push_level(Level::empty()),
            }
        }
    }

    /// Enter `dir` (at `abs`); `listing`, where known, spares opening ignore files that
    /// are not there.
    fn push(&mut self, dir: &Dir, abs: &Path, listing: Option<&[Entry]>) {
        let level = if self.active {
            Level::read(dir, abs, listing)
        } else {
            Level::empty()
        };
        self.push_level(level);
    }

    fn push_level(&mut self, level: Level) {
        let up = self.top.take();
        let any_git = level.has_git || up.as_ref().is_some_and(|c| c.any_git);
        self.top = Some(Arc::new(Chain { level, any_git, up }));
    }

    fn pop(&mut self) {
        self.top = self.top.take().and_then(|c| c.up.clone());
    }

    /// Whether `ignore`'s walker would skip the entry at `path` (named `name`).
    fn skips(&self, path: &Path, name: &OsStr, is_dir: bool) -> bool {
        match self.matched(path, is_dir) {
            Match::Ignore(()) => true,
            Match::Whitelist(()) => false,
            Match::None => self.hidden && name.as_encoded_bytes().starts_with(b"."),
        }
    }

    /// `ignore`'s precedence (its `Ignore::matched_ignore`): the deepest directory
    /// whose file decides wins, `.ignore` over `.gitignore` over `.git/info/exclude`
    /// over the global excludes; git's files count only inside a repository (a level
    /// with `.git`) and not above its top.
    fn matched(&self, path: &Path, is_dir: bool) -> Match<()> {
        if !self.active {
            return Match::None;
        }
        let any_git = self.top.as_ref().is_some_and(|c| c.any_git);
        let (mut ignore, mut gitignore, mut exclude) = (Match::None, Match::None, Match::None);
        let mut saw_git = false;
        let mut at = self.top.as_deref();
        while let Some(chain) = at {
            at = chain.up.as_deref();
            let level = &chain.level;
            if ignore.is_none() {
                ignore = level.ignore.matched(path, is_dir).map(|_| ());
            }
            if any_git && !saw_git {
                if gitignore.is_none() {
                    gitignore = level.gitignore.matched(path, is_dir).map(|_| ());
                }
                if exclude.is_none() {
                    exclude = level.exclude.matched(path, is_dir).map(|_| ());
                }
            }
            saw_git = saw_git || level.has_git;
        }
        let global = if any_git {
            self.global.matched(path, is_dir).map(|_| ())
        } else {
            Match::None
        };
        ignore.or(gitignore).or(exclude).or(global)
    }
}

impl Level {
    fn empty() -> Level {
        Level {
            ignore: Gitignore::empty(),
            gitignore: Gitignore::empty(),
            exclude: Gitignore::empty(),
            has_git: false,
        }
    }

    /// The ignore files of `dir` (at `abs`), each opened beneath it.
    fn read(dir: &Dir, abs: &Path, listing: Option<&[Entry]>) -> Level {
        let listed = |name: &str| listing.is_none_or(|l| l.iter().any(|e| e.name == name));
        let git = listed(".git")
            .then(|| dir.stat(OsStr::new(".git")).ok().flatten())
            .flatten();
        let has_jj = listed(".jj") && matches!(dir.stat(OsStr::new(".jj")), Ok(Some(_)));
        let file = |name: &'static str| {
            if listed(name) {
                matcher(abs, &[(dir, Path::new(name))])
            } else {
                Gitignore::empty()
            }
        };
        let kind = git.map(|st| SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT);
        let exclude = match kind {
            Some(SFlag::S_IFDIR) => matcher(abs, &[(dir, Path::new(".git/info/exclude"))]),
            // A worktree's `.git` file names its git directory; the excludes live in
            // the common one, git's own store outside the walk, read by path.
            Some(SFlag::S_IFREG) => match worktree_exclude(dir) {
                Some(path) => match Dir::open(path.parent().unwrap_or(Path::new("/"))) {
                    Ok(info) => matcher(abs, &[(&info, Path::new("exclude"))]),
                    Err(_) => Gitignore::empty(),
                },
                None => Gitignore::empty(),
            },
            _ => Gitignore::empty(),
        };
        Level {
            ignore: file(".ignore"),
            gitignore: file(".gitignore"),
            exclude,
            has_git: git.is_some() || has_jj,
        }
    }
}

/// A matcher rooted at `root` from the files given (each relative to its directory,
/// opened without following a link); a missing or unreadable file adds nothing, a bad
/// line is skipped, as `ignore` does.
fn matcher(root: &Path, files: &[(&Dir, &Path)]) -> Gitignore {
    let mut builder = GitignoreBuilder::new(root);
    for (dir, rel) in files {
        let Ok(file) = dir.open_file(rel, OFlag::O_RDONLY | OFlag::O_NONBLOCK) else {
            continue;
        };
        let Ok(meta) = file.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let mut text = Vec::new();
        if io::Read::read_to_end(&mut &file, &mut text).is_err() {
            continue;
        }
        let from = root.join(rel);
        let text = String::from_utf8_lossy(&text);
        // git skips a byte order mark at the start of the file.
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        for line in text.lines() {
            let _ = builder.add_line(Some(from.clone()), line);
        }
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// The `info/exclude` of the repository a `.git` file points into (a worktree's):
/// `gitdir: <dir>` and, in it, `commondir`.
fn worktree_exclude(dir: &Dir) -> Option<PathBuf> {
    let first_line = |file: std::fs::File| {
        let mut text = String::new();
        io::Read::read_to_string(&mut &file, &mut text).ok()?;
        text.lines().next().map(str::to_string)
    };
    let dot_git = dir.open_file(Path::new(".git"), OFlag::O_RDONLY).ok()?;
    let git_dir = PathBuf::from(first_line(dot_git)?.strip_prefix("gitdir: ")?);
    // A relative gitdir (a submodule's) would be a path walk through the workspace.
    if !git_dir.is_absolute() {
        return None;
    }
    let common = first_line(std::fs::File::open(git_dir.join("commondir")).ok()?)?;
    let common = if common.starts_with('.') {
        git_dir.join(common)
    } else {
        PathBuf::from(common)
    };
    Some(common.join("info/exclude"))
}

/// The swap the tests of the descriptor walks stage: a workspace `ws` with `d/inside`,
/// and `out/secret` outside it, which `d` is swapped for a link to.
#[cfg(test)]
pub(crate) struct SwapFixture {
    _tmp: tempfile::TempDir,
    pub ws: PathBuf,
    pub out: PathBuf,
}

#[cfg(test)]
impl SwapFixture {
    pub fn new() -> SwapFixture {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        let out = tmp.path().join("out");
        std::fs::create_dir_all(ws.join("d")).unwrap();
        std::fs::write(ws.join("d/inside"), "x").unwrap();
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("secret"), "x").unwrap();
        SwapFixture { _tmp: tmp, ws, out }
    }

    /// The task's swap: `d` moved aside and a link to `out` in its place.
    pub fn swap(&self) {
        std::fs::rename(self.ws.join("d"), self.ws.join("d.real")).unwrap();
        std::os::unix::fs::symlink(&self.out, self.ws.join("d")).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::fs;
    use std::os::unix::fs::symlink;

    use super::*;
    use crate::guard::{Access, PathGuard};

    fn descriptor_walk(ws: &Path, visibility: Visibility) -> BTreeSet<(String, bool)> {
        let guard = PathGuard::new(ws, &[], &[]).unwrap();
        let start = guard.check(".", Access::Read).unwrap();
        let mut seen = BTreeSet::new();
        walk_beneath(&start, visibility, None, |f| {
            seen.insert((f.rel.display().to_string(), f.kind == Kind::Dir));
            ControlFlow::Continue(())
        })
        .unwrap();
        // The parallel walk (search_files') sees the very same.
        let parallel = std::sync::Mutex::new(BTreeSet::new());
        walk_beneath_parallel(&start, visibility, &|f| {
            parallel
                .lock()
                .unwrap()
                .insert((f.rel.display().to_string(), f.kind == Kind::Dir));
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(seen, parallel.into_inner().unwrap(), "{visibility:?}");
        seen
    }

    fn path_walk(ws: &Path, visibility: Visibility) -> BTreeSet<(String, bool)> {
        let ws = crate::guard::resolve_physical(ws).unwrap();
        walker(&ws, visibility)
            .build()
            .filter_map(Result::ok)
            .filter(|e| e.depth() > 0)
            .map(|e| {
                let rel = e.path().strip_prefix(&ws).unwrap().display().to_string();
                (rel, e.file_type().is_some_and(|t| t.is_dir()))
            })
            .collect()
    }

    #[test]
    fn the_descriptor_walk_sees_what_the_path_walker_sees() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        let files = [
            "a.rs",
            "build/out.o",
            "keep.log",
            "drop.log",
            ".hidden",
            ".shown",
            "src/lib.rs",
            "src/gen/x.rs",
            "src/skip.tmp",
            "src/notes.txt",
            "vendored/.gitignore",
            "vendored/v.rs",
            "vendored/drop.log",
            "excluded.txt",
            "ignored-by-dot-ignore/f",
            ".git/HEAD",
        ];
        for f in files {
            let path = ws.join(f);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "x").unwrap();
        }
        // A repository without running git: a `.git` directory is what counts.
        fs::create_dir_all(ws.join(".git/info")).unwrap();
        fs::write(ws.join(".git/info/exclude"), "excluded.txt\n").unwrap();
        fs::write(
            ws.join(".gitignore"),
            "\u{feff}build/\n*.log\n!keep.log\n!.shown\nsrc/gen\n",
        )
        .unwrap();
        fs::write(ws.join("src/.gitignore"), "*.tmp\n").unwrap();
        fs::write(
            ws.join(".ignore"),
            "ignored-by-dot-ignore/\nsrc/notes.txt\n",
        )
        .unwrap();
        // A nested repository: the outer .gitignore stops at its top.
        fs::create_dir(ws.join("vendored/.git")).unwrap();
        fs::write(ws.join("vendored/.gitignore"), "!drop.log\n").unwrap();
        symlink(ws.join("src"), ws.join("link")).unwrap();

        for hidden in [false, true] {
            for ignored in [false, true] {
                let visibility = Visibility { hidden, ignored };
                let by_path = path_walk(&ws, visibility);
                assert!(by_path.len() > 5, "{by_path:?}");
                assert_eq!(
                    descriptor_walk(&ws, visibility),
                    by_path,
                    "hidden {hidden}, ignored {ignored}"
                );
            }
        }
    }

    #[test]
    fn a_directory_swapped_for_a_link_mid_walk_is_not_descended() {
        let fixture = SwapFixture::new();
        let ws = &fixture.ws;
        let guard = PathGuard::new(ws, &[], &[]).unwrap();
        let start = guard.check(".", Access::Read).unwrap();

        let mut seen = Vec::new();
        walk_beneath(&start, Visibility::default(), None, |f| {
            seen.push((f.rel.display().to_string(), f.kind));
            if f.rel == Path::new("d") {
                // The task's swap, after the listing said `d` is a directory and
                // before the walk descends into it.
                assert_eq!(f.kind, Kind::Dir);
                fixture.swap();
                // The control: a walk by path follows the swap outside.
                let by_path: Vec<_> = fs::read_dir(ws.join("d"))
                    .unwrap()
                    .map(|e| e.unwrap().file_name())
                    .collect();
                assert_eq!(by_path, ["secret"]);
            }
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(seen, [("d".to_string(), Kind::Dir)]);

        // Walked again, the link is seen as a link and not descended.
        let mut seen = Vec::new();
        walk_beneath(&start, Visibility::default(), None, |f| {
            seen.push((f.rel.display().to_string(), f.kind));
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(
            seen,
            [
                ("d".to_string(), Kind::Symlink),
                ("d.real".to_string(), Kind::Dir),
                ("d.real/inside".to_string(), Kind::File),
            ]
        );
    }
}
