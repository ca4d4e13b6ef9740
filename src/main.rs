//! The `odqs` binary: parse the command line, run one sub-command, exit with its status.

use clap::Parser;

/// See the `mimalloc` entry in Cargo.toml: measured faster than the system allocator for
/// index builds and requests.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    odqs::commands::run(odqs::config::Cli::parse())
}
