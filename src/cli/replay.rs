//! `logscope replay` (being built in this session; replaced by the real command).

use std::path::Path;

/// Arguments of `logscope replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {}

/// Runs `logscope replay`.
pub fn run(_data: &Path, _args: ReplayArgs) -> anyhow::Result<i32> {
    anyhow::bail!("logscope replay is not available yet")
}
