//! Sorted runs of replay rows in temporary files, and the k-way merge that reads them
//! back in decision-time order.
//!
//! A run is one unnamed temporary file (`tempfile::tempfile_in`: the system removes it
//! when it is closed, on every exit path, even a kill) holding rows already in
//! decision-time order, in a compact encoding: per row its length, a presence byte, the
//! client (address bytes, name key), the decision time as a delta from the previous
//! row (runs are sorted, so one or two bytes), LEB128 integers, the interned text ids,
//! then the bytes of the free text fields the candidates read (path, query, referer;
//! see [`Needs`]). Nothing else of a row is kept. The length and the client first let
//! [`RunReader::next_client`] count requests per client without decoding the rest.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

use super::needs::Needs;
use super::row::{FIELD_IDS, IDS, NO_VALUE, NONE, Row};
use super::who::Who;
use crate::varint::put as put_var;

const HAS_RT: u8 = 1;
const HAS_BYTES: u8 = 2;
const V4: u8 = 4;
const V6: u8 = 8;
const HAS_CLIENT: u8 = 16;
const HAS_NAME: u8 = 32;

/// Bytes written to a run file at a time.
const WRITE_BUF: usize = 1 << 20;
/// Bytes read from a run file at a time.
const READ_BUF: usize = 256 << 10;
/// More than the longest encoding of a row without its text bytes (presence byte, 20
/// varints of at most 10 bytes, an IPv6 address, flags and class: 219).
const MAX_HEAD: usize = 256;

/// One sorted run on disk.
pub(super) struct Run {
    file: File,
    rows: u64,
}

/// Writes one run.
pub(super) struct RunWriter {
    file: File,
    buf: Vec<u8>,
    row: Vec<u8>,
    rows: u64,
    prev: i64,
    needs: Needs,
}

/// An interned id (or [`NONE`]) as a varint: 0 for none.
#[inline]
fn put_id(buf: &mut Vec<u8>, id: u32) {
    put_var(buf, u64::from(id.wrapping_add(1)));
}

/// A text's length as a varint: 0 for none, else length + 1.
#[inline]
fn put_len(buf: &mut Vec<u8>, s: Option<&[u8]>) {
    put_var(buf, s.map_or(0, |s| s.len() as u64 + 1));
}

impl RunWriter {
    /// A new run in a temporary file under `dir`.
    pub(super) fn create(dir: &Path, needs: Needs) -> io::Result<RunWriter> {
        Ok(RunWriter {
            file: tempfile::tempfile_in(dir)?,
            buf: Vec::with_capacity(WRITE_BUF + 4096),
            row: Vec::with_capacity(MAX_HEAD),
            rows: 0,
            prev: 0,
            needs,
        })
    }

    /// Appends a row (rows must come in decision-time order). `t` holds the interned
    /// ids (method, -, -, host, agent, -, user, then the captured fields); the free
    /// text fields are given.
    pub(super) fn put(
        &mut self,
        r: &Row,
        t: &[u32; IDS],
        path: Option<&[u8]>,
        query: Option<&[u8]>,
        referer: Option<&[u8]>,
    ) -> io::Result<()> {
        let b = &mut self.row;
        b.clear();
        let mut head = 0u8;
        if r.rt_us != NO_VALUE {
            head |= HAS_RT;
        }
        if r.bytes != NO_VALUE {
            head |= HAS_BYTES;
        }
        match r.ip {
            Some(IpAddr::V4(_)) => head |= V4,
            Some(IpAddr::V6(_)) => head |= V6,
            None => {}
        }
        if r.client != NONE {
            head |= HAS_CLIENT;
        }
        if r.name_key != NONE {
            head |= HAS_NAME;
        }
        b.push(head);
        match r.ip {
            Some(IpAddr::V4(a)) => b.extend_from_slice(&a.octets()),
            Some(IpAddr::V6(a)) => b.extend_from_slice(&a.octets()),
            None => {}
        }
        if head & HAS_NAME != 0 {
            put_var(b, u64::from(r.name_key));
        }
        put_var(b, r.arrival.wrapping_sub(self.prev) as u64);
        self.prev = r.arrival;
        put_var(b, r.line);
        if head & HAS_RT != 0 {
            put_var(b, r.rt_us);
        }
        if head & HAS_BYTES != 0 {
            put_var(b, r.bytes);
        }
        put_var(b, u64::from(r.file));
        if head & HAS_CLIENT != 0 {
            put_var(b, u64::from(r.client));
        }
        put_var(b, u64::from(r.agent));
        put_var(b, u64::from(r.status));
        b.push(r.flags);
        b.push(r.who);
        let n = self.needs;
        if n.method {
            put_id(b, t[0]);
        }
        if n.path {
            put_len(b, path);
        }
        if n.query {
            put_len(b, query);
        }
        if n.host {
            put_id(b, t[3]);
        }
        if n.agent {
            put_id(b, t[4]);
        }
        if n.referer {
            put_len(b, referer);
        }
        if n.user {
            put_id(b, t[6]);
        }
        for &id in &t[FIELD_IDS..FIELD_IDS + n.field_slots()] {
            put_id(b, id);
        }
        for s in [path, query, referer].into_iter().flatten() {
            b.extend_from_slice(s);
        }
        put_var(&mut self.buf, b.len() as u64);
        self.buf.extend_from_slice(b);
        self.rows += 1;
        if self.buf.len() >= WRITE_BUF {
            self.file.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// The finished run.
    pub(super) fn finish(mut self) -> io::Result<Run> {
        self.file.write_all(&self.buf)?;
        self.file.flush()?;
        Ok(Run {
            file: self.file,
            rows: self.rows,
        })
    }
}

#[cold]
fn damaged() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "a temporary file of sorted rows was damaged while the replay ran",
    )
}

/// A cursor over the bytes of one encoded row.
struct Cur<'b> {
    b: &'b [u8],
    i: usize,
}

impl Cur<'_> {
    #[inline(always)]
    fn byte(&mut self) -> io::Result<u8> {
        let v = *self.b.get(self.i).ok_or_else(damaged)?;
        self.i += 1;
        Ok(v)
    }

    #[inline(always)]
    fn var(&mut self) -> io::Result<u64> {
        crate::varint::get(self.b, &mut self.i).ok_or_else(damaged)
    }

    #[inline(always)]
    fn u32(&mut self) -> io::Result<u32> {
        u32::try_from(self.var()?).map_err(|_| damaged())
    }

    #[inline(always)]
    fn id(&mut self) -> io::Result<u32> {
        Ok(self.u32()?.wrapping_sub(1))
    }

    #[inline(always)]
    fn len(&mut self) -> io::Result<Option<usize>> {
        match self.var()? {
            0 => Ok(None),
            n => usize::try_from(n - 1).map(Some).map_err(|_| damaged()),
        }
    }

    #[inline(always)]
    fn take<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        let s = self.b.get(self.i..self.i + N).ok_or_else(damaged)?;
        self.i += N;
        Ok(s.try_into().expect("N bytes"))
    }
}

/// Reads one run back, a row at a time, in its order.
pub(super) struct RunReader<'a> {
    file: &'a File,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
    left: u64,
    prev: i64,
    needs: Needs,
    /// The current row (its `text` is [`NONE`]: the texts are below).
    pub(super) row: Row,
    /// Its interned ids (method, -, -, host, agent, -, user, then the captured fields).
    pub(super) t: [u32; IDS],
    lens: [Option<usize>; 3],
    texts: [Vec<u8>; 3],
}

impl<'a> RunReader<'a> {
    /// A reader at the start of `run`. Call [`RunReader::next`] (or
    /// [`RunReader::next_client`]) for the first row.
    pub(super) fn new(run: &'a Run, needs: Needs) -> io::Result<RunReader<'a>> {
        let mut file = &run.file;
        file.seek(SeekFrom::Start(0))?;
        Ok(RunReader {
            file,
            buf: vec![0; READ_BUF],
            pos: 0,
            end: 0,
            eof: false,
            left: run.rows,
            prev: 0,
            needs,
            row: Row::EMPTY,
            t: [NONE; IDS],
            lens: [None; 3],
            texts: Default::default(),
        })
    }

    /// Makes at least `need` bytes available from `pos`, unless the file ends first.
    #[inline(always)]
    fn fill(&mut self, need: usize) -> io::Result<()> {
        if self.end - self.pos >= need || self.eof {
            return Ok(());
        }
        self.refill(need)
    }

    #[inline(never)]
    fn refill(&mut self, need: usize) -> io::Result<()> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        if self.buf.len() < need {
            self.buf.resize(need.next_power_of_two(), 0);
        }
        while self.end < need {
            let n = match self.file.read(&mut self.buf[self.end..]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                self.eof = true;
                break;
            }
            self.end += n;
        }
        Ok(())
    }

    /// The length of the next row, with `pos` past it and the row's bytes buffered.
    #[inline(always)]
    fn record(&mut self) -> io::Result<usize> {
        self.fill(10)?;
        let mut c = Cur {
            b: &self.buf[self.pos..self.end],
            i: 0,
        };
        let len = usize::try_from(c.var()?).map_err(|_| damaged())?;
        self.pos += c.i;
        self.fill(len)?;
        if self.end - self.pos < len {
            return Err(damaged());
        }
        Ok(len)
    }

    /// Reads the next row into [`RunReader::row`]; false at the end of the run.
    pub(super) fn next(&mut self) -> io::Result<bool> {
        if self.left == 0 {
            return Ok(false);
        }
        self.left -= 1;
        let len = self.record()?;
        let mut c = Cur {
            b: &self.buf[self.pos..self.pos + len],
            i: 0,
        };
        let head = c.byte()?;
        let r = &mut self.row;
        r.ip = if head & V4 != 0 {
            Some(IpAddr::V4(Ipv4Addr::from(c.take::<4>()?)))
        } else if head & V6 != 0 {
            Some(IpAddr::V6(Ipv6Addr::from(c.take::<16>()?)))
        } else {
            None
        };
        r.name_key = if head & HAS_NAME != 0 { c.u32()? } else { NONE };
        r.arrival = self.prev.wrapping_add(c.var()? as i64);
        self.prev = r.arrival;
        r.line = c.var()?;
        r.rt_us = if head & HAS_RT != 0 {
            c.var()?
        } else {
            NO_VALUE
        };
        r.bytes = if head & HAS_BYTES != 0 {
            c.var()?
        } else {
            NO_VALUE
        };
        r.file = c.u32()?;
        r.client = if head & HAS_CLIENT != 0 {
            c.u32()?
        } else {
            NONE
        };
        r.agent = c.u32()?;
        r.status = u16::try_from(c.var()?).map_err(|_| damaged())?;
        r.flags = c.byte()?;
        r.who = c.byte()?;
        if usize::from(r.who) >= Who::ALL.len() {
            return Err(damaged());
        }
        let n = self.needs;
        let t = &mut self.t;
        if n.method {
            t[0] = c.id()?;
        }
        if n.path {
            self.lens[0] = c.len()?;
        }
        if n.query {
            self.lens[1] = c.len()?;
        }
        if n.host {
            t[3] = c.id()?;
        }
        if n.agent {
            t[4] = c.id()?;
        }
        if n.referer {
            self.lens[2] = c.len()?;
        }
        if n.user {
            t[6] = c.id()?;
        }
        for id in &mut t[FIELD_IDS..FIELD_IDS + n.field_slots()] {
            *id = c.id()?;
        }
        let mut at = c.i;
        if at + self.lens.iter().flatten().sum::<usize>() != len {
            return Err(damaged());
        }
        for (l, out) in self.lens.iter().zip(&mut self.texts) {
            if let Some(l) = *l {
                out.clear();
                out.extend_from_slice(&c.b[at..at + l]);
                at += l;
            }
        }
        self.pos += len;
        Ok(true)
    }

    /// Reads only the client of the next row (address, name key); `None` at the end of
    /// the run. A reader used this way gives no whole rows ([`RunReader::next`]) after.
    pub(super) fn next_client(&mut self) -> io::Result<Option<(Option<IpAddr>, u32)>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let len = self.record()?;
        let mut c = Cur {
            b: &self.buf[self.pos..self.pos + len],
            i: 0,
        };
        let head = c.byte()?;
        let ip = if head & V4 != 0 {
            Some(IpAddr::V4(Ipv4Addr::from(c.take::<4>()?)))
        } else if head & V6 != 0 {
            Some(IpAddr::V6(Ipv6Addr::from(c.take::<16>()?)))
        } else {
            None
        };
        let name = if head & HAS_NAME != 0 { c.u32()? } else { NONE };
        self.pos += len;
        Ok(Some((ip, name)))
    }

    /// The current row's path, query and referer.
    #[inline]
    pub(super) fn texts(&self) -> [Option<&[u8]>; 3] {
        [0, 1, 2].map(|k| self.lens[k].map(|_| self.texts[k].as_slice()))
    }
}
