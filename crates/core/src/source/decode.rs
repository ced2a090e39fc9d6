//! Byte sources behind a [`Reader`](super::Reader): plain files read with positioned
//! reads (and watched for shrinking), raw streams, and gzip/zstd decoders that verify
//! every member's or frame's checksum and know where each one ends.
//!
//! A source yields decoded content with [`ByteSource::read`]; `Ok(0)` is a clean end
//! (every gzip member's CRC and length, every zstd frame, complete). Anything else ends
//! it with a [`Fault`] that says what happened and where it was noticed.

use std::fs::File;
use std::io::{self, Read};

use flate2::{Crc, Decompress, FlushDecompress, Status};
use zstd::stream::raw::Operation;

use super::DamageKind;

/// Why a source stopped before a clean end.
#[derive(Debug)]
pub(super) enum Fault {
    /// The operating system failed a read.
    Io(io::Error),
    /// The content is damaged (or changed under the reader).
    Damage {
        kind: DamageKind,
        /// Compressed byte offset (content offset for a plain file) where it was noticed.
        detected_at: u64,
        /// Compressed offset of the gzip member or zstd frame it was noticed in.
        unit_start: Option<u64>,
        /// What exactly, in words.
        detail: String,
    },
}

/// Decoded content, read in order.
pub(super) trait ByteSource: Send {
    /// Reads content into `buf` (never empty); `Ok(0)` is a clean end.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Fault>;
    /// On-disk (compressed) bytes consumed so far, for progress.
    fn raw_pos(&self) -> u64;
    /// Content bytes produced up to the end of the last gzip member or zstd frame that
    /// verified (0 before the first one); plain sources never verify anything.
    fn verified(&self) -> u64 {
        0
    }
    /// Skips `n` content bytes cheaply if the source can (a plain file seeks); returns
    /// the number skipped, or `None` to have the caller read and discard them.
    fn skip(&mut self, _n: u64) -> Option<u64> {
        None
    }
}

fn retry<T>(mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            r => return r,
        }
    }
}

/// A regular file, read up to its length at open with positioned reads. A file that is
/// found shorter than that length (truncated in place, as `copytruncate` rotation
/// does) ends with [`DamageKind::Shrank`]; the bytes of the read that noticed it are
/// not delivered, since they may already belong to the new content.
pub(super) struct FileSrc {
    file: File,
    len: u64,
    pos: u64,
}

impl FileSrc {
    pub(super) fn new(file: File, len: u64) -> FileSrc {
        FileSrc { file, len, pos: 0 }
    }

    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            self.file.read_at(buf, at)
        }
        #[cfg(windows)]
        {
            use std::os::windows::fs::FileExt;
            self.file.seek_read(buf, at)
        }
    }

    fn shrank(&self, at: u64) -> Fault {
        let size = self.file.metadata().map_or(0, |m| m.len());
        Fault::Damage {
            kind: DamageKind::Shrank { at, size },
            detected_at: at,
            unit_start: None,
            detail: String::new(),
        }
    }
}

impl ByteSource for FileSrc {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Fault> {
        if self.pos >= self.len {
            return Ok(0);
        }
        let want = buf.len().min((self.len - self.pos) as usize);
        let at = self.pos;
        let n = retry(|| self.read_at(&mut buf[..want], at)).map_err(Fault::Io)?;
        if n == 0 {
            // End of file before the length it had at open: it shrank.
            return Err(self.shrank(at));
        }
        // A file truncated and written again may still reach past `at`: its length
        // below the one at open tells.
        let now = retry(|| self.file.metadata()).map_err(Fault::Io)?.len();
        if now < self.len {
            return Err(self.shrank(at));
        }
        self.pos += n as u64;
        Ok(n)
    }

    fn raw_pos(&self) -> u64 {
        self.pos
    }

    fn skip(&mut self, n: u64) -> Option<u64> {
        let k = n.min(self.len - self.pos);
        self.pos += k;
        Some(k)
    }
}

/// Uncompressed bytes of a stream (standard input, a pipe).
pub(super) struct StreamSrc {
    inner: Box<dyn Read + Send>,
    pos: u64,
}

impl StreamSrc {
    pub(super) fn new(inner: Box<dyn Read + Send>) -> StreamSrc {
        StreamSrc { inner, pos: 0 }
    }
}

impl ByteSource for StreamSrc {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Fault> {
        let n = retry(|| self.inner.read(buf)).map_err(Fault::Io)?;
        self.pos += n as u64;
        Ok(n)
    }

    fn raw_pos(&self) -> u64 {
        self.pos
    }
}

/// Compressed input, buffered, with the exact count of bytes handed to the decoder.
struct Input {
    inner: Box<dyn Read + Send>,
    buf: Box<[u8]>,
    lo: usize,
    hi: usize,
    eof: bool,
    /// Bytes consumed by the decoder: the compressed offset of `buf[lo]`.
    consumed: u64,
}

impl Input {
    fn new(inner: Box<dyn Read + Send>) -> Input {
        Input {
            inner,
            buf: vec![0u8; 1 << 17].into_boxed_slice(),
            lo: 0,
            hi: 0,
            eof: false,
            consumed: 0,
        }
    }

    /// Makes input available; `false` at the end of the compressed bytes.
    fn fill(&mut self) -> Result<bool, Fault> {
        if self.lo < self.hi {
            return Ok(true);
        }
        if self.eof {
            return Ok(false);
        }
        let n = retry(|| self.inner.read(&mut self.buf)).map_err(Fault::Io)?;
        self.lo = 0;
        self.hi = n;
        if n == 0 {
            self.eof = true;
        }
        Ok(n > 0)
    }

    fn avail(&self) -> &[u8] {
        &self.buf[self.lo..self.hi]
    }

    fn consume(&mut self, n: usize) {
        self.lo += n;
        self.consumed += n as u64;
    }

    fn byte(&mut self) -> Result<Option<u8>, Fault> {
        if !self.fill()? {
            return Ok(None);
        }
        let b = self.buf[self.lo];
        self.consume(1);
        Ok(Some(b))
    }

    fn raw_pos(&self) -> u64 {
        self.consumed + (self.hi - self.lo) as u64
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum GzState {
    Header,
    Body,
    Trailer,
    Done,
}

/// gzip, one member after another (RFC 1952): the deflate data of each member is
/// inflated and its CRC-32 and length are checked against the member's trailer.
pub(super) struct GzipSrc {
    input: Input,
    state: GzState,
    inflate: Decompress,
    crc: Crc,
    member_start: u64,
    members: u64,
    out_total: u64,
    verified: u64,
}

impl GzipSrc {
    pub(super) fn new(inner: Box<dyn Read + Send>) -> GzipSrc {
        GzipSrc {
            input: Input::new(inner),
            state: GzState::Header,
            inflate: Decompress::new(false),
            crc: Crc::new(),
            member_start: 0,
            members: 0,
            out_total: 0,
            verified: 0,
        }
    }

    fn fault(&self, kind: DamageKind, detail: impl Into<String>) -> Fault {
        Fault::Damage {
            kind,
            detected_at: self.input.consumed,
            unit_start: Some(self.member_start),
            detail: detail.into(),
        }
    }

    fn need(&mut self, part: &str) -> Result<u8, Fault> {
        match self.input.byte()? {
            Some(b) => Ok(b),
            None => Err(self.fault(DamageKind::Truncated, format!("it ends inside the {part}"))),
        }
    }

    /// Reads a member header; `false` at a clean end (no more members).
    fn header(&mut self) -> Result<bool, Fault> {
        self.member_start = self.input.consumed;
        let Some(id1) = self.input.byte()? else {
            if self.members == 0 {
                return Err(self.fault(DamageKind::Truncated, "it ends inside the header"));
            }
            return Ok(false);
        };
        let id2 = self.need("header")?;
        if (id1, id2) != (0x1f, 0x8b) {
            let what = if self.members == 0 {
                "not gzip data"
            } else {
                "data after the last complete member that is not a gzip member"
            };
            return Err(self.fault(DamageKind::Corrupt, what));
        }
        let method = self.need("header")?;
        if method != 8 {
            return Err(self.fault(
                DamageKind::Corrupt,
                format!("unknown compression method {method} in the header"),
            ));
        }
        let flags = self.need("header")?;
        if flags & 0xe0 != 0 {
            return Err(self.fault(DamageKind::Corrupt, "reserved flags set in the header"));
        }
        for _ in 0..6 {
            self.need("header")?; // MTIME, XFL, OS
        }
        if flags & 0x04 != 0 {
            let lo = self.need("header")? as usize;
            let hi = self.need("header")? as usize;
            for _ in 0..(lo | hi << 8) {
                self.need("header")?;
            }
        }
        for flag in [0x08, 0x10] {
            // FNAME, FCOMMENT: zero-terminated.
            if flags & flag != 0 {
                while self.need("header")? != 0 {}
            }
        }
        if flags & 0x02 != 0 {
            self.need("header")?;
            self.need("header")?;
        }
        self.inflate.reset(false);
        self.crc.reset();
        Ok(true)
    }

    fn trailer(&mut self) -> Result<(), Fault> {
        let mut t = [0u8; 8];
        for b in &mut t {
            *b = self.need("trailer")?;
        }
        let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        let size = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
        if crc != self.crc.sum() {
            return Err(self.fault(DamageKind::Corrupt, "checksum mismatch"));
        }
        if size != self.crc.amount() {
            return Err(self.fault(DamageKind::Corrupt, "length mismatch"));
        }
        self.members += 1;
        self.verified = self.out_total;
        Ok(())
    }
}

impl ByteSource for GzipSrc {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Fault> {
        loop {
            match self.state {
                GzState::Done => return Ok(0),
                GzState::Header => {
                    self.state = if self.header()? {
                        GzState::Body
                    } else {
                        GzState::Done
                    };
                }
                GzState::Trailer => {
                    self.trailer()?;
                    self.state = GzState::Header;
                }
                GzState::Body => {
                    if !self.input.fill()? {
                        return Err(
                            self.fault(DamageKind::Truncated, "it ends inside the compressed data")
                        );
                    }
                    let (in0, out0) = (self.inflate.total_in(), self.inflate.total_out());
                    let status =
                        self.inflate
                            .decompress(self.input.avail(), buf, FlushDecompress::None);
                    let used = (self.inflate.total_in() - in0) as usize;
                    let made = (self.inflate.total_out() - out0) as usize;
                    self.input.consume(used);
                    let status = status.map_err(|e| {
                        self.fault(DamageKind::Corrupt, format!("invalid deflate data ({e})"))
                    })?;
                    self.crc.update(&buf[..made]);
                    self.out_total += made as u64;
                    if status == Status::StreamEnd {
                        self.state = GzState::Trailer;
                    } else if used == 0 && made == 0 {
                        // Input and output space were both there: no progress means
                        // the decoder cannot go on.
                        return Err(self.fault(
                            DamageKind::Corrupt,
                            "invalid deflate data (the decoder made no progress)",
                        ));
                    }
                    if made > 0 {
                        return Ok(made);
                    }
                }
            }
        }
    }

    fn raw_pos(&self) -> u64 {
        self.input.raw_pos()
    }

    fn verified(&self) -> u64 {
        self.verified
    }
}

/// zstd, frame after frame; the library checks each frame (and its content checksum
/// when the frame has one); a frame's end is the verified point.
pub(super) struct ZstdSrc {
    input: Input,
    dec: zstd::stream::raw::Decoder<'static>,
    in_frame: bool,
    frame_start: u64,
    out_total: u64,
    verified: u64,
}

impl ZstdSrc {
    pub(super) fn new(inner: Box<dyn Read + Send>) -> io::Result<ZstdSrc> {
        Ok(ZstdSrc {
            input: Input::new(inner),
            dec: zstd::stream::raw::Decoder::new()?,
            in_frame: false,
            frame_start: 0,
            out_total: 0,
            verified: 0,
        })
    }

    fn fault(&self, kind: DamageKind, detail: impl Into<String>) -> Fault {
        Fault::Damage {
            kind,
            detected_at: self.input.consumed,
            unit_start: Some(self.frame_start),
            detail: detail.into(),
        }
    }
}

impl ByteSource for ZstdSrc {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Fault> {
        let mut idle = 0;
        loop {
            let more = self.input.fill()?;
            if !more && !self.in_frame {
                return Ok(0);
            }
            let status = self.dec.run_on_buffers(self.input.avail(), buf);
            let status = match status {
                Ok(s) => s,
                Err(e) => return Err(self.fault(DamageKind::Corrupt, e.to_string())),
            };
            self.input.consume(status.bytes_read);
            self.out_total += status.bytes_written as u64;
            if status.bytes_read > 0 || status.bytes_written > 0 {
                idle = 0;
                if status.remaining == 0 {
                    self.in_frame = false;
                    self.verified = self.out_total;
                    self.frame_start = self.input.consumed;
                } else {
                    self.in_frame = true;
                }
            } else if !more {
                return Err(self.fault(DamageKind::Truncated, "it ends inside a frame"));
            } else {
                idle += 1;
                if idle > 2 {
                    return Err(self.fault(
                        DamageKind::Corrupt,
                        "invalid zstd data (the decoder made no progress)",
                    ));
                }
            }
            if status.bytes_written > 0 {
                return Ok(status.bytes_written);
            }
        }
    }

    fn raw_pos(&self) -> u64 {
        self.input.raw_pos()
    }

    fn verified(&self) -> u64 {
        self.verified
    }
}
