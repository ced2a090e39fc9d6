//! The `logscope` binary: parses the command line and reports errors; the work is in
//! the library.

use clap::Parser;

fn main() {
    // Behave like other Unix tools in a pipeline (`logscope info | head`): a closed
    // pipe ends the process quietly instead of a failed print.
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any other thread exists; restoring
    // the default disposition of SIGPIPE has no other effect on the program.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = logscope::cli::Cli::parse();
    match logscope::cli::run(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            // Error chains quote file names and log text: escape them for the terminal.
            eprintln!(
                "logscope: error: {}",
                logscope_core::escape::message(&format!("{e:#}"))
            );
            // Bad option values exit 2 like clap's own usage errors.
            std::process::exit(logscope::cli::exit_code_of(&e));
        }
    }
}
