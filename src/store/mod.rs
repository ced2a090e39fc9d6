//! The embedded dataset: immutable Parquet part files in snapshot directories, a
//! manifest per snapshot, one symlink that names the committed snapshot, and a lock.
//!
//! Layout (format 2):
//!
//! ```text
//! DATA/.lock                       one writer at a time
//! DATA/requests -> snapshots/0000000007     the committed snapshot: what every reader reads
//! DATA/snapshots/0000000007/_manifest.json  sources, parts, schema version
//! DATA/snapshots/0000000007/2025-09-0000000007-000.parquet   parts (hard links shared
//!                                                          between snapshots)
//! DATA/snapshots/.build-0000000008/          an ingest in progress (never read)
//! ```
//!
//! Commit protocol: an ingest writes its new parts into `.build-N/`, hard-links every
//! part of the committed snapshot beside them, writes `_manifest.json`, fsyncs, renames
//! `.build-N` to `N`, then atomically replaces the `requests` symlink (the commit
//! point). A reader that lists `DATA/requests/*.parquet` — logscope, DuckDB, polars,
//! Spark — therefore sees exactly one committed snapshot, never a part of an
//! uncommitted ingest. On failure the build directory is removed at once; after a
//! crash, the next writer removes it (and any snapshot newer than the committed one).
//! The previous snapshot is kept for readers still reading it; older ones are removed.

pub mod checksum;
pub mod counts;
mod delta;
pub mod frame;
pub mod ingest;
pub mod manifest;
mod pages;
mod rle;
mod rowgroup;
pub mod scan;
pub mod slices;
pub mod sql;
pub mod writer;

use std::fs::{self, File};
use std::path::{Path, PathBuf};

pub use manifest::{CompressedCopy, Manifest, PartEntry, PartSums, SourceEntry};
pub use writer::StagedWriter;

/// The symlink naming the committed snapshot: the table every reader reads.
pub const TABLE: &str = "requests";
/// Directory holding the snapshots.
pub const SNAPSHOTS: &str = "snapshots";
/// Manifest file name inside a snapshot (`_` so that Spark and Hive skip it).
pub const MANIFEST: &str = "_manifest.json";
const BUILD_PREFIX: &str = ".build-";

/// Errors of the dataset layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file system operation failed. (The OS error is part of the message, not a
    /// `source`, so that chains print it once.)
    #[error("{}: {error}", path.display())]
    Io {
        /// The path involved.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The manifest cannot be read, or the dataset's files do not match it.
    #[error("{}: dataset is damaged: {detail}", path.display())]
    Corrupt {
        /// The manifest's or part's path.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// A dataset written in a format this version does not read.
    #[error("{}: {detail}", path.display())]
    Version {
        /// The dataset directory.
        path: PathBuf,
        /// What it is and how to rebuild it.
        detail: String,
    },
    /// Writing or reading Parquet failed.
    #[error("{}: parquet: {detail}", path.display())]
    Parquet {
        /// The file involved.
        path: PathBuf,
        /// polars' message.
        detail: String,
    },
    /// Another process holds the dataset lock and we were told not to wait.
    #[error("{}: another logscope process is writing this dataset", path.display())]
    Locked {
        /// The dataset directory.
        path: PathBuf,
    },
}

pub(crate) fn io_err(p: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |error| StoreError::Io {
        path: p.to_path_buf(),
        error,
    }
}

/// An open dataset directory.
pub struct Dataset {
    dir: PathBuf,
    _lock: Option<File>,
}

/// How to behave when another writer holds the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockWait {
    /// Block until the other writer is done (after `on_wait` is told).
    Wait,
    /// Fail at once with [`StoreError::Locked`].
    Fail,
}

/// A committed snapshot: its number and directory.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// Snapshot number (the ingest that committed it).
    pub id: u64,
    /// Its directory (`DATA/snapshots/NNNNNNNNNN`).
    pub dir: PathBuf,
}

impl Snapshot {
    /// Absolute path of a part file of this snapshot.
    pub fn part_path(&self, part: &PartEntry) -> PathBuf {
        self.dir.join(&part.file)
    }
}

/// An ingest being built: new parts go into `dir`. Dropped without a commit (an
/// error, a full disk), its directory is removed at once.
#[derive(Debug)]
pub struct Build {
    /// The ingest number it will commit as.
    pub id: u64,
    /// Its directory (`DATA/snapshots/.build-NNNNNNNNNN`).
    pub dir: PathBuf,
}

impl Drop for Build {
    fn drop(&mut self) {
        // After a commit the directory has been renamed: nothing to remove.
        if fs::symlink_metadata(&self.dir).is_ok() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

fn snapshot_name(id: u64) -> String {
    format!("{id:010}")
}

impl Dataset {
    /// The dataset directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Opens `dir` for writing: creates it, takes the exclusive lock and cleans up
    /// what an interrupted ingest left behind.
    pub fn open_write(
        dir: &Path,
        wait: LockWait,
        on_wait: impl FnOnce(),
    ) -> Result<Dataset, StoreError> {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        check_not_v1(dir)?;
        let lock_path = dir.join(".lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_err(&lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => match wait {
                LockWait::Fail => {
                    return Err(StoreError::Locked {
                        path: dir.to_path_buf(),
                    });
                }
                LockWait::Wait => {
                    on_wait();
                    lock.lock().map_err(io_err(&lock_path))?;
                }
            },
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err(&lock_path)(e)),
        }
        let ds = Dataset {
            dir: dir.to_path_buf(),
            _lock: Some(lock),
        };
        ds.recover()?;
        let version = ds.manifest()?.version;
        if version != manifest::VERSION {
            return Err(StoreError::Version {
                path: dir.to_path_buf(),
                detail: format!(
                    "this dataset is format {version}, which this logscope reads but does not add to \
                     (format {} stores text unambiguously); ingest into a new directory \
                     (`logscope --data NEW ingest FILE…`), then replace this one with it",
                    manifest::VERSION
                ),
            });
        }
        Ok(ds)
    }

    /// Opens `dir` for reading (no lock: readers see the last committed snapshot).
    pub fn open_read(dir: &Path) -> Dataset {
        Dataset {
            dir: dir.to_path_buf(),
            _lock: None,
        }
    }

    /// Whether the directory holds a dataset (of any format: reading an old one
    /// fails with a message saying how to rebuild it).
    pub fn exists(&self) -> bool {
        fs::symlink_metadata(self.dir.join(TABLE)).is_ok()
            || self.dir.join("manifest.json").exists()
    }

    /// The committed snapshot, or `None` before the first commit.
    pub fn snapshot(&self) -> Result<Option<Snapshot>, StoreError> {
        check_not_v1(&self.dir)?;
        let link = self.dir.join(TABLE);
        let target = match fs::read_link(&link) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(&link)(e)),
        };
        let corrupt = |detail: String| StoreError::Corrupt {
            path: link.clone(),
            detail,
        };
        let mut comps = target.components();
        let ok_prefix =
            matches!(comps.next(), Some(std::path::Component::Normal(s)) if s == SNAPSHOTS);
        let id = match (ok_prefix, comps.next(), comps.next()) {
            (true, Some(std::path::Component::Normal(name)), None) => {
                name.to_str().and_then(|n| n.parse::<u64>().ok())
            }
            _ => None,
        };
        let Some(id) = id else {
            return Err(corrupt(format!(
                "{TABLE} points to {}, not to {SNAPSHOTS}/NNNNNNNNNN",
                target.display()
            )));
        };
        Ok(Some(Snapshot {
            id,
            dir: self.dir.join(SNAPSHOTS).join(snapshot_name(id)),
        }))
    }

    /// The committed manifest (an empty one before the first commit).
    pub fn manifest(&self) -> Result<Manifest, StoreError> {
        Ok(self.read()?.1)
    }

    /// The committed snapshot and its manifest, read together (resolve the snapshot
    /// once, then read every part through it, so a concurrent commit is not seen).
    pub fn read(&self) -> Result<(Option<Snapshot>, Manifest), StoreError> {
        match self.snapshot()? {
            Some(s) => {
                let m = Manifest::load(&s.dir)?;
                Ok((Some(s), m))
            }
            None => Ok((None, Manifest::empty())),
        }
    }

    /// Starts building ingest `id`: an empty build directory for its parts.
    pub fn begin(&self, id: u64) -> Result<Build, StoreError> {
        let snaps = self.dir.join(SNAPSHOTS);
        fs::create_dir_all(&snaps).map_err(io_err(&snaps))?;
        let dir = snaps.join(format!("{BUILD_PREFIX}{}", snapshot_name(id)));
        if fs::symlink_metadata(&dir).is_ok() {
            fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
        }
        fs::create_dir(&dir).map_err(io_err(&dir))?;
        Ok(Build { id, dir })
    }

    /// Commits a build: links the committed parts beside the new ones, writes the
    /// manifest, and switches the `requests` symlink to the new snapshot (the commit
    /// point). On any error the build directory is removed and the committed snapshot
    /// stays as it was.
    pub fn commit(
        &self,
        build: Build,
        mut manifest: Manifest,
        parts: Vec<PartEntry>,
    ) -> Result<Snapshot, StoreError> {
        let result = (|| {
            failpoint("commit-start");
            let current = self.snapshot()?;
            if let Some(cur) = &current {
                for p in &manifest.parts {
                    let from = cur.part_path(p);
                    let to = build.dir.join(&p.file);
                    if fs::hard_link(&from, &to).is_err() {
                        // A file system without hard links: copy (same bytes).
                        fs::copy(&from, &to).map_err(io_err(&to))?;
                    }
                }
            }
            failpoint("after-links");
            manifest.ingests = build.id;
            manifest.parts.extend(parts);
            manifest.save(&build.dir)?;
            sync_dir(&build.dir)?;
            failpoint("after-manifest");
            let snaps = self.dir.join(SNAPSHOTS);
            let name = snapshot_name(build.id);
            let final_dir = snaps.join(&name);
            if fs::symlink_metadata(&final_dir).is_ok() {
                fs::remove_dir_all(&final_dir).map_err(io_err(&final_dir))?;
            }
            fs::rename(&build.dir, &final_dir).map_err(io_err(&final_dir))?;
            sync_dir(&snaps)?;
            failpoint("after-rename");
            // The commit point: replace the symlink atomically.
            let tmp = self.dir.join(format!(".{TABLE}.tmp"));
            let _ = fs::remove_file(&tmp);
            std::os::unix::fs::symlink(Path::new(SNAPSHOTS).join(&name), &tmp)
                .map_err(io_err(&tmp))?;
            if let Err(e) = fs::rename(&tmp, self.dir.join(TABLE)) {
                let _ = fs::remove_file(&tmp);
                let _ = fs::remove_dir_all(&final_dir);
                return Err(io_err(&self.dir.join(TABLE))(e));
            }
            sync_dir(&self.dir)?;
            failpoint("after-switch");
            Ok(Snapshot {
                id: build.id,
                dir: final_dir,
            })
        })();
        // On error, dropping `build` removes its directory.
        drop(build);
        let snap = result?;
        // Best effort: drop snapshots older than the previous one.
        let _ = self.collect_garbage(snap.id);
        Ok(snap)
    }

    /// Drops a build without committing anything.
    pub fn discard(&self, build: Build) -> Result<(), StoreError> {
        let dir = build.dir.clone();
        drop(build);
        if fs::symlink_metadata(&dir).is_ok() {
            return Err(StoreError::Io {
                path: dir,
                error: std::io::Error::other("could not remove the build directory"),
            });
        }
        Ok(())
    }

    /// Removes snapshot directories that no reader can reach any more: build
    /// directories, snapshots newer than the committed one (a crash between their
    /// rename and the commit), and snapshots older than the one before `current`.
    fn collect_garbage(&self, current: u64) -> Result<(), StoreError> {
        let snaps = self.dir.join(SNAPSHOTS);
        let rd = match fs::read_dir(&snaps) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_err(&snaps)(e)),
        };
        let mut builds = Vec::new();
        let mut ids = Vec::new();
        for entry in rd {
            let entry = entry.map_err(io_err(&snaps))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(BUILD_PREFIX) {
                builds.push(entry.path());
            } else if let Ok(id) = name.parse::<u64>() {
                ids.push((id, entry.path()));
            }
        }
        // Keep the committed snapshot and the one before it (a reader may still be
        // reading it); everything else is unreachable.
        let previous = ids
            .iter()
            .map(|(id, _)| *id)
            .filter(|&id| id < current)
            .max();
        for (id, path) in ids {
            if id != current && Some(id) != previous {
                builds.push(path);
            }
        }
        for path in builds {
            fs::remove_dir_all(&path).map_err(io_err(&path))?;
        }
        let tmp = self.dir.join(format!(".{TABLE}.tmp"));
        if fs::symlink_metadata(&tmp).is_ok() {
            fs::remove_file(&tmp).map_err(io_err(&tmp))?;
        }
        Ok(())
    }

    /// Removes what an interrupted ingest left behind.
    fn recover(&self) -> Result<(), StoreError> {
        let current = self.snapshot()?.map_or(0, |s| s.id);
        self.collect_garbage(current)
    }
}

/// A dataset of format 1 (`manifest.json` and `month=…/` at the top) is refused with
/// a message saying how to rebuild it.
fn check_not_v1(dir: &Path) -> Result<(), StoreError> {
    if dir.join("manifest.json").exists() && fs::symlink_metadata(dir.join(TABLE)).is_err() {
        return Err(StoreError::Version {
            path: dir.to_path_buf(),
            detail: format!(
                "this dataset was written by an older logscope (dataset format 1); this one reads format {}. \
                 Rebuild it from the logs: move the directory away and run `logscope ingest FILE…` again \
                 (the logs are the source of truth; nothing is lost)",
                manifest::VERSION
            ),
        });
    }
    Ok(())
}

/// Fault injection for the crash tests: `LOGSCOPE_FAILPOINT=NAME` aborts the process
/// (no destructors, no clean-up: as `kill -9` would) when the commit reaches step NAME
/// (`commit-start`, `after-links`, `after-manifest`, `after-rename`, `after-switch`).
fn failpoint(name: &str) {
    if std::env::var_os("LOGSCOPE_FAILPOINT").is_some_and(|v| v == name) {
        std::process::abort();
    }
}

/// fsyncs a directory so renames in it are durable.
pub fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(io_err(dir))
}
