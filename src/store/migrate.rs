//! Rewriting a dataset of an older format in the current one, once (`logscope migrate`):
//! every part read back and written again, committed as one new snapshot.

use std::ops::ControlFlow;

use super::manifest::{self, Manifest, PartEntry};
use super::scan::{self, Columns};
use super::writer::StagedWriter;
use super::{Dataset, StoreError};

/// What a migration did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migrated {
    /// The format the dataset had.
    pub from: u32,
    /// The format it has now ([`manifest::VERSION`]).
    pub to: u32,
    /// Parts rewritten.
    pub parts: usize,
    /// Rows rewritten (as many as there were).
    pub rows: u64,
    /// The snapshot committed.
    pub snapshot: u64,
}

impl Dataset {
    /// Rewrites every part of the committed snapshot in the current format, part by
    /// part (each keeps its ingest, its rows and their order) and commits them as one
    /// new snapshot: a reader sees the old dataset or the new one, never a mix.
    /// `None` when the dataset is already in the current format (or empty). Open the
    /// dataset with [`Dataset::open_to_migrate`].
    pub fn migrate(&self, threads: usize) -> Result<Option<Migrated>, StoreError> {
        let (snapshot, old) = self.read()?;
        if snapshot.is_none() || old.version == manifest::VERSION {
            return Ok(None);
        }
        let build = self.begin(old.ingests + 1)?;
        let mut parts: Vec<PartEntry> = Vec::with_capacity(old.parts.len());
        let mut writer: Option<(usize, StagedWriter)> = None;
        let mut failed: Option<StoreError> = None;
        let finish = |(k, w): (usize, StagedWriter), parts: &mut Vec<PartEntry>| {
            w.finish().map(|written| {
                // One old part is one month of one input: one new part, its ingest kept.
                parts.extend(written.into_iter().map(|mut p| {
                    p.ingest = old.parts[k].ingest;
                    p
                }));
            })
        };
        let read = scan::scan(self, Columns::ALL, None, None, |mut fb| {
            if writer.as_ref().is_some_and(|(k, _)| *k != fb.part)
                && let Some(done) = writer.take()
                && let Err(e) = finish(done, &mut parts)
            {
                failed = Some(e);
                return ControlFlow::Break(());
            }
            let (_, w) = writer.get_or_insert_with(|| {
                (
                    fb.part,
                    StagedWriter::new(build.dir.clone(), build.id, fb.part, threads),
                )
            });
            match w.write(&mut fb.batch, &fb.file) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    failed = Some(e);
                    ControlFlow::Break(())
                }
            }
        });
        let result = read.and_then(|read| {
            if let Some(e) = failed {
                return Err(e);
            }
            if let Some(done) = writer.take() {
                finish(done, &mut parts)?;
            }
            let written: u64 = parts.iter().map(|p| p.rows).sum();
            if written != read.rows || read.delivered != read.rows {
                return Err(StoreError::Corrupt {
                    path: self.dir().to_path_buf(),
                    detail: format!(
                        "migrating wrote {written} rows of {}; nothing was committed",
                        read.rows
                    ),
                });
            }
            Ok(written)
        });
        let rows = match result {
            Ok(rows) => rows,
            Err(e) => {
                // Dropping the build removes what was written.
                drop(writer);
                drop(build);
                return Err(e);
            }
        };
        let count = parts.len();
        let manifest = Manifest {
            version: manifest::VERSION,
            ingests: old.ingests,
            sources: old.sources.clone(),
            parts: Vec::new(),
        };
        let snap = self.commit(build, manifest, parts)?;
        Ok(Some(Migrated {
            from: old.version,
            to: manifest::VERSION,
            parts: count,
            rows,
            snapshot: snap.id,
        }))
    }
}
