//! Command-line interface: argument definitions and dispatch to the commands.

pub mod agents;
pub mod availability;
pub mod block;
pub mod capacity;
pub mod concentration;
pub mod db_file;
pub mod detect;
pub mod diff;
pub mod filters;
pub mod fingerprint;
pub mod heavy;
pub mod info;
pub mod ingest;
pub mod inputs;
pub mod memlimit;
pub mod migrate;
pub mod output;
pub mod replay;
pub mod report;
pub mod rows;
pub mod rules;
pub mod sql;
pub mod sqlgen;
pub mod timeline;
pub mod top;
pub mod watch;

use std::path::PathBuf;

use clap::{CommandFactory, Parser, Subcommand};

pub use crate::engine::error::{UsageError, exit, usage_error};

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

    /// Colour on the terminal: auto (only when standard output is a terminal and NO_COLOR
    /// is unset or empty), always (also when piped or with --out), never.
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "WHEN",
        default_value_t = output::ColorChoice::Auto
    )]
    pub color: output::ColorChoice,

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
    /// Rewrite a dataset of an older format in the current one (once, atomically).
    Migrate(migrate::MigrateArgs),
    /// Heavy requests per time bucket: requests, distinct IPs and prefixes, top prefix.
    Heavy(heavy::HeavyArgs),
    /// What the backend could take: held and stall load per window, peak throughput.
    Capacity(capacity::CapacityArgs),
    /// How concentrated the traffic is: top prefixes or IPs, shares, HHI, Gini.
    Concentration(concentration::ConcentrationArgs),
    /// User-agent mix (families, devices, declared bots) of a selection vs all traffic.
    Agents(agents::AgentsArgs),
    /// The smallest set of networks that stops a storm without hurting people.
    Block(block::BlockArgs),
    /// What changed: a baseline period against the incident, ranked by added load.
    Diff(diff::DiffArgs),
    /// Storm signals per network, AS or agent: pages without assets, URL uniqueness …
    Fingerprint(fingerprint::FingerprintArgs),
    /// Availability per month/week/day of a probe URL, gaps counted as downtime.
    Availability(availability::AvailabilityArgs),
    /// Replay the log through candidate rate limiters: what would each have refused?
    Replay(replay::ReplayArgs),
    /// The incident post: findings, charts and tables in one HTML page and Markdown file.
    Report(report::ReportArgs),
    /// Top paths, statuses, referers, agents, addresses, prefixes, hosts or methods.
    Top(top::TopArgs),
    /// What one address or network did: requests over time, paths, statuses, agents.
    Timeline(timeline::TimelineArgs),
    /// Live dashboard: load against capacity, top networks, limits, alerts (--once: one frame).
    Watch(watch::WatchArgs),
    /// SQL over the dataset: table `requests`, view `requests_x` with the reports' classes.
    Sql(sql::SqlArgs),
    /// Which classification rules are in effect; `--example` prints a starter file.
    Rules(rules::RulesArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_help = "\
Examples:
  logscope completions bash > ~/.local/share/bash-completion/completions/logscope
  logscope completions zsh  > ~/.zfunc/_logscope        # with fpath+=(~/.zfunc) in .zshrc
  logscope completions fish > ~/.config/fish/completions/logscope.fish")]
    Completions {
        /// The shell.
        #[arg(value_enum, value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) of logscope, or of one of its commands.
    #[command(after_help = "\
Examples:
  logscope man | man -l -                                 # read it now
  logscope man > ~/.local/share/man/man1/logscope.1       # install it
  logscope man heavy > ~/.local/share/man/man1/logscope-heavy.1")]
    Man {
        /// A command (heavy, replay, …): its own page instead of logscope's.
        #[arg(value_name = "COMMAND")]
        command: Option<String>,
    },
}

/// Parses the command line, as `Cli::parse` does (clap's own message and exit status
/// 2 on a usage error), with a pointer when a log format is given to a report's
/// output `--format` (`top --format combined FILE`).
pub fn parse() -> Cli {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let e = match Cli::try_parse() {
        Ok(cli) => return cli,
        Err(e) => e,
    };
    let value = match (
        e.get(ContextKind::InvalidArg),
        e.get(ContextKind::InvalidValue),
    ) {
        (Some(ContextValue::String(arg)), Some(ContextValue::String(v)))
            if e.kind() == ErrorKind::InvalidValue && arg.starts_with("--format") =>
        {
            Some(v.clone())
        }
        _ => None,
    };
    match value {
        Some(v) if logscope_core::parse::Format::from_name(&v).is_ok() => {
            let _ = e.print();
            eprintln!(
                "\n  tip: --format is the report's output format (text, md, csv, json, html); \
                 the log's format is --input-format {}",
                logscope_core::escape::terminal_str(&v, 60)
            );
            std::process::exit(exit::USAGE);
        }
        _ => e.exit(),
    }
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
    output::set_color_choice(cli.color);
    let data = data_dir(&cli.data);
    match cli.command {
        Command::Ingest(args) => ingest::run(&data, args),
        Command::Detect(args) => detect::run(args),
        Command::Info(args) => info::run(&data, args),
        Command::Migrate(args) => migrate::run(&data, args),
        Command::Heavy(args) => heavy::run(&data, args),
        Command::Capacity(args) => capacity::run(&data, args),
        Command::Concentration(args) => concentration::run(&data, args),
        Command::Agents(args) => agents::run(&data, args),
        Command::Block(args) => block::run(&data, args),
        Command::Diff(args) => diff::run(&data, args),
        Command::Fingerprint(args) => fingerprint::run(&data, args),
        Command::Availability(args) => availability::run(&data, args),
        Command::Replay(args) => replay::run(&data, args),
        Command::Report(args) => report::run(&data, args),
        Command::Top(args) => top::run(&data, args),
        Command::Timeline(args) => timeline::run(&data, args),
        Command::Watch(args) => watch::run(&data, args),
        Command::Sql(args) => sql::run(&data, args),
        Command::Rules(args) => rules::run(args),
        Command::Completions { shell } => {
            let mut cmd = Cli::command();
            let mut out = std::io::stdout().lock();
            clap_complete::generate(shell, &mut cmd, "logscope", &mut out);
            std::io::Write::flush(&mut out)?;
            Ok(exit::OK)
        }
        Command::Man { command } => man(command.as_deref()),
    }
}

/// `logscope man [COMMAND]`: the roff page of logscope or of one command.
fn man(command: Option<&str>) -> anyhow::Result<i32> {
    let mut root = Cli::command();
    // Propagate the global options (--data, --color) and the version into the commands.
    root.build();
    let page = match command {
        None => root,
        Some(name) => {
            let Some(sub) = root.find_subcommand(name) else {
                let names: Vec<&str> = root
                    .get_subcommands()
                    .map(|c| c.get_name())
                    .filter(|n| *n != "help")
                    .collect();
                return Err(usage_error(format!(
                    "man: no command {}; one of: {} (e.g. logscope man heavy)",
                    logscope_core::escape::terminal_str(name, 60),
                    names.join(", ")
                )));
            };
            sub.clone()
        }
    };
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(page).render(&mut out)?;
    std::io::Write::flush(&mut out)?;
    Ok(exit::OK)
}
