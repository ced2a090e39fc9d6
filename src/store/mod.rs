//! The embedded dataset: immutable Parquet part files in snapshot directories, a
//! manifest per snapshot, one symlink that names the committed snapshot, and a lock.
//!
//! Layout (format 2):
//!
//! ```text
//! DATA/.lock                       one writer at a time
//! DATA/requests -> snapshots/0000000007     the committed snapshot: what every reader reads
//! DATA/snapshots/0000000007/_manifest.json  sources, parts, schema version
//! DATA/snapshots/0000000007/_reader.lock     readers' shared lock (empty)
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
//!
//! Readers: a logscope reader takes a shared `flock` on the `_reader.lock` file of the
//! snapshot it resolved (never waiting: a reader neither blocks a commit nor is blocked
//! by one) and holds it until it is done. Garbage collection removes a superseded
//! snapshot only when it can take that lock exclusively (again without waiting), and
//! only once the snapshot was superseded [`DEFAULT_GRACE`] ago
//! (`LOGSCOPE_SNAPSHOT_GRACE`), for readers that know nothing of logscope (DuckDB,
//! polars). The committed snapshot and the one before it are always kept.
//!
//! Before anything is read from or written into a snapshot its manifest is validated
//! ([`Manifest::problems`]); a writer also checks every part file (a plain file of the
//! recorded size whose footer holds the recorded rows) before it links the parts into
//! the next snapshot, and never copies over an existing file.

pub mod checksum;
pub mod compact;
pub mod counts;
mod delta;
pub mod frame;
pub mod groups;
pub mod ingest;
pub mod manifest;
pub mod migrate;
mod pages;
mod rle;
mod rowgroup;
pub mod scan;
pub mod slices;
pub mod sql;
pub mod sql_time;
pub mod writer;

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

pub use manifest::{CompressedCopy, Manifest, PartEntry, PartSums, SourceEntry};
pub use writer::StagedWriter;

/// The symlink naming the committed snapshot: the table every reader reads.
pub const TABLE: &str = "requests";
/// Directory holding the snapshots.
pub const SNAPSHOTS: &str = "snapshots";
/// Manifest file name inside a snapshot (`_` so that Spark and Hive skip it).
pub const MANIFEST: &str = "_manifest.json";
/// The reader lock inside a snapshot: readers hold a shared `flock` on it, garbage
/// collection needs an exclusive one (`_` so that Spark and Hive skip it; not
/// `*.parquet`, so that globbing readers never see it).
pub const READER_LOCK: &str = "_reader.lock";
const BUILD_PREFIX: &str = ".build-";
/// A snapshot being removed: renamed first (under its exclusive lock), so that no
/// reader can open it by its name any more, then removed.
const GC_PREFIX: &str = ".gc-";
/// How long a superseded snapshot is kept at least, for readers that take no lock
/// (DuckDB, polars, Spark reading `DATA/requests/*.parquet`): 10 minutes.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(600);
/// Times a reader resolves `requests` again when the snapshot it found is being removed.
const PIN_TRIES: usize = 16;

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
    /// The snapshot a reader was reading was removed under it.
    #[error(
        "{}: the dataset's snapshot {id} was removed while this command read it ({why}); run the command again",
        path.display()
    )]
    SnapshotGone {
        /// The dataset directory.
        path: PathBuf,
        /// The snapshot's number.
        id: u64,
        /// How that could happen.
        why: &'static str,
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
    /// A reading handle's reader locks (`None`: a writing handle).
    pins: Option<Pins>,
}

/// Each snapshot a reading handle read, with the lock file it holds a shared lock on
/// (`None`: none could be taken), held until the handle is dropped.
type Pins = Mutex<Vec<(u64, Option<File>)>>;

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
    /// what an interrupted ingest left behind. A dataset of an older format is
    /// refused, with the command that migrates it.
    pub fn open_write(
        dir: &Path,
        wait: LockWait,
        on_wait: impl FnOnce(),
    ) -> Result<Dataset, StoreError> {
        Dataset::open_locked(dir, wait, on_wait, false)
    }

    /// [`Dataset::open_write`] for [`Dataset::migrate`]: a dataset of any format this
    /// logscope reads is opened.
    pub fn open_to_migrate(
        dir: &Path,
        wait: LockWait,
        on_wait: impl FnOnce(),
    ) -> Result<Dataset, StoreError> {
        Dataset::open_locked(dir, wait, on_wait, true)
    }

    fn open_locked(
        dir: &Path,
        wait: LockWait,
        on_wait: impl FnOnce(),
        any_format: bool,
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
            pins: None,
        };
        ds.recover()?;
        let (snapshot, m, problems) = ds.read_unchecked()?;
        let version = m.version;
        if version != manifest::VERSION && !any_format {
            return Err(StoreError::Version {
                path: dir.to_path_buf(),
                detail: format!(
                    "this dataset is format {version}, which this logscope reads but does not add to \
                     (format {} stores text as the server wrote it); rewrite it in format {} once \
                     with `logscope --data {} migrate`, then run this command again",
                    manifest::VERSION,
                    manifest::VERSION,
                    logscope_core::escape::path(dir)
                ),
            });
        }
        if let Some(snapshot) = &snapshot {
            // Nothing is written into a dataset that fails validation: the commit would
            // carry the damage into the next snapshot (or make it worse).
            if !problems.is_empty() {
                return Err(refusal(snapshot, &problems, true));
            }
            for p in &m.parts {
                let path = snapshot.part_path(p);
                slices::check_part(&path, p)?;
                slices::check_footer(&path, p)?;
            }
        }
        Ok(ds)
    }

    /// Opens `dir` for reading: no dataset lock (readers see the last committed
    /// snapshot), but a shared reader lock on each snapshot it reads, held until the
    /// handle is dropped, so that no ingest's garbage collection removes it meanwhile.
    pub fn open_read(dir: &Path) -> Dataset {
        Dataset {
            dir: dir.to_path_buf(),
            _lock: None,
            pins: Some(Mutex::new(Vec::new())),
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
        match fs::symlink_metadata(&link) {
            Ok(md) if md.file_type().is_symlink() => {}
            Ok(md) => return Err(self.not_a_link(&link, &md)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(&link)(e)),
        }
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
    /// once, then read every part through it, so a concurrent commit is not seen). A
    /// reading handle holds the snapshot's reader lock from here on. A manifest that
    /// fails validation ([`Manifest::problems`]) is [`StoreError::Corrupt`].
    pub fn read(&self) -> Result<(Option<Snapshot>, Manifest), StoreError> {
        let (snapshot, m, problems) = self.read_unchecked()?;
        if let Some(s) = &snapshot
            && !problems.is_empty()
        {
            return Err(refusal(s, &problems, false));
        }
        Ok((snapshot, m))
    }

    /// [`Dataset::read`] without refusing a manifest that fails validation: the
    /// snapshot, its manifest, and what is wrong with it (`logscope info` lists it).
    pub fn read_unchecked(&self) -> Result<(Option<Snapshot>, Manifest, Vec<String>), StoreError> {
        let Some(s) = self.resolve()? else {
            return Ok((None, Manifest::empty(), Vec::new()));
        };
        let m = match Manifest::load(&s.dir) {
            Ok(m) => m,
            Err(StoreError::Io { error, .. })
                if error.kind() == std::io::ErrorKind::NotFound
                    && fs::symlink_metadata(&s.dir).is_err() =>
            {
                return Err(StoreError::Corrupt {
                    path: self.dir.join(TABLE),
                    detail: format!(
                        "{TABLE} names snapshot {}, whose directory {} is missing; {}",
                        s.id,
                        s.dir.display(),
                        self.recovery()
                    ),
                });
            }
            Err(e) => return Err(e),
        };
        let problems = m.problems(s.id);
        Ok((Some(s), m, problems))
    }

    /// The committed snapshot, for a reading handle with its reader lock held (taken
    /// without waiting; a snapshot being removed is resolved again).
    fn resolve(&self) -> Result<Option<Snapshot>, StoreError> {
        let Some(pins) = &self.pins else {
            return self.snapshot();
        };
        let mut gone = None;
        for _ in 0..PIN_TRIES {
            let Some(s) = self.snapshot()? else {
                return Ok(None);
            };
            let mut held = pins.lock().unwrap_or_else(PoisonError::into_inner);
            if held.iter().any(|(id, _)| *id == s.id) {
                return Ok(Some(s));
            }
            match pin(&s) {
                Pin::Locked(f) => {
                    held.push((s.id, Some(f)));
                    return Ok(Some(s));
                }
                Pin::Unlockable => {
                    held.push((s.id, None));
                    return Ok(Some(s));
                }
                // Still the committed one but without its directory: let the manifest
                // read say what is missing.
                Pin::Gone if gone == Some(s.id) => return Ok(Some(s)),
                // Removed since `requests` was read: a newer one is committed.
                Pin::Gone => gone = Some(s.id),
            }
        }
        Err(StoreError::Io {
            path: self.dir.join(TABLE),
            error: std::io::Error::other(
                "the committed snapshot changed at every try to open it; try again",
            ),
        })
    }

    /// Whether this handle holds the reader lock of snapshot `id`.
    fn holds_lock(&self, id: u64) -> bool {
        self.pins.as_ref().is_some_and(|pins| {
            pins.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .any(|(i, f)| *i == id && f.is_some())
        })
    }

    /// `e`, a reader's error on snapshot `snap` — or, when `snap` is gone and is no
    /// longer the committed snapshot, the plain error saying it was removed while read
    /// (a missing file then is no damage of the dataset).
    pub fn explain_loss(&self, snap: &Snapshot, e: StoreError) -> StoreError {
        if matches!(e, StoreError::SnapshotGone { .. })
            || fs::symlink_metadata(snap.dir.join(MANIFEST)).is_ok()
            || self
                .snapshot()
                .ok()
                .flatten()
                .is_some_and(|c| c.id == snap.id)
        {
            return e;
        }
        let why = if self.holds_lock(snap.id) {
            "by something other than logscope's garbage collection: this command held the snapshot's reader lock"
        } else {
            "a newer ingest committed and the reader lock was not held"
        };
        StoreError::SnapshotGone {
            path: self.dir.clone(),
            id: snap.id,
            why,
        }
    }

    /// The error for a `requests` that is not a symbolic link, with how to recover.
    fn not_a_link(&self, link: &Path, md: &fs::Metadata) -> StoreError {
        let what = if md.is_dir() {
            "a directory"
        } else if md.is_file() {
            "a plain file"
        } else {
            "not a symbolic link"
        };
        StoreError::Corrupt {
            path: link.to_path_buf(),
            detail: format!(
                "{TABLE} is {what}, not the symbolic link to the committed snapshot that \
                 logscope keeps there (something replaced it; other readers of \
                 {TABLE}/*.parquet may have read the wrong files); {}",
                self.recovery()
            ),
        }
    }

    /// How to point `requests` at the newest snapshot again.
    fn recovery(&self) -> String {
        let snaps = self.dir.join(SNAPSHOTS);
        let newest = fs::read_dir(&snaps).ok().and_then(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u64>().ok())
                .filter(|&id| snaps.join(snapshot_name(id)).join(MANIFEST).is_file())
                .max()
        });
        match newest {
            Some(id) => format!(
                "to recover, in {} run `mv {TABLE} {TABLE}.damaged && ln -s {SNAPSHOTS}/{} {TABLE}` \
                 (the newest snapshot), check it with `logscope info --verify`, then remove \
                 {TABLE}.damaged; or rebuild the dataset from the logs",
                self.dir.display(),
                snapshot_name(id)
            ),
            None => "no snapshot is left to point it at: move the dataset directory away and \
                     ingest the logs again"
                .to_string(),
        }
    }

    /// Starts building ingest `id`: an empty build directory for its parts. `id` must
    /// be newer than the committed snapshot (its parts' names and its snapshot
    /// directory must be new).
    pub fn begin(&self, id: u64) -> Result<Build, StoreError> {
        if let Some(cur) = self.snapshot()?
            && id <= cur.id
        {
            return Err(StoreError::Corrupt {
                path: cur.dir.join(MANIFEST),
                detail: format!(
                    "the next ingest would be number {id}, not after the committed snapshot {}; nothing was written",
                    cur.id
                ),
            });
        }
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
        manifest: Manifest,
        parts: Vec<PartEntry>,
    ) -> Result<Snapshot, StoreError> {
        self.commit_arranged(build, manifest, parts, None)
    }

    /// [`Dataset::commit`], the parts then put in the order of `order` (part file
    /// names, each part once) instead of the committed ones followed by the new ones.
    pub(crate) fn commit_arranged(
        &self,
        build: Build,
        mut manifest: Manifest,
        parts: Vec<PartEntry>,
        order: Option<&[String]>,
    ) -> Result<Snapshot, StoreError> {
        let result = (|| {
            failpoint("commit-start");
            let current = self.snapshot()?;
            if let Some(cur) = &current {
                for p in &manifest.parts {
                    let from = cur.part_path(p);
                    // A plain file of the recorded size (checked when the dataset was
                    // opened; checked again for what changed since).
                    slices::check_part(&from, p)?;
                    link_or_copy(&from, &build.dir.join(&p.file))?;
                }
            }
            failpoint("after-links");
            manifest.ingests = build.id;
            manifest.parts.extend(parts);
            if let Some(order) = order {
                let rank = |p: &PartEntry| order.iter().position(|f| *f == p.file);
                if manifest.parts.len() != order.len()
                    || manifest.parts.iter().any(|p| rank(p).is_none())
                {
                    return Err(StoreError::Corrupt {
                        path: build.dir.clone(),
                        detail:
                            "the parts to commit are not the parts ordered; nothing was committed"
                                .into(),
                    });
                }
                manifest.parts.sort_by_key(|p| rank(p));
            }
            let lock = build.dir.join(READER_LOCK);
            File::create_new(&lock).map_err(io_err(&lock))?;
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
        // Best effort: drop the snapshots no reader can need any more.
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

    /// Removes snapshot directories that no reader needs any more: build directories
    /// and snapshots being removed (a crash), snapshots newer than the committed one (a
    /// crash between their rename and the commit), and snapshots older than the one
    /// before `current` that were superseded at least the grace period ago
    /// ([`grace`]) and whose reader lock is free (no logscope reader reads them).
    fn collect_garbage(&self, current: u64) -> Result<(), StoreError> {
        let snaps = self.dir.join(SNAPSHOTS);
        let rd = match fs::read_dir(&snaps) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_err(&snaps)(e)),
        };
        let mut leftovers = Vec::new();
        let mut ids = Vec::new();
        for entry in rd {
            let entry = entry.map_err(io_err(&snaps))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(BUILD_PREFIX) || name.starts_with(GC_PREFIX) {
                leftovers.push(entry.path());
            } else if let Ok(id) = name.parse::<u64>() {
                ids.push(id);
            }
        }
        for path in leftovers {
            fs::remove_dir_all(&path).map_err(io_err(&path))?;
        }
        ids.sort_unstable();
        // Keep the committed snapshot and the one before it; an older one was
        // superseded when the next one was committed (its manifest written).
        let previous = ids.iter().copied().filter(|&id| id < current).max();
        let now = SystemTime::now();
        let grace = grace();
        let mut doomed = Vec::new();
        for (k, &id) in ids.iter().enumerate() {
            if id == current || Some(id) == previous {
                continue;
            }
            if id < current {
                let Some(&next) = ids.get(k + 1) else {
                    continue;
                };
                let manifest = snaps.join(snapshot_name(next)).join(MANIFEST);
                let superseded = fs::metadata(&manifest).and_then(|m| m.modified());
                let old_enough = superseded
                    .ok()
                    .and_then(|t| now.duration_since(t).ok())
                    .is_some_and(|age| age >= grace);
                if !old_enough {
                    continue;
                }
            }
            doomed.push(id);
        }
        for id in doomed {
            self.remove_snapshot(&snaps, id)?;
        }
        let tmp = self.dir.join(format!(".{TABLE}.tmp"));
        if fs::symlink_metadata(&tmp).is_ok() {
            fs::remove_file(&tmp).map_err(io_err(&tmp))?;
        }
        Ok(())
    }

    /// Removes snapshot `id` unless a reader holds its lock: under the exclusive lock
    /// (taken without waiting), renamed away first so that no reader opens it by its
    /// name any more, then removed.
    fn remove_snapshot(&self, snaps: &Path, id: u64) -> Result<(), StoreError> {
        let name = snapshot_name(id);
        let dir = snaps.join(&name);
        let lock = File::options()
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(READER_LOCK));
        let _held = match lock {
            Ok(f) => match f.try_lock() {
                Ok(()) => Some(f),
                // A logscope reader is reading it.
                Err(std::fs::TryLockError::WouldBlock) => return Ok(()),
                // No locks on this file system: the grace period alone protects readers.
                Err(std::fs::TryLockError::Error(_)) => None,
            },
            Err(_) => None,
        };
        let gone = snaps.join(format!("{GC_PREFIX}{name}"));
        fs::rename(&dir, &gone).map_err(io_err(&dir))?;
        fs::remove_dir_all(&gone).map_err(io_err(&gone))
    }

    /// Removes what an interrupted ingest left behind.
    fn recover(&self) -> Result<(), StoreError> {
        let current = self.snapshot()?.map_or(0, |s| s.id);
        self.collect_garbage(current)
    }
}

/// How long a superseded snapshot is kept at least: `LOGSCOPE_SNAPSHOT_GRACE` seconds,
/// else [`DEFAULT_GRACE`].
pub fn grace() -> Duration {
    std::env::var("LOGSCOPE_SNAPSHOT_GRACE")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(DEFAULT_GRACE, Duration::from_secs)
}

/// What taking a snapshot's reader lock gave.
enum Pin {
    /// The shared lock, held while the file stays open.
    Locked(File),
    /// No lock could be taken (a read-only snapshot of an older logscope, a file
    /// system without locks): the grace period alone protects the read.
    Unlockable,
    /// The snapshot is being removed, or is gone.
    Gone,
}

/// Takes the shared reader lock of snapshot `s` without waiting.
fn pin(s: &Snapshot) -> Pin {
    let path = s.dir.join(READER_LOCK);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A snapshot written before reader locks has no lock file: make it if we
            // may (garbage collection does the same before it takes the lock).
            match File::options()
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
            {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Pin::Gone,
                Err(_) => return Pin::Unlockable,
            }
        }
        Err(_) => return Pin::Unlockable,
    };
    match file.try_lock_shared() {
        Ok(()) => {}
        // Garbage collection holds it exclusively: the snapshot is being removed.
        Err(std::fs::TryLockError::WouldBlock) => return Pin::Gone,
        Err(std::fs::TryLockError::Error(_)) => return Pin::Unlockable,
    }
    // Garbage collection renames a snapshot away (under the exclusive lock) before it
    // removes it: the file locked must still be the one at the snapshot's path.
    use std::os::unix::fs::MetadataExt;
    let id = |m: &fs::Metadata| (m.dev(), m.ino());
    match (file.metadata(), fs::metadata(&path)) {
        (Ok(a), Ok(b)) if id(&a) == id(&b) => Pin::Locked(file),
        _ => Pin::Gone,
    }
}

/// The error for a manifest that fails validation: its problems, and what to do.
fn refusal(snapshot: &Snapshot, problems: &[String], writing: bool) -> StoreError {
    let mut detail = problems[..problems.len().min(3)].join("; ");
    if problems.len() > 3 {
        detail.push_str(&format!(" (and {} more)", problems.len() - 3));
    }
    detail.push_str(if writing {
        "; nothing was written. `logscope info --verify` lists what is wrong; restore the \
         manifest or rebuild the dataset from the logs"
    } else {
        "; `logscope info --verify` lists what is wrong; restore the manifest or rebuild the \
         dataset from the logs"
    });
    StoreError::Corrupt {
        path: snapshot.dir.join(MANIFEST),
        detail,
    }
}

/// Links the part `from` of the committed snapshot to `to` in the build directory, or
/// where the file system has no hard links copies it into a new file: never over an
/// existing file (a part listed twice, or named like one of this ingest's, would
/// otherwise be truncated in every snapshot that shares it).
fn link_or_copy(from: &Path, to: &Path) -> Result<(), StoreError> {
    match fs::hard_link(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(StoreError::Corrupt {
            path: to.to_path_buf(),
            detail: "the new snapshot already has a part of this name (a part listed twice, or \
                     named like one of this ingest's); nothing was overwritten"
                .into(),
        }),
        Err(_) => {
            let mut src = File::open(from).map_err(io_err(from))?;
            let mut dst = File::options()
                .write(true)
                .create_new(true)
                .open(to)
                .map_err(io_err(to))?;
            std::io::copy(&mut src, &mut dst).map_err(io_err(to))?;
            dst.sync_all().map_err(io_err(to))
        }
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
