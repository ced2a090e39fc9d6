//! Compaction: many small parts of one month (a long `ingest --follow` commits one every
//! few seconds) rewritten as one, committed as one new snapshot, so that a reader sees
//! the dataset before or after it, never a mix.
//!
//! Parts are tiered by size: a part of `rows` rows is of level ⌊log₁₆ rows⌋. When a
//! month holds [`FAN_IN`] parts of one level below [`TOP_LEVEL`], they are merged, in
//! manifest order, into one part that takes the place of the first: the rows keep their
//! order, so one followed file reads as one ingest of it would. Each row is rewritten
//! at most once per level (five times in all), and a month keeps fewer than
//! `FAN_IN` parts per level.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use super::manifest::{Manifest, PartEntry};
use super::scan::{self, Columns};
use super::writer::StagedWriter;
use super::{Dataset, StoreError};

/// Parts of one level and month merged at once.
pub const FAN_IN: usize = 16;
/// Parts of this level (16⁵ = 1 Mi rows) and above are never merged.
pub const TOP_LEVEL: u32 = 5;

/// What a compaction did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compacted {
    /// Parts merged.
    pub merged: usize,
    /// Parts they became.
    pub into: usize,
    /// Rows rewritten.
    pub rows: u64,
    /// The snapshot committed.
    pub snapshot: u64,
}

/// A part's size level.
fn level(rows: u64) -> u32 {
    rows.max(1).ilog(16)
}

/// The groups to merge: per month and level below the top, the parts' manifest
/// indexes in order, when there are at least [`FAN_IN`] of them.
pub fn groups(manifest: &Manifest) -> Vec<Vec<usize>> {
    let mut by: BTreeMap<(&str, u32), Vec<usize>> = BTreeMap::new();
    for (i, p) in manifest.parts.iter().enumerate() {
        let l = level(p.rows);
        if l < TOP_LEVEL {
            by.entry((p.month.as_str(), l)).or_default().push(i);
        }
    }
    by.into_values().filter(|g| g.len() >= FAN_IN).collect()
}

impl Dataset {
    /// Merges the small parts of the committed snapshot as [`groups`] chooses them and
    /// commits the result as one snapshot (`None`: nothing to merge). Open the dataset
    /// with [`Dataset::open_write`]: the snapshot cannot change meanwhile.
    pub fn compact(&self, threads: usize) -> Result<Option<Compacted>, StoreError> {
        let (snapshot, old) = self.read()?;
        if snapshot.is_none() {
            return Ok(None);
        }
        let groups = groups(&old);
        if groups.is_empty() {
            return Ok(None);
        }
        let build = self.begin(old.ingests + 1)?;
        let mut merged: Vec<PartEntry> = Vec::new();
        // Each group's first part's file name, and what it became.
        let mut replaced: Vec<(String, Vec<String>)> = Vec::new();
        let mut rows = 0u64;
        for (k, group) in groups.iter().enumerate() {
            let expected: u64 = group.iter().map(|&i| old.parts[i].rows).sum();
            let mut writer = StagedWriter::new(build.dir.clone(), build.id, k, threads);
            let mut failed: Option<StoreError> = None;
            let read = scan::scan_parts(self, Columns::ALL, group, |mut fb| {
                match writer.write(&mut fb.batch, &fb.file) {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(e) => {
                        failed = Some(e);
                        ControlFlow::Break(())
                    }
                }
            })?;
            if let Some(e) = failed {
                return Err(e);
            }
            let written = writer.finish()?;
            let n: u64 = written.iter().map(|p| p.rows).sum();
            if n != expected || read.delivered != expected {
                return Err(StoreError::Corrupt {
                    path: self.dir().to_path_buf(),
                    detail: format!(
                        "compacting wrote {n} rows of {expected}; nothing was committed"
                    ),
                });
            }
            rows += n;
            replaced.push((
                old.parts[group[0]].file.clone(),
                written.iter().map(|p| p.file.clone()).collect(),
            ));
            merged.extend(written);
        }
        let gone: Vec<usize> = groups.iter().flatten().copied().collect();
        let mut order = Vec::with_capacity(old.parts.len());
        for (i, p) in old.parts.iter().enumerate() {
            if let Some((_, new)) = replaced.iter().find(|(first, _)| *first == p.file) {
                order.extend(new.iter().cloned());
            } else if !gone.contains(&i) {
                order.push(p.file.clone());
            }
        }
        let manifest = Manifest {
            version: old.version,
            ingests: old.ingests,
            sources: old.sources.clone(),
            parts: old
                .parts
                .iter()
                .enumerate()
                .filter(|(i, _)| !gone.contains(i))
                .map(|(_, p)| p.clone())
                .collect(),
        };
        let into = merged.len();
        let snap = self.commit_arranged(build, manifest, merged, Some(&order))?;
        Ok(Some(Compacted {
            merged: gone.len(),
            into,
            rows,
            snapshot: snap.id,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(month: &str, rows: u64) -> PartEntry {
        PartEntry {
            file: format!("{month}-{rows}.parquet"),
            month: month.into(),
            rows,
            bytes: 1,
            min_ts_ms: 0,
            max_ts_ms: 0,
            ingest: 1,
            segments: Vec::new(),
            sums: None,
            mediawiki_rows: None,
        }
    }

    #[test]
    fn groups_are_per_month_and_level() {
        // 15 small parts of one month: not yet.
        let mut m = Manifest {
            parts: (0..15).map(|_| part("2026-12", 100)).collect(),
            ..Manifest::default()
        };
        assert!(groups(&m).is_empty());
        // The 16th of the same level: one group, in manifest order; another month's
        // part and a large part are left alone.
        m.parts.push(part("2026-11", 100));
        m.parts.push(part("2026-12", 2_000_000));
        m.parts.push(part("2026-12", 200));
        let g = groups(&m);
        assert_eq!(g, vec![(0..15).chain([17]).collect::<Vec<_>>()]);
        // A part of another level (4096 rows and more) is not in it.
        m.parts.push(part("2026-12", 5000));
        assert_eq!(groups(&m).len(), 1);
        assert_eq!(level(0), 0);
        assert_eq!(level(15), 0);
        assert_eq!(level(16), 1);
        assert_eq!(level(1 << 20), TOP_LEVEL);
    }
}
