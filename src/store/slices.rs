//! Which rows of the committed snapshot a read covers (per part, the row groups whose
//! time range meets `--since`/`--until`, cut into slices), and reading those slices on
//! every core while the caller takes the results in slice order.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use polars::prelude::*;

use super::checksum::{self, Sums};
use super::{Dataset, Snapshot, StoreError};

/// Rows read at a time (one row group).
const SLICE_ROWS: usize = 128 * 1024;

/// Rows `offset..offset + len` of one part file.
pub struct Slice {
    /// The part file.
    pub path: PathBuf,
    /// First row.
    pub offset: usize,
    /// Rows.
    pub len: usize,
    /// Its part's index in the manifest's parts.
    pub part: usize,
    /// No row of this slice is older (UTC ms): its part's or segments' recorded start.
    pub min_ts_ms: i64,
    /// No row of a later slice of the plan is older (`i64::MAX` after the last one):
    /// what lets a reader in time order act on the rows before it (the replay).
    pub floor_ms: i64,
}

/// What a read covers.
pub struct Plan {
    /// The slices, in manifest order (parts) and row order.
    pub slices: Vec<Slice>,
    /// Rows of the whole snapshot, time filters or not.
    pub rows: u64,
    /// The manifest's schema version.
    pub version: u32,
    /// The manifest's parts, planned or not ([`Slice::part`] indexes them).
    pub parts: Vec<super::PartEntry>,
    footers: Vec<Footer>,
    /// The snapshot read (its reader lock held by the dataset handle).
    snapshot: Snapshot,
}

/// A planned part's footer, read once per part (not per slice), and its checksums.
struct Footer {
    path: PathBuf,
    md: FileMetadataRef,
    sums: Option<Sums>,
}

impl Plan {
    /// The Parquet footer of a planned part, checked against its checksum.
    pub fn footer(&self, path: &Path) -> Option<FileMetadataRef> {
        self.part(path).map(|f| f.md.clone())
    }

    /// The checksums of a planned part's column chunks (`None`: it has none).
    pub fn sums(&self, path: &Path) -> Option<&Sums> {
        self.part(path).and_then(|f| f.sums.as_ref())
    }

    fn part(&self, path: &Path) -> Option<&Footer> {
        self.footers.iter().find(|f| f.path == path)
    }
}

/// In which order a read takes the parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartOrder {
    /// The manifest's (the order they were ingested in).
    Manifest,
    /// By time, where that changes no tie between rows: when the parts read, ordered
    /// by their first time, are at least a second apart (each part's last time 999 ms
    /// or more before the next one's first, so that no two rows of different parts
    /// can share a decision time, 1-second stamps spread over their second included);
    /// otherwise the manifest's. Rotated files ingested newest first are then read
    /// oldest first, and a reader in time order (the replay) can act on their rows as
    /// they come.
    Time,
}

/// The slices of `ds`'s committed snapshot with rows that may lie in `[since, until)`
/// (ms; unbounded where `None`), parts in `order`; `None` when nothing was ever
/// committed.
pub fn plan(
    ds: &Dataset,
    since: Option<i64>,
    until: Option<i64>,
    order: PartOrder,
) -> Result<Option<Plan>, StoreError> {
    plan_parts(ds, since, until, order, None)
}

/// [`plan`] over the parts whose manifest index is in `only` (every part when `None`).
pub fn plan_parts(
    ds: &Dataset,
    since: Option<i64>,
    until: Option<i64>,
    order: PartOrder,
    only: Option<&[usize]>,
) -> Result<Option<Plan>, StoreError> {
    let (snapshot, manifest) = ds.read()?;
    let Some(snapshot) = snapshot else {
        return Ok(None);
    };
    // Validated (`Manifest::problems`): the sum does not overflow.
    let rows = manifest.rows();
    let lost = |e| ds.explain_loss(&snapshot, e);
    let mut slices = Vec::new();
    let mut footers: Vec<Footer> = Vec::new();
    let overlaps = |lo: i64, hi: i64| since.is_none_or(|s| hi >= s) && until.is_none_or(|u| lo < u);
    let mut parts: Vec<(usize, &super::PartEntry)> = manifest
        .parts
        .iter()
        .enumerate()
        .filter(|(i, p)| {
            overlaps(p.min_ts_ms, p.max_ts_ms) && only.is_none_or(|only| only.contains(i))
        })
        .collect();
    if order == PartOrder::Time {
        let mut by_time = parts.clone();
        by_time.sort_by_key(|(_, p)| p.min_ts_ms);
        let apart = by_time
            .windows(2)
            .all(|w| w[0].1.max_ts_ms.saturating_add(999) < w[1].1.min_ts_ms);
        if apart {
            parts = by_time;
        }
    }
    for (index, part) in parts {
        let path = snapshot.part_path(part);
        check_part(&path, part).map_err(lost)?;
        let ranges = ranges(part, &overlaps);
        if ranges.is_empty() {
            continue;
        }
        // The manifest's row count sizes the slices: check it against the file first.
        let (md, sums) = check_footer(&path, part).map_err(lost)?;
        for (offset, len) in ranges {
            let mut o = offset;
            while o < offset + len {
                let n = SLICE_ROWS.min(offset + len - o);
                slices.push(Slice {
                    path: path.clone(),
                    offset: o,
                    len: n,
                    part: index,
                    min_ts_ms: min_ts(part, o, n),
                    floor_ms: i64::MAX,
                });
                o += n;
            }
        }
        footers.push(Footer { path, md, sums });
    }
    let mut floor = i64::MAX;
    for s in slices.iter_mut().rev() {
        s.floor_ms = floor;
        floor = floor.min(s.min_ts_ms);
    }
    Ok(Some(Plan {
        slices,
        rows,
        version: manifest.version,
        parts: manifest.parts.clone(),
        footers,
        snapshot,
    }))
}

/// Runs `read` over every slice of `plan` on every core (each thread takes every n-th
/// slice, one result in flight per thread besides the one being taken) and hands the
/// results to `take` in slice order, on the calling thread. Stops at the first error
/// (returned) or when `take` breaks.
pub fn in_order<T: Send>(
    ds: &Dataset,
    plan: &Plan,
    read: impl Fn(&Slice) -> Result<T, StoreError> + Sync,
    mut take: impl FnMut(T) -> ControlFlow<()>,
) -> Result<(), StoreError> {
    let work = &plan.slices;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4)
        .min(work.len().max(1));
    let mut senders = Vec::new();
    let mut receivers = Vec::new();
    for _ in 0..threads {
        let (tx, rx) = crossbeam_channel::bounded::<Result<T, StoreError>>(1);
        senders.push(tx);
        receivers.push(rx);
    }
    let read = &read;
    std::thread::scope(|scope| {
        for (d, tx) in senders.into_iter().enumerate() {
            let spawned = std::thread::Builder::new()
                .name(format!("decode-{d}"))
                .spawn_scoped(scope, move || {
                    for slice in work.iter().skip(d).step_by(threads) {
                        let r = read(slice);
                        let failed = r.is_err();
                        if tx.send(r).is_err() || failed {
                            return;
                        }
                    }
                });
            // Without the thread its slices never arrive: fail instead of hanging.
            if let Err(e) = spawned {
                // The threads already started stop at their next send.
                drop(receivers);
                return Err(StoreError::Io {
                    path: ds.dir().to_path_buf(),
                    error: e,
                });
            }
        }
        for k in 0..work.len() {
            // A thread that stopped on an error sent it first; one that is gone
            // without a message cannot happen before its last slice.
            let Ok(msg) = receivers[k % threads].recv() else {
                break;
            };
            let msg = msg.map_err(|e| ds.explain_loss(&plan.snapshot, e))?;
            if take(msg).is_break() {
                // Dropping the receivers stops the threads at their next send.
                drop(receivers);
                return Ok(());
            }
        }
        Ok(())
    })
}

/// The row ranges `(offset, len)` of `part` worth reading: the runs of its segments whose
/// time range `overlaps`, merged; the whole part when it records no segments.
fn ranges(part: &super::PartEntry, overlaps: &dyn Fn(i64, i64) -> bool) -> Vec<(usize, usize)> {
    let whole = vec![(0, part.rows as usize)];
    if !segmented(part) {
        return whole;
    }
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut offset = 0usize;
    for seg in &part.segments {
        let n = seg.rows as usize;
        if overlaps(seg.min_ts_ms, seg.max_ts_ms) {
            match out.last_mut() {
                Some((o, l)) if *o + *l == offset => *l += n,
                _ => out.push((offset, n)),
            }
        }
        offset += n;
    }
    out
}

/// The earliest time recorded for rows `offset..offset + len` of `part`: the least
/// start of the segments they meet, or the part's start when it records none.
fn min_ts(part: &super::PartEntry, offset: usize, len: usize) -> i64 {
    if !segmented(part) {
        return part.min_ts_ms;
    }
    let mut start = 0usize;
    let mut min = i64::MAX;
    for seg in &part.segments {
        let end = start + seg.rows as usize;
        if end > offset && start < offset + len {
            min = min.min(seg.min_ts_ms);
        }
        start = end;
    }
    // Rows outside every segment cannot be: the part's start, to be safe.
    if min == i64::MAX { part.min_ts_ms } else { min }
}

/// Whether `part` records segments that cover exactly its rows (counts that overflow
/// do not).
fn segmented(part: &super::PartEntry) -> bool {
    !part.segments.is_empty()
        && part
            .segments
            .iter()
            .try_fold(0u64, |n, s| n.checked_add(s.rows))
            == Some(part.rows)
}

/// The checksums the manifest records for `part` (at `path`), parsed.
pub fn part_sums(path: &Path, part: &super::PartEntry) -> Result<Option<Sums>, StoreError> {
    part.sums
        .as_ref()
        .map(|s| {
            Sums::parse(s).ok_or_else(|| StoreError::Corrupt {
                path: path.to_path_buf(),
                detail: "the manifest's checksums of this part are not well formed".into(),
            })
        })
        .transpose()
}

/// A part file that is missing, not a plain file (a symbolic link, a FIFO: never
/// opened, a FIFO would block) or not the size the manifest recorded is damage, not an
/// empty part: say so instead of answering from fewer rows.
pub fn check_part(path: &Path, part: &super::PartEntry) -> Result<(), StoreError> {
    match std::fs::symlink_metadata(path) {
        Ok(md) if !md.is_file() => Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: format!(
                "the part is {}, not a plain file as logscope writes them; run `logscope info`",
                file_kind(&md.file_type())
            ),
        }),
        Ok(md) if md.len() == part.bytes => Ok(()),
        Ok(md) => Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: format!(
                "part is {} bytes, the manifest recorded {} (truncated or replaced); run `logscope info`",
                md.len(),
                part.bytes
            ),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: "part file is missing; run `logscope info`".into(),
        }),
        Err(e) => Err(StoreError::Io {
            path: path.to_path_buf(),
            error: e,
        }),
    }
}

/// What kind of file a part that is not a plain file is, for messages.
fn file_kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else {
        "not a plain file"
    }
}

/// The footer of the part at `path` (checked by [`check_part`] first), checked against
/// its checksum, with its parsed checksums; an error where the footer's row count is not
/// the manifest's. Nothing the manifest says about a part's rows is used before this.
pub fn check_footer(
    path: &Path,
    part: &super::PartEntry,
) -> Result<(FileMetadataRef, Option<Sums>), StoreError> {
    let sums = part_sums(path, part)?;
    let md = checksum::checked_footer(path, sums.as_ref())?;
    let rows = md.num_rows as u64;
    if rows != part.rows {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: format!(
                "the part holds {rows} rows by its footer, the manifest recorded {}; run `logscope info`",
                part.rows
            ),
        });
    }
    Ok((md, sums))
}
