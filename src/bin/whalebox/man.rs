//! `whalebox man`: the man pages, from the clap definitions.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::Cli;

/// `whalebox man`: the top page on stdout, or every command's page into `dir`.
pub(crate) fn man_pages(dir: Option<PathBuf>) -> ExitCode {
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
