//! The clients of the rows a replay fed while it read them (see
//! [`super::RowStore::take_before`]): those rows are not kept, but the report needs
//! every row's client once more after the replay (the traffic of the most refused
//! networks and addresses). Rows are counted per distinct client in memory, up to
//! [`COUNTED`] clients; the rows of clients beyond those go to unnamed temporary files
//! (removed by the system when closed, on every exit path), 5 bytes an IPv4 row,
//! several files so that two threads can read them back at once.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

/// Bytes buffered before a write.
const BUF: usize = 1 << 20;
/// Bytes a file holds before the next one is started.
const FILE_BYTES: u64 = 16 << 20;

/// Distinct clients counted in memory at most (about 32 bytes each): the rows of
/// clients first seen after that many are written to the files.
pub(super) const COUNTED: usize = 1 << 19;

const NAME: u8 = 0;
const V4: u8 = 4;
const V6: u8 = 6;

/// A client counted in memory that is not an IPv4 address.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Other {
    V6(u128),
    /// The classifier's name key (`u32::MAX`: none).
    Name(u32),
}

/// The clients of fed rows: counted in memory, the rest on disk.
pub(super) struct ClientLog {
    dir: PathBuf,
    /// Rows per IPv4 address.
    v4: FxHashMap<u32, u64>,
    /// Rows per IPv6 address or name key.
    other: FxHashMap<Other, u64>,
    /// Distinct clients counted at most.
    cap: usize,
    /// Full files, and the one being written (last).
    files: Vec<File>,
    /// Bytes in the last file.
    written: u64,
    buf: Vec<u8>,
}

impl ClientLog {
    /// A log counting up to `cap` distinct clients in memory, whose files go under
    /// `dir` (created on the first write).
    pub(super) fn new(dir: &Path, cap: usize) -> ClientLog {
        ClientLog {
            dir: dir.to_path_buf(),
            v4: FxHashMap::default(),
            other: FxHashMap::default(),
            cap,
            files: Vec::new(),
            written: 0,
            buf: Vec::new(),
        }
    }

    /// Adds a row's client: its address, or the classifier's name key (or `u32::MAX`).
    #[inline]
    pub(super) fn push(&mut self, ip: Option<IpAddr>, name_key: u32) -> io::Result<()> {
        let room = self.v4.len() + self.other.len() < self.cap;
        if let Some(IpAddr::V4(a)) = ip {
            let k = u32::from(a);
            if room {
                *self.v4.entry(k).or_default() += 1;
                return Ok(());
            }
            if let Some(n) = self.v4.get_mut(&k) {
                *n += 1;
                return Ok(());
            }
        } else {
            let k = match ip {
                Some(IpAddr::V6(a)) => Other::V6(u128::from(a)),
                _ => Other::Name(name_key),
            };
            if room {
                *self.other.entry(k).or_default() += 1;
                return Ok(());
            }
            if let Some(n) = self.other.get_mut(&k) {
                *n += 1;
                return Ok(());
            }
        }
        self.write(ip, name_key)
    }

    /// Appends a client not counted in memory to the files.
    fn write(&mut self, ip: Option<IpAddr>, name_key: u32) -> io::Result<()> {
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(BUF + 32);
        }
        match ip {
            Some(IpAddr::V4(a)) => {
                self.buf.push(V4);
                self.buf.extend_from_slice(&a.octets());
            }
            Some(IpAddr::V6(a)) => {
                self.buf.push(V6);
                self.buf.extend_from_slice(&a.octets());
            }
            None => {
                self.buf.push(NAME);
                self.buf.extend_from_slice(&name_key.to_le_bytes());
            }
        }
        if self.buf.len() >= BUF {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes what is buffered (every row of it to one file).
    pub(super) fn flush(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if self.files.is_empty() || self.written >= FILE_BYTES {
            self.files.push(tempfile::tempfile_in(&self.dir)?);
            self.written = 0;
        }
        let f = self.files.last_mut().expect("pushed above");
        f.write_all(&self.buf)?;
        self.written += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    /// Files written (after [`ClientLog::flush`]).
    pub(super) fn files(&self) -> usize {
        self.files.len()
    }

    /// Calls `f` with every client counted in memory and its rows, in no particular
    /// order.
    pub(super) fn fold_counted(&self, mut f: impl FnMut(Option<IpAddr>, u32, u64)) {
        for (&a, &n) in &self.v4 {
            f(Some(IpAddr::V4(Ipv4Addr::from(a))), u32::MAX, n);
        }
        for (&k, &n) in &self.other {
            match k {
                Other::V6(a) => f(Some(IpAddr::V6(Ipv6Addr::from(a))), u32::MAX, n),
                Other::Name(key) => f(None, key, n),
            }
        }
    }

    /// Calls `f` with the client of every row of file `k`, in the order written.
    pub(super) fn fold(&self, k: usize, mut f: impl FnMut(Option<IpAddr>, u32)) -> io::Result<()> {
        let Some(mut file) = self.files.get(k) else {
            return Ok(());
        };
        file.seek(SeekFrom::Start(0))?;
        let damaged = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "a temporary file of replayed clients is damaged",
            )
        };
        // Read a block at a time; a row cut at the block's end waits for the next.
        let mut buf = vec![0u8; BUF];
        let (mut have, mut at) = (0usize, 0usize);
        loop {
            buf.copy_within(at..have, 0);
            have -= at;
            at = 0;
            let n = file.read(&mut buf[have..])?;
            if n == 0 {
                return if have == 0 { Ok(()) } else { Err(damaged()) };
            }
            have += n;
            while at < have {
                let rest = &buf[at..have];
                let len = match rest[0] {
                    V4 | NAME => 5,
                    V6 => 17,
                    _ => return Err(damaged()),
                };
                if rest.len() < len {
                    break;
                }
                match rest[0] {
                    V4 => {
                        let a: [u8; 4] = rest[1..5].try_into().expect("5 bytes");
                        f(Some(IpAddr::V4(Ipv4Addr::from(a))), u32::MAX);
                    }
                    V6 => {
                        let a: [u8; 16] = rest[1..17].try_into().expect("17 bytes");
                        f(Some(IpAddr::V6(Ipv6Addr::from(a))), u32::MAX);
                    }
                    _ => {
                        let k: [u8; 4] = rest[1..5].try_into().expect("5 bytes");
                        f(None, u32::from_le_bytes(k));
                    }
                }
                at += len;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Clients come back in the order written, across the reads' block boundaries
    /// (rows of 5 and 17 bytes) and across files.
    #[test]
    fn clients_come_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = ClientLog::new(dir.path(), 0);
        let mut want = Vec::new();
        for i in 0u32..3_000_000 {
            let c = match i % 7 {
                0 => (
                    Some(IpAddr::V6(Ipv6Addr::from(u128::from(i) << 64))),
                    u32::MAX,
                ),
                1 => (None, i),
                2 => (None, u32::MAX),
                _ => (Some(IpAddr::V4(Ipv4Addr::from(i))), u32::MAX),
            };
            log.push(c.0, c.1).unwrap();
            want.push(c);
        }
        log.flush().unwrap();
        assert!(log.files() > 1, "{} files", log.files());
        let mut got = Vec::new();
        for k in 0..log.files() {
            log.fold(k, |ip, key| got.push((ip, key))).unwrap();
        }
        assert_eq!(got.len(), want.len());
        assert!(got == want);
        let mut counted = 0;
        log.fold_counted(|_, _, _| counted += 1);
        assert_eq!(counted, 0);
    }

    /// Rows are counted per client up to the cap; the rows of clients first seen after
    /// it go to the files; together they are every row.
    #[test]
    fn clients_are_counted_up_to_the_cap_and_the_rest_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = ClientLog::new(dir.path(), 5);
        let mut want = std::collections::BTreeMap::new();
        for i in 0u32..1000 {
            let c = match i % 4 {
                0 => (
                    Some(IpAddr::V6(Ipv6Addr::from(u128::from(i % 12)))),
                    u32::MAX,
                ),
                1 => (None, i % 3),
                _ => (Some(IpAddr::V4(Ipv4Addr::from(i % 9))), u32::MAX),
            };
            log.push(c.0, c.1).unwrap();
            *want.entry(c).or_insert(0u64) += 1;
        }
        log.flush().unwrap();
        let mut got = std::collections::BTreeMap::new();
        let mut distinct = 0;
        log.fold_counted(|ip, k, n| {
            distinct += 1;
            *got.entry((ip, k)).or_insert(0u64) += n;
        });
        assert_eq!(distinct, 5);
        let mut rows_written = 0;
        for k in 0..log.files() {
            log.fold(k, |ip, key| {
                rows_written += 1;
                *got.entry((ip, key)).or_insert(0u64) += 1;
            })
            .unwrap();
        }
        assert!(rows_written > 0);
        assert_eq!(got, want);
    }
}
