//! The clients of the rows a replay fed while it read them (see
//! [`super::RowStore::take_before`]): those rows are not kept, but the report reads
//! every row's client once more after the replay (the traffic of the most refused
//! networks and addresses), so their clients go to unnamed temporary files (removed by
//! the system when closed, on every exit path), 5 bytes an IPv4 row. Several files, so
//! that two threads can read them back at once.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

/// Bytes buffered before a write.
const BUF: usize = 1 << 20;
/// Bytes a file holds before the next one is started.
const FILE_BYTES: u64 = 16 << 20;

const NAME: u8 = 0;
const V4: u8 = 4;
const V6: u8 = 6;

/// The clients of fed rows, on disk.
pub(super) struct ClientLog {
    dir: PathBuf,
    /// Full files, and the one being written (last).
    files: Vec<File>,
    /// Bytes in the last file.
    written: u64,
    buf: Vec<u8>,
}

impl ClientLog {
    /// A log whose files go under `dir` (created on the first write).
    pub(super) fn new(dir: &Path) -> ClientLog {
        ClientLog {
            dir: dir.to_path_buf(),
            files: Vec::new(),
            written: 0,
            buf: Vec::with_capacity(BUF + 32),
        }
    }

    /// Appends a row's client: its address, or the classifier's name key (or `u32::MAX`).
    #[inline]
    pub(super) fn push(&mut self, ip: Option<IpAddr>, name_key: u32) -> io::Result<()> {
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
        let mut log = ClientLog::new(dir.path());
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
    }
}
