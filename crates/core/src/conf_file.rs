//! Bounded reading of configuration files and bounded expansion of what they include:
//! [`read`] opens a regular file only (a FIFO, a device such as `/dev/zero` or a
//! directory is refused without blocking) and reads at most a stated cap; [`Budget`]
//! counts what includes, imports and interpolations produce (expansions and bytes), so
//! a configuration that multiplies itself is refused instead of filling memory.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::escape;

/// The most a configuration file (nginx.conf, Caddyfile, haproxy.cfg, fail2ban jail or
/// filter, rules or limits TOML) may hold: 16 MiB.
pub const CONFIG_CAP: u64 = 16 << 20;

/// The most an `--asn-db` TSV may hold: 256 MiB (iptoasn.com's combined file is about
/// 60 MB).
pub const ASN_DB_CAP: u64 = 256 << 20;

/// The most expansions (directives or nodes produced, substitutions made) one
/// configuration may take, its includes and imports together.
pub const MAX_EXPANSIONS: u64 = 1_000_000;

/// The most bytes one configuration may produce by expansion (and read, its includes
/// and imports together): 64 MiB.
pub const MAX_EXPANDED_BYTES: u64 = 64 << 20;

/// The most files one configuration may load, counting a file included twice twice.
pub const MAX_FILE_LOADS: u64 = 4096;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The OS refused (missing file, no permission, …).
    #[error("cannot read {}: {source}", escape::path(path))]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A FIFO, a device, a socket or a directory.
    #[error("{}: {}", escape::path(path), kind_text(kind))]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// Larger than the cap.
    #[error("{}: larger than {} (the limit for this file)", escape::path(path), size_text(*cap))]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The cap in bytes.
        cap: u64,
    },
}

fn kind_text(kind: &str) -> String {
    format!("not a regular file but a {kind}; give a regular file")
}

/// `16 MiB`, `256 MiB`, `4096 bytes`.
pub fn size_text(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else {
        format!("{n} bytes")
    }
}

impl ReadError {
    /// The problem without the file name (for errors that name the file themselves).
    pub fn problem(&self) -> String {
        match self {
            ReadError::Io { source, .. } => format!("cannot read: {source}"),
            ReadError::NotRegular { kind, .. } => kind_text(kind),
            ReadError::TooLarge { cap, .. } => {
                format!("larger than {} (the limit for this file)", size_text(*cap))
            }
        }
    }

    /// Whether the file was refused by a bound (not a regular file, too large) rather
    /// than by the OS.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, ReadError::Io { .. })
    }
}

/// The kind of a file that is not regular.
fn kind_of(ft: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "FIFO";
        }
        if ft.is_char_device() {
            return "character device";
        }
        if ft.is_block_device() {
            return "block device";
        }
        if ft.is_socket() {
            return "socket";
        }
    }
    if ft.is_dir() {
        "directory"
    } else {
        "special file"
    }
}

/// Opens `path` without blocking on a FIFO (`O_NONBLOCK`; it changes nothing for a
/// regular file's reads).
fn open(path: &Path) -> std::io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    o.open(path)
}

/// Reads the regular file `path` whole, refusing anything else and anything larger
/// than `cap` bytes (checked on the open file, and again while reading for a file that
/// grows).
pub fn read(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let io = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    // The type first, so that a FIFO is not even opened (an open FIFO without a
    // writer blocks); the open file is checked again below (it may have been swapped).
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(meta.file_type()),
        });
    }
    let file = open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(meta.file_type()),
        });
    }
    let too_large = || ReadError::TooLarge {
        path: path.to_path_buf(),
        cap,
    };
    if meta.len() > cap {
        return Err(too_large());
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1).read_to_end(&mut out).map_err(io)?;
    if out.len() as u64 > cap {
        return Err(too_large());
    }
    Ok(out)
}

/// [`read`] as text (invalid UTF-8 replaced, as the readers take it).
pub fn read_text(path: &Path, cap: u64) -> Result<String, ReadError> {
    read(path, cap).map(|b| match String::from_utf8(b) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// What one configuration has spent of its expansion bounds.
#[derive(Clone, Debug)]
pub struct Budget {
    max_count: u64,
    max_bytes: u64,
    max_files: u64,
    count: u64,
    bytes: u64,
    files: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget::new(MAX_EXPANSIONS, MAX_EXPANDED_BYTES, MAX_FILE_LOADS)
    }
}

impl Budget {
    /// A budget of `max_count` expansions, `max_bytes` bytes and `max_files` file loads.
    pub fn new(max_count: u64, max_bytes: u64, max_files: u64) -> Budget {
        Budget {
            max_count,
            max_bytes,
            max_files,
            count: 0,
            bytes: 0,
            files: 0,
        }
    }

    /// Spends `count` expansions producing `bytes` bytes; the bound passed when one is.
    pub fn spend(&mut self, count: u64, bytes: u64) -> Result<(), BudgetError> {
        self.count = self.count.saturating_add(count);
        self.bytes = self.bytes.saturating_add(bytes);
        if self.count > self.max_count {
            return Err(BudgetError::Expansions(self.max_count));
        }
        if self.bytes > self.max_bytes {
            return Err(BudgetError::Bytes(self.max_bytes));
        }
        Ok(())
    }

    /// Spends one file load of `bytes` bytes.
    pub fn load(&mut self, bytes: u64) -> Result<(), BudgetError> {
        self.files += 1;
        if self.files > self.max_files {
            return Err(BudgetError::Files(self.max_files));
        }
        self.spend(0, bytes)
    }
}

/// A bound of a [`Budget`] passed: each variant holds the bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetError {
    /// More directives or substitutions than this.
    Expansions(u64),
    /// More expanded bytes than this.
    Bytes(u64),
    /// More file loads than this.
    Files(u64),
}

impl std::fmt::Display for BudgetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BudgetError::Expansions(n) => write!(
                f,
                "the configuration expands to more than {n} directives or substitutions (includes, imports and interpolations together; an expansion bomb?)"
            ),
            BudgetError::Bytes(n) => write!(
                f,
                "the configuration expands to more than {} (includes, imports and interpolations together; an expansion bomb?)",
                size_text(*n)
            ),
            BudgetError::Files(n) => write!(
                f,
                "more than {n} files loaded (includes together, a file included twice counted twice; an include bomb?)"
            ),
        }
    }
}

impl std::error::Error for BudgetError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_bounded_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.conf");
        std::fs::write(&p, "x;\n").unwrap();
        assert_eq!(read(&p, 3).unwrap(), b"x;\n");
        let e = read(&p, 2).unwrap_err();
        assert!(
            e.is_refusal() && e.to_string().contains("larger than 2 bytes"),
            "{e}"
        );
        let e = read(dir.path(), CONFIG_CAP).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
        let e = read(Path::new("/dev/zero"), CONFIG_CAP).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        let e = read(&dir.path().join("none"), CONFIG_CAP).unwrap_err();
        assert!(
            !e.is_refusal() && e.problem().starts_with("cannot read"),
            "{e}"
        );
    }

    #[test]
    fn budget_counts_and_bytes() {
        let mut b = Budget::new(2, 10, 1);
        assert!(b.spend(2, 10).is_ok());
        assert!(
            b.spend(1, 0)
                .unwrap_err()
                .to_string()
                .contains("more than 2")
        );
        let mut b = Budget::new(100, 10, 1);
        assert!(
            b.spend(1, 11)
                .unwrap_err()
                .to_string()
                .contains("more than 10 bytes")
        );
        let mut b = Budget::new(100, 100, 1);
        assert!(b.load(1).is_ok());
        assert!(
            b.load(1)
                .unwrap_err()
                .to_string()
                .contains("more than 1 files")
        );
    }
}
