//! `logscope info`: what the dataset holds — sources, rows, months, time range, size.

use crate::engine::envelope::{Envelope, Inputs};
use std::collections::BTreeMap;
use std::path::Path;

use anyhow::bail;
use clap::Args;
use logscope_core::escape;
use logscope_core::number::thousands;
use serde::Serialize;

use crate::render::summary::{mb, rfc3339_ms};
use crate::store::slices::{check_part, part_sums};
use crate::store::{Dataset, PartEntry, StoreError, checksum};

/// Arguments of `logscope info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Print the description as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Also read every column chunk of every part and check it against the checksum
    /// its ingest recorded (without it, only each part's size, footer and row count
    /// are checked).
    #[arg(long)]
    pub verify: bool,
}

#[derive(Serialize)]
struct SourceOut {
    names: Vec<String>,
    format: String,
    lines: u64,
    records: u64,
    bad: u64,
    content_bytes: u64,
}

#[derive(Serialize)]
struct MonthOut {
    month: String,
    rows: u64,
    files: usize,
}

#[derive(Serialize)]
struct InfoOut {
    dataset: String,
    /// Dataset format version.
    format: u32,
    /// The directory every reader reads (`DATA/requests`).
    table: String,
    /// Parts that are missing, truncated, unreadable or changed, with why.
    damaged: Vec<String>,
    /// Parts that carry checksums (parts written before logscope took them do not).
    checksummed: usize,
    /// Whether every column chunk of those parts was read and checked (`--verify`).
    verified: bool,
    ingests: u64,
    rows: u64,
    parts: usize,
    bytes_on_disk: u64,
    first: Option<String>,
    last: Option<String>,
    months: Vec<MonthOut>,
    sources: Vec<SourceOut>,
}

/// Runs `logscope info`.
pub fn run(data: &Path, args: InfoArgs) -> anyhow::Result<i32> {
    let ds = Dataset::open_read(data);
    if !ds.exists() {
        bail!(
            "{}: no dataset here yet; run `logscope ingest FILE` first (or point --data / LOGSCOPE_DATA at one)",
            data.display()
        );
    }
    // A manifest that fails validation is described, not refused: what is wrong with
    // it is listed first among the damage.
    let (snapshot, m, problems) = ds.read_unchecked()?;
    let mut months: BTreeMap<String, (u64, usize)> = BTreeMap::new();
    let mut bytes = 0u64;
    let mut damaged: Vec<String> = match &snapshot {
        Some(snap) => {
            let manifest = snap.dir.join(crate::store::MANIFEST);
            problems
                .iter()
                .map(|p| format!("{}: {p}", manifest.display()))
                .collect()
        }
        None => Vec::new(),
    };
    let mut checksummed = 0;
    for p in &m.parts {
        let e = months.entry(p.month.clone()).or_default();
        e.0 = e.0.saturating_add(p.rows);
        e.1 += 1;
        let Some(snap) = &snapshot else { break };
        let path = snap.part_path(p);
        let size = std::fs::symlink_metadata(&path).map_or(0, |md| md.len());
        bytes = bytes.saturating_add(size);
        // Trust nothing: the file must be there, whole, and hold the rows recorded.
        checksummed += usize::from(p.sums.is_some());
        let problem = match check_part(&path, p) {
            Err(e) => Some(e.to_string()),
            Ok(()) => match part_rows(&path, p, args.verify) {
                Ok(n) if n == p.rows => None,
                Ok(n) => Some(format!(
                    "{}: holds {n} rows, the manifest recorded {}",
                    path.display(),
                    p.rows
                )),
                Err(e) => Some(e.to_string()),
            },
        };
        damaged.extend(problem);
    }
    let out = InfoOut {
        dataset: data.display().to_string(),
        format: m.version,
        table: data.join(crate::store::TABLE).display().to_string(),
        damaged,
        checksummed,
        verified: args.verify,
        ingests: m.ingests,
        rows: m.rows(),
        parts: m.parts.len(),
        bytes_on_disk: bytes,
        first: m.parts.iter().map(|p| p.min_ts_ms).min().map(rfc3339_ms),
        last: m.parts.iter().map(|p| p.max_ts_ms).max().map(rfc3339_ms),
        months: months
            .into_iter()
            .map(|(month, (rows, files))| MonthOut { month, rows, files })
            .collect(),
        sources: m
            .sources
            .iter()
            .map(|s| SourceOut {
                names: s.names.clone(),
                format: s.format.clone(),
                lines: s.lines,
                records: s.records,
                bad: s.bad,
                content_bytes: s.content_bytes,
            })
            .collect(),
    };
    let code = if out.damaged.is_empty() {
        super::exit::OK
    } else {
        super::exit::ERROR
    };
    if args.json {
        let mut env = Envelope::plain("info", Inputs::dataset(&out.dataset));
        env.tz = Some("UTC".into());
        println!("{}", escape::json(&serde_json::to_string(&env.wrap(&out))?));
        return Ok(code);
    }
    println!(
        "dataset {} (format {}; readers read {}/*.parquet)",
        escape::terminal_str(&out.dataset, 300),
        out.format,
        escape::terminal_str(&out.table, 300)
    );
    for d in &out.damaged {
        println!("DAMAGED: {}", escape::terminal_str(d, 400));
    }
    println!(
        "{} rows in {} Parquet files ({} on disk), {} ingests",
        thousands(out.rows),
        out.parts,
        mb(out.bytes_on_disk),
        out.ingests
    );
    let checks = if out.verified {
        "every column chunk read and checked"
    } else {
        "footers checked; --verify reads and checks every column chunk"
    };
    println!(
        "checksums: {} of {} parts ({checks})",
        out.checksummed, out.parts
    );
    if let (Some(a), Some(b)) = (&out.first, &out.last) {
        println!("time range {a} .. {b}");
    }
    println!("months:");
    for mo in &out.months {
        println!(
            "  {}  {:>12} rows  {} files",
            mo.month,
            thousands(mo.rows),
            mo.files
        );
    }
    println!("sources ({}):", out.sources.len());
    for s in &out.sources {
        let names: Vec<String> = s
            .names
            .iter()
            .map(|n| escape::terminal_str(n, 80))
            .collect();
        println!(
            "  {}  [{}] {} lines, {} records, {} bad, {}",
            names.join(" = "),
            escape::terminal_str(&s.format, 60),
            thousands(s.lines),
            thousands(s.records),
            thousands(s.bad),
            mb(s.content_bytes)
        );
    }
    if !out.damaged.is_empty() {
        eprintln!(
            "logscope: the dataset is damaged ({} problem(s) above): reports would be wrong, so \
             they refuse it; rebuild the dataset from the logs",
            out.damaged.len()
        );
    }
    Ok(code)
}

/// The rows the part at `path` holds by its footer, checked against its checksums: the
/// footer's, and with `verify` every column chunk's.
fn part_rows(path: &Path, p: &PartEntry, verify: bool) -> Result<u64, StoreError> {
    let sums = part_sums(path, p)?;
    if verify && let Some(sums) = &sums {
        checksum::verify(path, sums, None)?;
    }
    let md = checksum::checked_footer(path, sums.as_ref())?;
    Ok(md.num_rows as u64)
}
