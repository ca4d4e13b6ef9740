//! The `odqs` binary: parse the command line, run one sub-command, exit with its status.

use clap::Parser;

fn main() -> std::process::ExitCode {
    odqs::commands::run(odqs::config::Cli::parse())
}
