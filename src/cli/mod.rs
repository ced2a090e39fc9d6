//! Command-line interface: argument definitions and dispatch to the commands.

pub mod agents;
pub mod availability;
pub mod concentration;
pub mod detect;
pub mod filters;
pub mod heavy;
pub mod info;
pub mod ingest;
pub mod inputs;
pub mod output;
pub mod replay;
pub mod rows;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Exit codes, as documented in README.md.
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

/// The exit code for an error returned by [`run`]: [`exit::USAGE`] when a
/// [`UsageError`] is anywhere in its chain, else [`exit::ERROR`].
pub fn exit_code_of(e: &anyhow::Error) -> i32 {
    if e.chain().any(|c| c.is::<UsageError>()) {
        exit::USAGE
    } else {
        exit::ERROR
    }
}

/// logscope: access-log analysis and forensics.
///
/// Ingest web-server logs into a local Parquet dataset, then ask what happened, who it
/// was, whether you were up, and what a rate limit would have done.
#[derive(Debug, Parser)]
#[command(
    name = "logscope",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// Dataset directory [default: $XDG_DATA_HOME/logscope or ~/.local/share/logscope].
    #[arg(long, global = true, env = "LOGSCOPE_DATA", value_name = "DIR")]
    pub data: Option<PathBuf>,

    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parse logs and add them to the dataset (idempotent: nothing is added twice).
    Ingest(ingest::IngestArgs),
    /// Show which format a log file is in, and how sure the detection is.
    Detect(detect::DetectArgs),
    /// Describe the dataset: sources, rows, time range, months, size on disk.
    Info(info::InfoArgs),
    /// Heavy requests per time bucket: requests, distinct IPs and prefixes, top prefix.
    Heavy(heavy::HeavyArgs),
    /// How concentrated the traffic is: top prefixes or IPs, shares, HHI, Gini.
    Concentration(concentration::ConcentrationArgs),
    /// User-agent mix (families, devices, declared bots) of a selection vs all traffic.
    Agents(agents::AgentsArgs),
    /// Availability per month/week/day of a probe URL, gaps counted as downtime.
    Availability(availability::AvailabilityArgs),
    /// Replay the log through candidate rate limiters: what would each have refused?
    Replay(replay::ReplayArgs),
}

/// The dataset directory to use.
pub fn data_dir(cli: &Option<PathBuf>) -> PathBuf {
    if let Some(d) = cli {
        return d.clone();
    }
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("logscope");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(h).join(".local/share/logscope");
    }
    PathBuf::from(".logscope")
}

/// Runs the parsed command line; returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    let data = data_dir(&cli.data);
    match cli.command {
        Command::Ingest(args) => ingest::run(&data, args),
        Command::Detect(args) => detect::run(args),
        Command::Info(args) => info::run(&data, args),
        Command::Heavy(args) => heavy::run(&data, args),
        Command::Concentration(args) => concentration::run(&data, args),
        Command::Agents(args) => agents::run(&data, args),
        Command::Availability(args) => availability::run(&data, args),
        Command::Replay(args) => replay::run(&data, args),
    }
}
