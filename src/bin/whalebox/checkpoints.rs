//! `whalebox checkpoints`: list, diff, restore, save and prune the workspace's
//! checkpoints.

use std::process::ExitCode;

use whalebox::profile::Profile;

use crate::{CheckpointsCommand, EXIT_USAGE};

/// `whalebox checkpoints …`: the workspace's checkpoints, for the person.
pub(crate) fn checkpoints(command: CheckpointsCommand) -> ExitCode {
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
