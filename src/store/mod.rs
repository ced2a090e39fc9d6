//! The embedded dataset: Hive-partitioned Parquet files (`month=YYYY-MM/…`) under a
//! data directory, a manifest of sources and parts, a lock, and atomic commits.
//!
//! Commit protocol: parts are written under `.staging-N/`; on commit they are renamed
//! into place and then `manifest.json` is replaced atomically. Only parts listed in
//! the manifest belong to the dataset: on open, leftovers of an interrupted ingest
//! (staging directories, parts missing from the manifest) are removed, so a crash at
//! any point leaves the dataset exactly as it was before that ingest.

pub mod frame;
pub mod manifest;
pub mod scan;
pub mod writer;

use std::fs::{self, File};
use std::path::{Path, PathBuf};

pub use manifest::{CompressedCopy, Manifest, PartEntry, SourceEntry};
pub use writer::StagedWriter;

/// Errors of the dataset layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file system operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path involved.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The manifest cannot be read.
    #[error("{}: dataset manifest is damaged: {detail}", path.display())]
    Corrupt {
        /// The manifest's path.
        path: PathBuf,
        /// Why.
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
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| StoreError::Io { path: p, source }
        };
        fs::create_dir_all(dir).map_err(io(dir))?;
        let lock_path = dir.join(".lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
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
                    lock.lock().map_err(io(&lock_path))?;
                }
            },
            Err(std::fs::TryLockError::Error(e)) => return Err(io(&lock_path)(e)),
        }
        let ds = Dataset {
            dir: dir.to_path_buf(),
            _lock: Some(lock),
        };
        ds.recover()?;
        Ok(ds)
    }

    /// Opens `dir` for reading (no lock: readers see the last committed manifest).
    pub fn open_read(dir: &Path) -> Dataset {
        Dataset {
            dir: dir.to_path_buf(),
            _lock: None,
        }
    }

    /// The committed manifest.
    pub fn manifest(&self) -> Result<Manifest, StoreError> {
        Manifest::load(&self.dir)
    }

    /// Whether the directory holds a dataset.
    pub fn exists(&self) -> bool {
        self.dir.join("manifest.json").exists()
    }

    /// Absolute paths of the committed part files.
    pub fn part_paths(&self) -> Result<Vec<PathBuf>, StoreError> {
        Ok(self
            .manifest()?
            .parts
            .iter()
            .map(|p| self.dir.join(&p.path))
            .collect())
    }

    /// A fresh staging directory for ingest `ingest`.
    pub fn staging(&self, ingest: u64) -> Result<PathBuf, StoreError> {
        let p = self.dir.join(format!(".staging-{ingest:06}"));
        if p.exists() {
            fs::remove_dir_all(&p).map_err(|source| StoreError::Io {
                path: p.clone(),
                source,
            })?;
        }
        fs::create_dir_all(&p).map_err(|source| StoreError::Io {
            path: p.clone(),
            source,
        })?;
        Ok(p)
    }

    /// Moves staged parts into place and replaces the manifest: the commit point.
    pub fn commit(
        &self,
        staging: &Path,
        mut manifest: Manifest,
        parts: Vec<PartEntry>,
    ) -> Result<(), StoreError> {
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| StoreError::Io { path: p, source }
        };
        let mut dirs = Vec::new();
        for part in &parts {
            let from = staging.join(&part.path);
            let to = self.dir.join(&part.path);
            let parent = to.parent().expect("part has a parent").to_path_buf();
            fs::create_dir_all(&parent).map_err(io(&parent))?;
            fs::rename(&from, &to).map_err(io(&to))?;
            if !dirs.contains(&parent) {
                dirs.push(parent);
            }
        }
        for d in &dirs {
            sync_dir(d)?;
        }
        manifest.parts.extend(parts);
        manifest.save(&self.dir)?;
        fs::remove_dir_all(staging).map_err(io(staging))?;
        Ok(())
    }

    /// Drops a staging directory without committing anything.
    pub fn discard(&self, staging: &Path) -> Result<(), StoreError> {
        fs::remove_dir_all(staging).map_err(|source| StoreError::Io {
            path: staging.to_path_buf(),
            source,
        })
    }

    /// Removes what an interrupted ingest left: staging directories, part files not in
    /// the manifest, a half-written manifest.
    fn recover(&self) -> Result<(), StoreError> {
        let manifest = self.manifest()?;
        let known: std::collections::HashSet<&str> =
            manifest.parts.iter().map(|p| p.path.as_str()).collect();
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| StoreError::Io { path: p, source }
        };
        for entry in fs::read_dir(&self.dir).map_err(io(&self.dir))? {
            let entry = entry.map_err(io(&self.dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if name.starts_with(".staging-") {
                fs::remove_dir_all(&path).map_err(io(&path))?;
            } else if name == "manifest.json.tmp" {
                fs::remove_file(&path).map_err(io(&path))?;
            } else if name.starts_with("month=") && path.is_dir() {
                for f in fs::read_dir(&path).map_err(io(&path))? {
                    let f = f.map_err(io(&path))?;
                    let rel = format!("{name}/{}", f.file_name().to_string_lossy());
                    if rel.ends_with(".parquet") && !known.contains(rel.as_str()) {
                        fs::remove_file(f.path()).map_err(io(&f.path()))?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// fsyncs a directory so renames in it are durable.
pub fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|source| StoreError::Io {
            path: dir.to_path_buf(),
            source,
        })
}
