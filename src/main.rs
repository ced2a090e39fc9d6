//! The `logscope` binary: parses the command line and reports errors; the work is in
//! the library.

/// The system allocator, counting once `logscope sql` arms its `--memory-limit`.
#[global_allocator]
static ALLOC: logscope::cli::memlimit::Counting = logscope::cli::memlimit::Counting;

fn main() {
    // Behave like other Unix tools in a pipeline (`logscope info | head`): a closed
    // pipe ends the process quietly instead of a failed print.
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any other thread exists; restoring
    // the default disposition of SIGPIPE has no other effect on the program.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // Large buffers (Parquet pages, batch columns) are freed and allocated again for
    // every row group; glibc would return each to the kernel and fault it back in
    // zeroed (a third of a report's time). Keep freed memory for reuse instead: peak
    // memory stays the working set, it is only not given back early.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only tunes the allocator; called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 512 << 20);
    }
    // logscope runs its own threads on every core (parse workers, dataset decoders);
    // polars' pool on every core as well only makes them wait for each other. Half the
    // cores for polars unless the user says otherwise (measured: ingest 5–10 % faster).
    if std::env::var_os("POLARS_MAX_THREADS").is_none() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        // SAFETY: no other thread exists yet to read the environment concurrently.
        unsafe { std::env::set_var("POLARS_MAX_THREADS", (cores / 2).max(1).to_string()) };
    }
    let cli = logscope::cli::parse();
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
