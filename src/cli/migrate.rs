//! `logscope migrate`: rewrite a dataset of an older format in the current one, once.

use std::path::Path;

use clap::Args;
use logscope_core::escape;
use logscope_core::number::thousands;

use crate::engine::error::exit;
use crate::store::{Dataset, LockWait, manifest};

/// Arguments of `logscope migrate`.
#[derive(Debug, Args)]
#[command(after_help = "\
Every part of the dataset is read back and written again in the current format, then
committed as one new snapshot: readers see the old dataset or the new one, never a mix,
and an interrupted migration leaves the old one as it was. Nothing is read from the logs.

Examples:
  logscope --data /srv/logscope migrate")]
pub struct MigrateArgs {
    /// Threads that encode the rewritten parts (default: one per core).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub threads: usize,
}

/// Runs `logscope migrate`.
pub fn run(data: &Path, args: MigrateArgs) -> anyhow::Result<i32> {
    if !data.join("requests").exists() {
        anyhow::bail!(
            "{}: no dataset here (nothing to migrate); e.g. logscope --data DIR migrate",
            escape::path(data)
        );
    }
    let ds = Dataset::open_to_migrate(data, LockWait::Wait, || {
        eprintln!(
            "waiting for another logscope process writing {} …",
            escape::path(data)
        )
    })?;
    let threads = match args.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    match ds.migrate(threads)? {
        None => println!(
            "{} is already dataset format {}: nothing to do",
            escape::path(data),
            manifest::VERSION
        ),
        Some(m) => println!(
            "migrated {} from dataset format {} to {}: {} parts, {} rows rewritten (snapshot {})",
            escape::path(data),
            m.from,
            m.to,
            thousands(m.parts as u64),
            thousands(m.rows),
            m.snapshot
        ),
    }
    Ok(exit::OK)
}
