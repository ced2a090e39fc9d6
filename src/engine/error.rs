//! The errors and exit statuses the engine and the commands share: a [`UsageError`]
//! (a bad option value, exit 2) and the [`exit`] statuses a run can call for.

/// Exit codes, as documented in docs/ingest.md ("Exit status").
pub mod exit {
    /// Everything worked.
    pub const OK: i32 = 0;
    /// An error: nothing was written.
    pub const ERROR: i32 = 1;
    /// Bad usage (flags, arguments).
    pub const USAGE: i32 = 2;
    /// Done, but some input had more bad lines than `--max-bad` allows.
    pub const TOO_MANY_BAD: i32 = 3;
    /// Done, but a compressed input was truncated or corrupt (lines before the damage kept).
    pub const DAMAGED: i32 = 4;
    /// `watch`: an alert fired (`--once`: one is firing in the frame; `--backtest`: one
    /// fired in the period; live: the first one, with `--exit-on-alert`).
    pub const ALERT: i32 = 5;
}

/// A bad option value found after clap parsed the command line (a time zone, a time, a
/// network, a status set …): `main` prints it like any error but exits with
/// [`exit::USAGE`], as clap does for the values it checks itself. The message names the
/// flag and gives a valid example.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// A [`UsageError`] as an `anyhow::Error`: `return Err(usage_error(format!(…)))`.
pub fn usage_error(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}
