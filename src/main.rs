//! The `odqs` binary: parse the command line, run one sub-command, exit with its status.

/// See the `mimalloc` entry in Cargo.toml: glibc's malloc spends much of an index build
/// consolidating freed chunks.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    use odqs::config::{Cli, Parsed};
    match Cli::read(std::env::args_os()) {
        Parsed::Run(cli) => odqs::commands::run(*cli),
        Parsed::Print(help) => help.exit(),
        Parsed::Mistake(mistake) => {
            eprintln!("odqs: configuration error: {mistake}");
            std::process::ExitCode::from(2)
        }
    }
}
