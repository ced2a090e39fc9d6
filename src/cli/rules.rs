//! `logscope rules`: which classification rules are in effect, and a commented starter
//! file (`--example`) to write your own.

use clap::Args;
use logscope_core::escape;

use super::filters::{DEFAULT_RULES, rules_lookup};
use crate::engine::error::exit;

/// The annotated rules file: every key, its default, and examples.
pub const EXAMPLE: &str = include_str!("../../fixtures/logscope.toml");

/// Arguments of `logscope rules`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  logscope rules                                  # which rules file the reports read
  logscope rules --example > logscope.toml        # a commented starter file, then edit it
  logscope rules --example > ~/.config/logscope/logscope.toml

Rules classify requests when a report runs (heavy classes, identity, agents, prefixes,
trusted proxies), so editing them needs no re-ingest.")]
pub struct RulesArgs {
    /// Print a commented starter rules file (every key, its default, examples).
    #[arg(long)]
    pub example: bool,
}

/// Runs `logscope rules`.
pub fn run(args: RulesArgs) -> anyhow::Result<i32> {
    if args.example {
        print!("{EXAMPLE}");
        return Ok(exit::OK);
    }
    match rules_lookup()? {
        Some(p) => println!(
            "rules: {} (found without --rules; --rules FILE overrides it)",
            escape::path(&p)
        ),
        None => println!(
            "rules: the built-in ones (no $LOGSCOPE_CONFIG, ./{DEFAULT_RULES} or \
             ~/.config/logscope/{DEFAULT_RULES}); `logscope rules --example > {DEFAULT_RULES}` \
             writes a commented starter file"
        ),
    }
    Ok(exit::OK)
}
