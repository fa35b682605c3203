//! The `whalebox` command line: its shape (the clap definitions) and the dispatch; each
//! command lives in its own module (`serve`, `call`, `run`, `doctor`, `checkpoints`,
//! `tool_list`, `profile`, `policy`, `man`), and `setup` holds what they share: loading
//! the profile, building the session, entering the sandbox.
//!
//! Exit codes: 0 success; 1 the tool answered with an error; 2 usage or profile errors
//! (and arguments that are not JSON).

mod call;
mod checkpoints;
mod doctor;
mod man;
mod policy;
mod profile;
mod run;
mod serve;
mod setup;
mod tool_list;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use whalebox::profile::{LoadOptions, RelativeTo};
use whalebox::tools::Session;

use call::{call, read_args};
use run::run_sandboxed;
use serve::{serve, serve_http};
use setup::{init_logging, print_json, setup_sandboxed, with_runtime};

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

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the enabled tools over MCP on stdin/stdout (logs go to stderr), or over
    /// Streamable HTTP with `--http`.
    #[command(after_help = "Examples:\n  \
        whalebox serve\n  \
        whalebox serve --http 127.0.0.1:8080\n  \
        whalebox serve --http 0.0.0.0:8080 --profile prod.toml --log-format json   # [http] tokens_file or [http.oauth] required\n\n\
        Over HTTP: MCP at /mcp, GET /healthz, /readyz, /metrics (Prometheus); SIGTERM lets calls \
        finish within [http] grace_period_s.")]
    Serve {
        /// Serve MCP over Streamable HTTP on ADDR (IP:PORT; alone: the profile's
        /// `[http] listen`, by default 127.0.0.1:8080).
        #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "")]
        http: Option<String>,
        /// Logs as text lines or as JSON objects (one per line, for log collectors).
        #[arg(long, value_enum, default_value = "text")]
        log_format: LogFormat,
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
    // The task supervisor (and the zygote it is forked from) are hidden modes of this
    // binary, dispatched before clap so they start fast and their arguments are never
    // parsed as whalebox options.
    let mut argv = std::env::args_os().skip(1);
    match argv.next().as_deref().and_then(|a| a.to_str()) {
        Some(whalebox::shell::supervisor::SUBCOMMAND) => {
            whalebox::shell::supervisor::main(argv.collect())
        }
        Some(whalebox::shell::zygote::SUBCOMMAND) => whalebox::shell::zygote::main(argv.collect()),
        Some(whalebox::shell::terminal::SUBCOMMAND) => {
            whalebox::shell::terminal::main(argv.collect())
        }
        Some(whalebox::net::netns::PROBE_SUBCOMMAND) => {
            whalebox::net::netns::probe_main(argv.collect())
        }
        Some(whalebox::guard::spaces::SUBCOMMAND) => whalebox::guard::spaces::main(argv.collect()),
        _ => {}
    }
    let cli = Cli::parse();
    if let Err(message) = enough_descriptors() {
        eprintln!("whalebox: {message}");
        return ExitCode::from(EXIT_USAGE);
    }
    let (serving, format) = match &cli.command {
        Command::Serve { log_format, .. } => (true, *log_format),
        _ => (false, LogFormat::Text),
    };
    init_logging(serving, format);
    let code = main_command(cli.command);
    // The server's cgroup directories for its tasks, if it made them (each task's is
    // gone with the task).
    whalebox::guard::limits::cgroup::Cgroups::release();
    code
}

/// Fewer open files than this and start-up itself fails (the async runtime's signal
/// pipe, the logs, the sandbox's probes), some of it by panicking.
const FEWEST_DESCRIPTORS: u64 = 16;

/// Refuse to start, saying why, under a `ulimit -n` too small to start with.
fn enough_descriptors() -> Result<(), String> {
    let (soft, _hard) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map_err(|e| format!("cannot read the open-file limit: {e}"))?;
    if soft < FEWEST_DESCRIPTORS {
        return Err(format!(
            "{soft} open files allowed (ulimit -n); whalebox needs at least \
             {FEWEST_DESCRIPTORS} to start: raise the limit (ulimit -n 1024) and start it again"
        ));
    }
    Ok(())
}

fn main_command(command: Command) -> ExitCode {
    // Serving and calling tools happen inside the sandbox, which is entered here, on the
    // main thread, before the async runtime starts its threads (Landlock restricts the
    // calling thread and what it starts afterwards).
    match command {
        Command::Serve {
            profile,
            http,
            log_format: _,
        } => {
            let (registry, env) = match setup_sandboxed(&profile, Session::Server, http.is_some()) {
                Ok(ok) => ok,
                Err(code) => return code,
            };
            match http {
                None => with_runtime(serve(registry, env)),
                Some(addr) => with_runtime(serve_http(registry, env, addr)),
            }
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
            let (registry, env) = match setup_sandboxed(&profile, Session::OneShot, false) {
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
        Command::Doctor { json, profile } => doctor::doctor(json, &profile),
        Command::Checkpoints { command } => checkpoints::checkpoints(command),
        Command::Tools { json, profile } => tool_list::list_tools(json, &profile),
        Command::Policy {
            command: PolicyCommand::Check { profile, command },
        } => policy::policy_check(&profile, &command),
        Command::Policy {
            command: PolicyCommand::Test { files },
        } => policy::policy_test(&files),
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
            profile::check_profile(profile, files_only)
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
        Command::Man { dir } => man::man_pages(dir),
    }
}
