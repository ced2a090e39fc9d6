//! The `logscope` binary: parses the command line and reports errors; the work is in
//! the library.

use clap::Parser;

fn main() {
    let cli = logscope::cli::Cli::parse();
    match logscope::cli::run(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("logscope: error: {e:#}");
            std::process::exit(logscope::cli::exit::ERROR);
        }
    }
}
