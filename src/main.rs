//! The `whalebox` command line: `serve` (MCP on stdio), `call` (one tool call, the
//! envelope as JSON on stdout), `tools` (what is enabled) and `profile check`.
//!
//! Exit codes: 0 success; 1 the tool answered with an error; 2 usage or profile errors
//! (and arguments that are not JSON).

use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use serde_json::{Value, json};

use whalebox::core::{Asking, CallContext, Code, Envelope, Registry};
use whalebox::profile::{LoadOptions, Profile, RelativeTo};
use whalebox::tools::{self, Env, Session};

const EXIT_TOOL_ERROR: u8 = 1;
const EXIT_USAGE: u8 = 2;

#[derive(Parser)]
#[command(
    name = "whalebox",
    version,
    about = "The hands of an LLM coding agent: exact, fenced-in file, search, edit and shell tools over MCP",
    long_about = "whalebox serves file, search, edit and shell tools to an LLM agent over MCP (stdio), or runs \
                  one call from the command line. A TOML profile says which tool groups are on, \
                  where the workspace is and which extra roots may be read; without --profile \
                  the embedded default is used (the current directory, local tools on).",
    after_long_help = "Environment:\n  \
        WHALEBOX_PROFILE      the profile file, when --profile is not given\n  \
        WHALEBOX_POLICY       the exec policy file, replacing the profile's `policy`\n  \
        WHALEBOX_RELATIVE_TO  `workspace`: relative paths in the profile mean the workspace\n  \
        WHALEBOX_ZSH          the gated zsh (the Nix package sets it)\n  \
        RUST_LOG              log filter for stderr (default: whalebox=info when serving)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone, Default)]
struct ProfileArgs {
    /// Profile file (TOML). Without it the embedded default profile is used.
    #[arg(long, value_name = "FILE", env = "WHALEBOX_PROFILE")]
    profile: Option<PathBuf>,
    /// Workspace directory, overriding the profile's `workspace`.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Exec policy file, replacing the profile's `policy`.
    #[arg(long, value_name = "FILE", env = "WHALEBOX_POLICY")]
    policy: Option<PathBuf>,
    /// What relative paths in the profile mean: the profile file's directory, or the
    /// workspace (for a profile copied elsewhere, e.g. into the Nix store).
    #[arg(
        long,
        value_enum,
        value_name = "BASE",
        env = "WHALEBOX_RELATIVE_TO",
        default_value = "profile"
    )]
    relative_to: RelativeTo,
}

impl ProfileArgs {
    fn load_options(&self) -> LoadOptions {
        LoadOptions {
            profile: self.profile.clone(),
            workspace: self.workspace.clone(),
            policy: self.policy.clone(),
            relative_to: self.relative_to,
            extra_ro: Vec::new(),
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Serve the enabled tools over MCP on stdin/stdout (logs go to stderr).
    Serve {
        #[command(flatten)]
        profile: ProfileArgs,
    },
    /// Run one tool call and print its envelope {ok, code, text, data, repairs} as JSON.
    #[command(after_help = "Examples:\n  \
        whalebox call read_file --args '{\"file_path\": \"README.md\", \"limit\": 20}'\n  \
        whalebox call grep --args '{\"pattern\": \"fn main\", \"include\": \"*.rs\"}'\n  \
        echo '{\"pattern\": \"**/*.toml\"}' | whalebox call search_files --args-file -\n\n\
        Exit status: 0 ok, 1 the tool returned an error, 2 usage or profile error.")]
    Call {
        /// Tool name (see `whalebox tools`).
        tool: String,
        /// Arguments as a JSON object.
        #[arg(long, value_name = "JSON", conflicts_with = "args_file")]
        args: Option<String>,
        /// Read the arguments from a file (`-` for stdin).
        #[arg(long, value_name = "FILE")]
        args_file: Option<PathBuf>,
        #[command(flatten)]
        profile: ProfileArgs,
    },
    /// List the enabled tools.
    Tools {
        /// Print the full specs (schemas, annotations) as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        profile: ProfileArgs,
    },
    /// Inspect profiles.
    Profile {
        #[command(subcommand)]
        command: ProfileCommand,
    },
    /// Check exec policies.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// What this machine and profile give: Landlock (the kernel's ABI, what is enforced
    /// and what is dropped), the gated zsh, the exec policy.
    Doctor {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        profile: ProfileArgs,
    },
    /// Run one command inside the full sandbox (Landlock, the gated zsh and its policy),
    /// with this terminal's stdin, stdout and stderr; exit with the command's status.
    #[command(after_help = "Example (a CI job's tests, fenced in):
          whalebox run --profile ci.toml -- cargo test

        Approvals (`ask`) go to /dev/tty when there is one, else the profile's on_ask decides.")]
    Run {
        #[command(flatten)]
        profile: ProfileArgs,
        /// A file or directory the command may read besides the profile's sets, such as
        /// the script a CI runner wrote outside the workspace (repeatable).
        #[arg(long = "ro", value_name = "PATH")]
        ro: Vec<PathBuf>,
        /// The command: program and arguments.
        #[arg(last = true, required = true)]
        command: Vec<OsString>,
    },
    /// Undo: the workspace's checkpoints, taken before every call that may change it
    /// (the same store the server uses, while it runs or after it exited).
    #[command(after_help = "Examples:
  whalebox checkpoints list
  whalebox checkpoints diff 12 src/
  whalebox checkpoints restore 12 --dry-run
  whalebox checkpoints restore 12 src/lib.rs")]
    Checkpoints {
        #[command(subcommand)]
        command: CheckpointsCommand,
    },
    /// An interactive gated zsh inside the same sandbox.
    Shell {
        #[command(flatten)]
        profile: ProfileArgs,
    },
    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell).
    #[command(after_help = "Examples:\n  \
        whalebox completions bash > ~/.local/share/bash-completion/completions/whalebox\n  \
        whalebox completions zsh > \"${fpath[1]}/_whalebox\"\n  \
        whalebox completions fish > ~/.config/fish/completions/whalebox.fish")]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) on stdout, or write one page per command into --dir.
    Man {
        /// Write whalebox.1 and whalebox-COMMAND.1 pages into this directory.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// What every `whalebox checkpoints` command takes.
#[derive(Args, Clone, Default)]
struct CheckpointsArgs {
    #[command(flatten)]
    profile: ProfileArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum CheckpointsCommand {
    /// The checkpoints, newest first, with what their calls changed.
    List {
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[command(flatten)]
        args: CheckpointsArgs,
    },
    /// What changed from checkpoint ID to the workspace now (under PATH).
    Diff {
        id: String,
        path: Option<String>,
        #[command(flatten)]
        args: CheckpointsArgs,
    },
    /// Put the workspace (or PATHs) back as checkpoint ID had it; itself undoable.
    Restore {
        id: String,
        paths: Vec<String>,
        /// Only say what would change.
        #[arg(long)]
        dry_run: bool,
        /// Overwrite changes made outside whalebox since the checkpoint.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        args: CheckpointsArgs,
    },
    /// Take a checkpoint now (before changing things by hand).
    Save {
        #[arg(long, short, default_value = "")]
        message: String,
        #[command(flatten)]
        args: CheckpointsArgs,
    },
    /// Drop checkpoints past `keep` and `max_total_bytes`, and unreferenced blobs.
    Prune {
        #[command(flatten)]
        args: CheckpointsArgs,
    },
}

#[derive(Subcommand)]
enum PolicyCommand {
    /// Print the decision for one command and every rule that matched, as JSON.
    #[command(
        after_help = "Example:\n  whalebox policy check --policy policies/default.toml -- git push origin main"
    )]
    Check {
        /// --policy FILE, else the profile's policy, else the embedded default policy.
        #[command(flatten)]
        profile: ProfileArgs,
        /// The command: program and arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Load policy files and check their examples; exit 1 if any fails.
    Test {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print the JSON Schema of policy files (for editors: taplo, `#:schema`).
    Schema,
}

#[derive(Subcommand)]
enum ProfileCommand {
    /// Validate a profile (default: --profile, else the embedded one) and its exec policy,
    /// and print the effective profile as JSON.
    Check {
        /// Profile file to check (instead of --profile).
        file: Option<PathBuf>,
        #[command(flatten)]
        profile: ProfileArgs,
        /// Check the files, not this machine: a `[landlock] mode = "enforce"` this kernel
        /// cannot keep is reported, not an error (for checks that run on a build machine,
        /// such as lib.mkSandbox's).
        #[arg(long)]
        files_only: bool,
    },
    /// Print the JSON Schema of profile files (for editors: taplo, `#:schema`).
    Schema,
}

fn main() -> ExitCode {
    // The task supervisor is a hidden mode of this binary, dispatched before clap so it
    // starts fast and its arguments are never parsed as whalebox options.
    let mut argv = std::env::args_os().skip(1);
    match argv.next().as_deref().and_then(|a| a.to_str()) {
        Some(whalebox::shell::supervisor::SUBCOMMAND) => {
            whalebox::shell::supervisor::main(argv.collect())
        }
        Some(whalebox::net::netns::PROBE_SUBCOMMAND) => whalebox::net::netns::probe_main(),
        _ => {}
    }
    let cli = Cli::parse();
    let serving = matches!(cli.command, Command::Serve { .. });
    init_logging(serving);
    // Serving and calling tools happen inside the sandbox, which is entered here, on the
    // main thread, before the async runtime starts its threads (Landlock restricts the
    // calling thread and what it starts afterwards).
    match cli.command {
        Command::Serve { profile } => {
            let (registry, env) = match setup_sandboxed(&profile, Session::Server) {
                Ok(ok) => ok,
                Err(code) => return code,
            };
            with_runtime(serve(registry, env))
        }
        Command::Call {
            tool,
            args,
            args_file,
            profile,
        } => {
            let raw = match read_args(args, args_file) {
                Ok(raw) => raw,
                Err(code) => return code,
            };
            let (registry, env) = match setup_sandboxed(&profile, Session::OneShot) {
                Ok(ok) => ok,
                Err(code) => return code,
            };
            with_runtime(call(&tool, raw, registry, env))
        }
        Command::Run {
            profile,
            ro,
            command,
        } => run_sandboxed(&profile, ro, whalebox::runner::What::Command(command)),
        Command::Shell { profile } => {
            run_sandboxed(&profile, Vec::new(), whalebox::runner::What::Shell)
        }
        other => run(other),
    }
}

fn run_sandboxed(
    profile: &ProfileArgs,
    extra_ro: Vec<PathBuf>,
    what: whalebox::runner::What,
) -> ExitCode {
    let mut options = profile.load_options();
    options.extra_ro = extra_ro;
    let (_registry, env) = match setup_with(&options, Session::OneShot)
        .and_then(|(registry, env)| enter_sandbox(env).map(|env| (registry, env)))
    {
        Ok(ok) => ok,
        Err(code) => return code,
    };
    match whalebox::runner::run(&env, what) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("whalebox: {e}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

fn doctor(as_json: bool, args: &ProfileArgs) -> ExitCode {
    let (_registry, env) = match setup(args, Session::OneShot) {
        Ok(ok) => ok,
        Err(code) => return code,
    };
    let landlock = env.sandbox_status();
    let server = env
        .sandbox
        .as_ref()
        .map(|s| s.status(whalebox::guard::landlock::Layer::Server));
    let zsh = if env.policy.is_some() {
        match env.gated_shell() {
            Ok(g) => json!({"found": true, "zsh": g.zsh, "gate": g.gate}),
            Err(why) => json!({"found": false, "why": why}),
        }
    } else {
        json!({"found": false, "why": "the exec boundary is off (or the shell group is)"})
    };
    let kernel_gate = match env.kernel_gate() {
        Ok(()) => json!({"works": true}),
        Err(why) => json!({"works": false, "why": why}),
    };
    let net = &env.profile.network;
    let fence = env.network();
    let network = match &fence {
        Ok(Some(f)) => json!({
            "mode": net.mode,
            "enforcement": f.enforcement(),
            "summary": f.enforcement().describe(),
            "still_open": f.enforcement().still_open(),
            "allow_domains": net.allow_domains,
            "deny_domains": net.deny_domains,
            "on_new_domain": net.on_new_domain,
            "ports": net.ports,
        }),
        Ok(None) => json!({"mode": net.mode}),
        Err(why) => json!({"mode": net.mode, "error": why}),
    };
    // Read, never made: the doctor writes nothing.
    let kept = |dir: &std::path::Path| {
        std::fs::read_dir(dir.join("records"))
            .map(|l| {
                l.flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                    .count()
            })
            .unwrap_or(0)
    };
    let checkpoints = match &env.checkpoints {
        None => json!({"on": false}),
        Some(c) => json!({
            "on": true,
            "store": c.dir(),
            "changes_found_by": whalebox::checkpoint::server_method(&env.profile),
            "checkpoints": kept(c.dir()),
            "exclude": env.profile.checkpoints.exclude,
        }),
    };
    let report = json!({
        "checkpoints": checkpoints,
        "network": network,
        "profile": env.profile.source_name(),
        "workspace": env.guard.workspace(),
        "landlock": landlock,
        "landlock_server": server,
        "private_tmp": env.private.tmp,
        "exec_boundary": env.profile.shell.exec_boundary,
        "gated_zsh": zsh,
        "kernel_exec_gate": kernel_gate,
        "policy": env.profile.policy.as_ref().map(|p| p.display().to_string())
            .unwrap_or_else(|| "embedded default".into()),
        "presets": env.profile.landlock.presets,
        "git": env.profile.git,
        "presets_auto": env.profile.landlock.presets_auto.as_ref().map(|found| {
            found.iter().map(|(p, marker)| json!({"preset": p, "marker": marker})).collect::<Vec<_>>()
        }),
        "preset_paths": env.profile.landlock.preset_paths,
    });
    if as_json {
        println!("{report:#}");
        return ExitCode::SUCCESS;
    }
    println!("profile:    {}", env.profile.source_name());
    println!("workspace:  {}", env.guard.workspace().display());
    println!("landlock:   {}", landlock.summary());
    if landlock.kernel_abi == 0 {
        println!(
            "            what to do: use Linux 5.13 or newer with Landlock enabled (lsm=...,landlock), \
             or in a container allow the landlock_* syscalls in its seccomp profile"
        );
    }
    println!("tmpdir:     {} (private, 0700)", env.private.tmp.display());
    match &env.checkpoints {
        None => println!("checkpoints: off"),
        Some(c) => println!(
            "checkpoints: {} in {} (private, 0700, reached by the server only); changes found by {}",
            kept(c.dir()),
            c.dir().display(),
            whalebox::checkpoint::server_method(&env.profile)
        ),
    }
    if let Some(linked) = &env.profile.git.linked {
        let root = linked.read_root().display();
        match env.profile.git.main_worktree {
            whalebox::profile::MainWorktree::Read => println!(
                "git:        a linked worktree of {root}: read-only; git may write {} \
                 ([git] main_worktree = \"read\")",
                linked
                    .commit_paths()
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            whalebox::profile::MainWorktree::Off => println!(
                "git:        a linked worktree of {root}, closed ([git] main_worktree = \"off\"): \
                 git fails here"
            ),
        }
    }
    let l = &env.profile.landlock;
    println!("presets:    {}", presets_line(l));
    if !l.presets.is_empty() {
        for p in &l.preset_paths {
            println!(
                "            {:<6} {:<16} {} ({}{})",
                p.preset.name(),
                p.access,
                p.path.display(),
                p.what,
                if p.exists {
                    ""
                } else {
                    "; created when the sandbox is entered"
                }
            );
        }
    }
    match env.gated_shell() {
        Ok(g) if env.policy.is_some() => println!(
            "gated zsh:  {} (exec_boundary = {})",
            g.zsh.display(),
            json!(env.profile.shell.exec_boundary)
        ),
        Ok(_) => println!("gated zsh:  not used (exec boundary off)"),
        Err(why) => println!("gated zsh:  not found: {why}"),
    }
    match env.kernel_gate() {
        Ok(()) => println!(
            "exec gate:  kernel (seccomp + ptrace): every exec of every process of a task is decided{}",
            if env.policy.is_some() {
                ""
            } else {
                " (not used: the exec boundary is off)"
            }
        ),
        Err(why) => {
            println!("exec gate:  the kernel gate cannot run here: {why}");
            println!(
                "            what it means: only the gated zsh's own execs are decided; \
                 exec_boundary = \"required\" refuses to run commands"
            );
            println!(
                "            what to do: allow ptrace and seccomp for whalebox (a container's \
                 seccomp profile, Yama ptrace_scope < 3), on x86_64"
            );
        }
    }
    match &fence {
        Ok(Some(f)) => {
            println!("network:    {}", f.enforcement().describe());
            for open in f.enforcement().still_open() {
                println!("            still open: {open}");
            }
            println!(
                "            allowed: {}; unlisted hosts: {} ([network] on_new_domain); ports: {}",
                if net.allow_domains.is_empty() {
                    "no host".to_string()
                } else {
                    net.allow_domains.join(", ")
                },
                json!(net.on_new_domain).as_str().unwrap_or_default(),
                if net.ports.is_empty() {
                    "any".to_string()
                } else {
                    format!("{:?}", net.ports)
                }
            );
        }
        Ok(None) => println!(
            "network:    off ([network] mode = \"off\"): commands reach the network directly"
        ),
        Err(why) => println!("network:    {why}; commands will not run"),
    }
    ExitCode::SUCCESS
}

/// The presets on and why: listed by the profile, or found by `presets = "auto"`.
fn presets_line(l: &whalebox::profile::LandlockSection) -> String {
    match &l.presets_auto {
        Some(found) if found.is_empty() => {
            "none (auto: no Cargo.toml, package.json, pyproject.toml, requirements*.txt, go.mod \
             or flake.nix at the top of the workspace)"
                .into()
        }
        Some(found) => format!(
            "{} (auto, from the workspace)",
            found
                .iter()
                .map(|(p, marker)| format!("{p} ({marker})"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None if l.presets.is_empty() => "none (the profile lists none)".into(),
        None => l
            .presets
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

fn with_runtime(job: impl std::future::Future<Output = ExitCode>) -> ExitCode {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(job),
        Err(e) => {
            eprintln!("whalebox: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

/// [`setup`], then enter the sandbox (exit 2 when the profile's fences cannot hold).
fn setup_sandboxed(args: &ProfileArgs, session: Session) -> Result<(Registry, Arc<Env>), ExitCode> {
    let (registry, env) = setup(args, session)?;
    Ok((registry, enter_sandbox(env)?))
}

fn enter_sandbox(env: Arc<Env>) -> Result<Arc<Env>, ExitCode> {
    match env.enter_sandbox() {
        Ok(status) => {
            tracing::info!("{}", status.summary());
            Ok(env)
        }
        Err(e) => {
            eprintln!("whalebox: sandbox: {e}");
            Err(ExitCode::from(EXIT_USAGE))
        }
    }
}

fn init_logging(serving: bool) {
    let default = if serving { "whalebox=info" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

/// The commands that need neither the sandbox nor the async runtime.
fn run(command: Command) -> ExitCode {
    // These print for people and pipes: `whalebox man | head` ends quietly, as other
    // command-line tools do, instead of failing on the broken pipe.
    // SAFETY: restoring the default disposition; no handler runs.
    unsafe {
        use nix::sys::signal::{SigHandler, Signal, signal};
        let _ = signal(Signal::SIGPIPE, SigHandler::SigDfl);
    }
    match command {
        Command::Serve { .. }
        | Command::Call { .. }
        | Command::Run { .. }
        | Command::Shell { .. } => unreachable!("handled in main"),
        Command::Doctor { json, profile } => doctor(json, &profile),
        Command::Checkpoints { command } => checkpoints(command),
        Command::Tools { json, profile } => list_tools(json, &profile),
        Command::Policy {
            command: PolicyCommand::Check { profile, command },
        } => policy_check(&profile, &command),
        Command::Policy {
            command: PolicyCommand::Test { files },
        } => policy_test(&files),
        Command::Policy {
            command: PolicyCommand::Schema,
        } => print_json(&whalebox::policy::json_schema()),
        Command::Profile {
            command:
                ProfileCommand::Check {
                    file,
                    mut profile,
                    files_only,
                },
        } => {
            profile.profile = file.or(profile.profile);
            check_profile(profile, files_only)
        }
        Command::Profile {
            command: ProfileCommand::Schema,
        } => print_json(&whalebox::profile::json_schema()),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "whalebox",
                &mut std::io::stdout(),
            );
            ExitCode::SUCCESS
        }
        Command::Man { dir } => man_pages(dir),
    }
}

fn print_json(value: &Value) -> ExitCode {
    match serde_json::to_string_pretty(value) {
        Ok(s) => {
            println!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("whalebox: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `whalebox man`: the top page on stdout, or every command's page into `dir`.
fn man_pages(dir: Option<PathBuf>) -> ExitCode {
    use clap::CommandFactory;
    let command = Cli::command();
    let written = match &dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).and_then(|()| clap_mangen::generate_to(command, dir))
        }
        None => clap_mangen::Man::new(command).render(&mut std::io::stdout()),
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("whalebox: cannot write the man page: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Load the profile and build the registry, or explain on stderr why not.
fn checkpoints(command: CheckpointsCommand) -> ExitCode {
    use whalebox::checkpoint::cli::{self, Request};
    let (request, args) = match command {
        CheckpointsCommand::List { limit, args } => (Request::List { limit }, args),
        CheckpointsCommand::Diff { id, path, args } => (Request::Diff { id, path }, args),
        CheckpointsCommand::Restore {
            id,
            paths,
            dry_run,
            force,
            args,
        } => (
            Request::Restore {
                id,
                paths,
                dry_run,
                force,
            },
            args,
        ),
        CheckpointsCommand::Save { message, args } => (Request::Save { message }, args),
        CheckpointsCommand::Prune { args } => (Request::Prune, args),
    };
    let as_json = args.json;
    let profile = match Profile::load(&args.profile.load_options()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("whalebox: profile error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let answer = cli::run(&profile, request);
    if as_json {
        println!("{}", answer.json);
    } else if answer.ok {
        println!("{}", answer.text);
    } else {
        eprintln!("whalebox: {}", answer.text);
    }
    if answer.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn setup(args: &ProfileArgs, session: Session) -> Result<(Registry, Arc<Env>), ExitCode> {
    setup_with(&args.load_options(), session)
}

fn setup_with(options: &LoadOptions, session: Session) -> Result<(Registry, Arc<Env>), ExitCode> {
    let profile = Profile::load(options).map_err(|e| {
        eprintln!("whalebox: profile error: {e}");
        ExitCode::from(EXIT_USAGE)
    })?;
    for warning in &profile.warnings {
        tracing::warn!("{}: {warning}", profile.source_name());
    }
    if profile.landlock.mode != whalebox::profile::LandlockMode::Off {
        tracing::info!("toolchain presets: {}", presets_line(&profile.landlock));
    }
    tools::build_session(profile, session).map_err(|e| {
        eprintln!("whalebox: profile error: {e}");
        ExitCode::from(EXIT_USAGE)
    })
}

async fn serve(registry: Registry, env: Arc<Env>) -> ExitCode {
    for problem in &env.skills.problems {
        tracing::warn!("skill skipped: {problem}");
    }
    tracing::info!(
        workspace = %env.guard.workspace().display(),
        profile = %env.profile.source_name(),
        tools = registry.names().len(),
        "serving MCP on stdio"
    );
    if let Some(Ok(checkpoints)) = env.checkpoints.as_ref().map(|s| s.get()) {
        // The first pass reads every file; done now, the first call need not wait for it.
        tokio::task::spawn_blocking(move || {
            if let Err(e) = checkpoints.warm() {
                tracing::warn!("checkpoints: the first pass failed: {e}");
            }
        });
    }
    let server = whalebox::mcp::Server::new(Arc::new(registry), &env);
    let served = tokio::select! {
        r = server.serve_stdio() => r.map_err(|e| e.to_string()),
        signal = shutdown_signal() => {
            tracing::info!("{signal}: shutting down");
            Ok(())
        }
    };
    // Every task's processes go with the server (the supervisors' parent-death signal
    // covers a server that is killed outright).
    env.tasks.kill_all();
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("whalebox: {e}");
            ExitCode::FAILURE
        }
    }
}

fn print_envelope(envelope: &Envelope) {
    match serde_json::to_string(envelope) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("whalebox: cannot print the result: {e}"),
    }
}

/// `--args`, `--args-file FILE` or `--args-file -` (stdin); `{}` when none is given.
fn read_args(args: Option<String>, args_file: Option<PathBuf>) -> Result<String, ExitCode> {
    Ok(match (args, args_file) {
        (Some(a), _) => a,
        (None, Some(file)) => {
            let read = if file.as_os_str() == "-" {
                let mut s = String::new();
                std::io::stdin().read_to_string(&mut s).map(|_| s)
            } else {
                std::fs::read_to_string(&file)
            };
            match read {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("whalebox: cannot read {}: {e}", file.display());
                    return Err(ExitCode::from(EXIT_USAGE));
                }
            }
        }
        (None, None) => "{}".to_string(),
    })
}

async fn call(tool: &str, raw: String, registry: Registry, env: Arc<Env>) -> ExitCode {
    let value: Value = match serde_json::from_str(&raw) {
        Ok(v) => v,
        Err(e) => {
            let fields = registry
                .spec(tool)
                .map(|s| {
                    format!(
                        "; {tool} takes an object like {}",
                        example_args(&s.input_schema)
                    )
                })
                .unwrap_or_default();
            let envelope = Envelope::error(
                Code::InvalidInput,
                &format!("--args is not valid JSON: {e}"),
                &format!("pass one JSON object, quoted for the shell{fields}"),
                json!({"tool": tool}),
            );
            print_envelope(&envelope);
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let ask = match whalebox::boundary::tty::terminal_asker() {
        Some(asker) => Asking::Now(asker),
        None => Asking::Nobody("whalebox call without a terminal".into()),
    };
    let ctx = CallContext {
        ask,
        ..CallContext::default()
    };
    let envelope = registry.dispatch(tool, value, ctx).await;
    // A one-shot call is its own session: nothing it started outlives it.
    env.tasks.kill_all();
    print_envelope(&envelope);
    if envelope.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_TOOL_ERROR)
    }
}

/// `{"file_path": "…", "offset": 0}`: the required fields with placeholder values.
fn example_args(schema: &Value) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let props = schema.get("properties").and_then(Value::as_object);
    let mut example = serde_json::Map::new();
    for name in required {
        let ty = props
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("string");
        let placeholder = match ty {
            "integer" | "number" => json!(1),
            "boolean" => json!(true),
            "array" => json!([]),
            "object" => json!({}),
            _ => json!("…"),
        };
        example.insert(name.to_string(), placeholder);
    }
    Value::Object(example).to_string()
}

fn list_tools(as_json: bool, profile: &ProfileArgs) -> ExitCode {
    let (registry, _env) = match setup(profile, Session::OneShot) {
        Ok(ok) => ok,
        Err(code) => return code,
    };
    if as_json {
        let specs: Vec<_> = registry.specs().collect();
        match serde_json::to_string_pretty(&specs) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("whalebox: {e}");
                return ExitCode::FAILURE;
            }
        }
        return ExitCode::SUCCESS;
    }
    for spec in registry.specs() {
        let mode = if spec.annotations.read_only {
            "read-only"
        } else {
            "writes"
        };
        let summary = spec.description.split(". ").next().unwrap_or("");
        println!("{:<14} {:<7} {:<9} {summary}", spec.name, spec.group, mode);
    }
    ExitCode::SUCCESS
}

fn check_profile(args: ProfileArgs, files_only: bool) -> ExitCode {
    let mut profile = match Profile::load(&args.load_options()) {
        Ok(profile) => profile,
        Err(e) => {
            eprintln!("whalebox: profile error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if files_only && profile.landlock.mode == whalebox::profile::LandlockMode::Enforce {
        // Build the session as best-effort so this kernel's ABI is not held against it.
        profile.landlock.mode = whalebox::profile::LandlockMode::BestEffort;
        profile.warnings.push(
            "[landlock] mode = \"enforce\" was not checked against this kernel (--files-only)"
                .into(),
        );
    }
    for warning in &profile.warnings {
        tracing::warn!("{}: {warning}", profile.source_name());
    }
    let (registry, env) = match tools::build_session(profile, Session::OneShot) {
        Ok(ok) => ok,
        Err(e) => {
            eprintln!("whalebox: profile error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let mut report = match serde_json::to_value(&env.profile) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("whalebox: {e}");
            return ExitCode::FAILURE;
        }
    };
    report["enabled_tools"] = json!(registry.names());
    report["available_groups"] = json!(
        tools::GROUPS
            .iter()
            .map(|g| json!({"name": g.name, "tools": g.summary}))
            .collect::<Vec<_>>()
    );
    report["skills"] = json!(
        env.skills
            .skills
            .iter()
            .map(|s| json!({"name": s.name, "description": s.description, "dir": s.dir}))
            .collect::<Vec<_>>()
    );
    report["skill_problems"] = json!(env.skills.problems);
    report["landlock_status"] = json!(env.sandbox_status());
    match serde_json::to_string_pretty(&report) {
        Ok(s) => println!("{s}"),
        Err(e) => {
            eprintln!("whalebox: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// SIGTERM, SIGINT or SIGHUP: the server should stop (and take its tasks with it).
async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).ok();
    let mut int = signal(SignalKind::interrupt()).ok();
    let mut hup = signal(SignalKind::hangup()).ok();
    async fn next(s: &mut Option<tokio::signal::unix::Signal>) {
        match s {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    }
    tokio::select! {
        _ = next(&mut term) => "SIGTERM",
        _ = next(&mut int) => "SIGINT",
        _ = next(&mut hup) => "SIGHUP",
    }
}

fn policy_check(profile: &ProfileArgs, command: &[String]) -> ExitCode {
    let path = match &profile.policy {
        Some(f) => Some(f.clone()),
        None if profile.profile.is_some() => match Profile::load(&profile.load_options()) {
            Ok(p) => p.policy,
            Err(e) => {
                eprintln!("whalebox: profile error: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        },
        None => None,
    };
    let policy = match &path {
        Some(p) => match whalebox::policy::Policy::load(p) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("whalebox: policy error: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        },
        None => whalebox::policy::Policy::embedded(),
    };
    let Some((program, _)) = command.split_first() else {
        eprintln!("whalebox: give the command after --");
        return ExitCode::from(EXIT_USAGE);
    };
    let verdict = policy.evaluate(program, command);
    let report = json!({
        "policy": path.map(|p| p.display().to_string()),
        "command": command,
        "decision": verdict.decision.as_str(),
        "reason": verdict.reason,
        "matched": verdict.matched,
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&report).unwrap_or_default()
    );
    ExitCode::SUCCESS
}

fn policy_test(files: &[PathBuf]) -> ExitCode {
    let mut failed = false;
    for f in files {
        match whalebox::policy::Policy::load(f) {
            Ok(p) => println!("ok   {} ({} rules)", f.display(), p.rules.len()),
            Err(e) => {
                println!("FAIL {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::from(EXIT_TOOL_ERROR)
    } else {
        ExitCode::SUCCESS
    }
}
