//! Reading log bytes: files (memory-mapped in bounded windows), gzip, zstd and stdin,
//! cut into line-aligned chunks that carry their first line number.
//!
//! Compression is recognised by magic bytes, never by file name. Memory stays bounded
//! whatever the input size: plain files are mapped a window at a time, streams are read
//! into fixed-size buffers, and a line longer than [`ReadOptions::max_line`] is skipped
//! (reported as an [`Event::LongLine`]) without being held in memory.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::ops::{Deref, Range};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::{Mmap, MmapOptions};

/// Where log bytes come from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Input {
    /// A file on disk.
    Path(PathBuf),
    /// Standard input (`-`).
    Stdin,
}

impl Input {
    /// `-` means stdin, anything else a path.
    pub fn from_arg(s: &str) -> Input {
        if s == "-" {
            Input::Stdin
        } else {
            Input::Path(PathBuf::from(s))
        }
    }

    /// How the input is named in messages (`file:line: …`).
    pub fn display_name(&self) -> String {
        match self {
            Input::Path(p) => p.display().to_string(),
            Input::Stdin => "<stdin>".to_string(),
        }
    }
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display_name())
    }
}

/// Compression of an input, recognised by its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Plain bytes.
    None,
    /// gzip (`1f 8b`), possibly several members concatenated.
    Gzip,
    /// zstd (`28 b5 2f fd`), possibly several frames.
    Zstd,
}

impl Compression {
    /// Recognise compression from the first bytes of an input.
    pub fn sniff(head: &[u8]) -> Compression {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }

    /// Short lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "plain",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

/// Errors while reading an input. Each names the input.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The input could not be opened.
    #[error("{input}: cannot open: {source}")]
    Open {
        /// Which input.
        input: String,
        /// Why.
        source: io::Error,
    },
    /// The input is a directory.
    #[error("{input}: is a directory, not a log file")]
    IsDir {
        /// Which input.
        input: String,
    },
    /// Reading failed part-way.
    #[error("{input}: read error after {content_offset} bytes of content: {source}")]
    Read {
        /// Which input.
        input: String,
        /// Decompressed bytes read before the error.
        content_offset: u64,
        /// Why.
        source: io::Error,
    },
    /// A compressed input ended early or is corrupt; the complete lines before the
    /// damage were delivered.
    #[error(
        "{input}: {compression} stream is truncated or corrupt at compressed byte {compressed_offset} (after {content_offset} bytes of content): {detail}"
    )]
    Damaged {
        /// Which input.
        input: String,
        /// Which compression.
        compression: &'static str,
        /// Bytes of the compressed file consumed when the damage was found.
        compressed_offset: u64,
        /// Decompressed bytes delivered before the damage.
        content_offset: u64,
        /// The decoder's message.
        detail: String,
    },
}

/// Reading options.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// Target chunk size in bytes (chunks end at a newline, so they may be shorter).
    pub chunk_size: usize,
    /// Lines longer than this are not kept; they become [`Event::LongLine`].
    pub max_line: usize,
    /// Size of the mapping window for plain files.
    pub window: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            chunk_size: 1 << 21,
            max_line: 1 << 20,
            window: 1 << 25,
        }
    }
}

/// Line-aligned bytes of an input.
pub struct Chunk {
    data: ChunkData,
    /// 1-based number of the chunk's first line in the input.
    pub first_line: u64,
    /// Offset of the chunk's first byte in the (decompressed) content.
    pub offset: u64,
}

enum ChunkData {
    Mapped(Arc<Mmap>, Range<usize>),
    Owned(Vec<u8>),
}

impl Chunk {
    /// A chunk over owned bytes (tests, benches).
    pub fn from_vec(data: Vec<u8>, first_line: u64, offset: u64) -> Chunk {
        Chunk {
            data: ChunkData::Owned(data),
            first_line,
            offset,
        }
    }
}

impl Deref for Chunk {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.data {
            ChunkData::Mapped(m, r) => &m[r.clone()],
            ChunkData::Owned(v) => v,
        }
    }
}

/// What a [`Reader`] produces.
pub enum Event {
    /// Complete lines (the last chunk of an input may end without a newline).
    Chunk(Chunk),
    /// A line longer than `max_line`, skipped.
    LongLine {
        /// Its 1-based line number.
        line: u64,
        /// Its content offset.
        offset: u64,
        /// Its length in bytes (without the newline).
        len: u64,
        /// Its first bytes, for the message.
        head: Vec<u8>,
    },
}

/// Splits one input into [`Event`]s.
pub struct Reader {
    name: String,
    compression: Compression,
    opts: ReadOptions,
    inner: ReaderKind,
    next_line: u64,
    finished: bool,
}

enum ReaderKind {
    Mapped(MappedFile),
    Stream(StreamReader),
}

/// The first bytes of an input, for detection and fingerprints.
pub const HEAD_LEN: usize = 64 * 1024;

impl Reader {
    /// Opens an input and recognises its compression.
    pub fn open(input: &Input, opts: ReadOptions) -> Result<Reader, SourceError> {
        let name = input.display_name();
        let open_err = |source| SourceError::Open {
            input: name.clone(),
            source,
        };
        match input {
            Input::Stdin => {
                let stdin: Box<dyn Read + Send> = Box::new(io::stdin());
                Reader::from_stream(name, stdin, opts)
            }
            Input::Path(path) => {
                let meta = std::fs::metadata(path).map_err(open_err)?;
                if meta.is_dir() {
                    return Err(SourceError::IsDir { input: name });
                }
                let mut file = File::open(path).map_err(open_err)?;
                let mut magic = [0u8; 4];
                let n = read_full(&mut file, &mut magic).map_err(open_err)?;
                let compression = Compression::sniff(&magic[..n]);
                if compression == Compression::None && meta.is_file() {
                    let len = meta.len();
                    let mapped = MappedFile {
                        file,
                        len,
                        pos: 0,
                        window: None,
                    };
                    return Ok(Reader {
                        name,
                        compression,
                        next_line: 1,
                        opts,
                        inner: ReaderKind::Mapped(mapped),
                        finished: false,
                    });
                }
                let rest: Box<dyn Read + Send> =
                    Box::new(io::Cursor::new(magic[..n].to_vec()).chain(file));
                Reader::from_stream(name, rest, opts)
            }
        }
    }

    /// A reader over any byte stream (sniffs compression).
    pub fn from_stream(
        name: String,
        mut raw: Box<dyn Read + Send>,
        opts: ReadOptions,
    ) -> Result<Reader, SourceError> {
        let mut magic = [0u8; 4];
        let n = read_full(&mut raw, &mut magic).map_err(|source| SourceError::Open {
            input: name.clone(),
            source,
        })?;
        let compression = Compression::sniff(&magic[..n]);
        let counted =
            CountingReader::new(Box::new(io::Cursor::new(magic[..n].to_vec()).chain(raw)));
        let counter = counted.count.clone();
        let decoded: Box<dyn Read + Send> = match compression {
            Compression::None => Box::new(counted),
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(counted)),
            Compression::Zstd => {
                let dec = zstd::stream::read::Decoder::new(counted).map_err(|source| {
                    SourceError::Open {
                        input: name.clone(),
                        source,
                    }
                })?;
                Box::new(dec)
            }
        };
        let stream = StreamReader {
            src: decoded,
            counter,
            carry: Vec::new(),
            content_pos: 0,
            eof: false,
            to_skip: 0,
            pending_error: None,
        };
        Ok(Reader {
            name,
            compression,
            next_line: 1,
            opts,
            inner: ReaderKind::Stream(stream),
            finished: false,
        })
    }

    /// The first bytes of the content (up to [`HEAD_LEN`], decompressed), for format
    /// detection and fingerprints. Consumes nothing: the bytes are delivered again.
    /// Call before reading; a stream damaged inside its head yields what came out.
    pub fn peek_head(&mut self) -> Result<Vec<u8>, SourceError> {
        match &mut self.inner {
            ReaderKind::Mapped(m) => {
                let n = ((m.len - m.pos) as usize).min(HEAD_LEN);
                if n == 0 {
                    return Ok(Vec::new());
                }
                let (base, map) = m.map(m.pos, n as u64).map_err(|source| SourceError::Read {
                    input: self.name.clone(),
                    content_offset: 0,
                    source,
                })?;
                let from = (m.pos - base) as usize;
                Ok(map[from..from + n].to_vec())
            }
            ReaderKind::Stream(s) => {
                if s.carry.len() < HEAD_LEN && !s.eof {
                    let old = s.carry.len();
                    s.carry.resize(HEAD_LEN, 0);
                    let mut n = old;
                    loop {
                        match s.src.read(&mut s.carry[n..]) {
                            Ok(0) => {
                                s.eof = true;
                                break;
                            }
                            Ok(k) => {
                                n += k;
                                if n == HEAD_LEN {
                                    break;
                                }
                            }
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => {
                                s.eof = true;
                                s.pending_error = Some(SourceError::Damaged {
                                    input: self.name.clone(),
                                    compression: self.compression.name(),
                                    compressed_offset: s.counter.load(),
                                    content_offset: n as u64,
                                    detail: e.to_string(),
                                });
                                break;
                            }
                        }
                    }
                    s.carry.truncate(n);
                }
                Ok(s.carry[..s.carry.len().min(HEAD_LEN)].to_vec())
            }
        }
    }

    /// Skips `bytes` of content holding `lines` lines (already ingested), so reading
    /// and line numbering continue after them. Call before reading.
    pub fn skip_to(&mut self, bytes: u64, lines: u64) {
        match &mut self.inner {
            ReaderKind::Mapped(m) => m.pos = bytes.min(m.len),
            ReaderKind::Stream(s) => {
                let from_carry = (bytes as usize).min(s.carry.len());
                s.carry.drain(..from_carry);
                s.content_pos += from_carry as u64;
                s.to_skip = bytes - from_carry as u64;
            }
        }
        self.next_line = lines + 1;
    }

    /// The damage found while peeking at the head of a compressed stream, if any (it
    /// is also returned by reading, after the lines before it).
    pub fn head_damage(&self) -> Option<&SourceError> {
        match &self.inner {
            ReaderKind::Stream(s) => s.pending_error.as_ref(),
            ReaderKind::Mapped(_) => None,
        }
    }

    /// Total content length when known in advance (plain files).
    pub fn content_len(&self) -> Option<u64> {
        match &self.inner {
            ReaderKind::Mapped(m) => Some(m.len),
            ReaderKind::Stream(_) => None,
        }
    }

    /// The input's compression.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// The input's display name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of the next line to be delivered (1-based); after the last event, one
    /// past the number of lines read.
    pub fn next_line(&self) -> u64 {
        self.next_line
    }

    /// Content bytes consumed so far (including skipped ones).
    pub fn content_pos(&self) -> u64 {
        match &self.inner {
            ReaderKind::Mapped(m) => m.pos,
            ReaderKind::Stream(s) => s.content_pos,
        }
    }

    /// Compressed (on-disk) bytes consumed so far, for progress.
    pub fn raw_pos(&self) -> u64 {
        match &self.inner {
            ReaderKind::Mapped(m) => m.pos,
            ReaderKind::Stream(s) => s.counter.load(),
        }
    }

    /// The next event, `None` at the end.
    pub fn next_event(&mut self) -> Option<Result<Event, SourceError>> {
        if self.finished {
            return None;
        }
        let r = match &mut self.inner {
            ReaderKind::Mapped(m) => m.next(&self.opts, &self.name),
            ReaderKind::Stream(s) => s.next(&self.opts, &self.name, self.compression),
        };
        match r {
            Ok(Some(mut ev)) => {
                match &mut ev {
                    Event::Chunk(c) => {
                        c.first_line = self.next_line;
                        let nl = memchr::memchr_iter(b'\n', c).count() as u64;
                        let trailing = if c.last().is_some_and(|&b| b != b'\n') {
                            1
                        } else {
                            0
                        };
                        self.next_line += nl + trailing;
                    }
                    Event::LongLine { line, .. } => {
                        *line = self.next_line;
                        self.next_line += 1;
                    }
                }
                Some(Ok(ev))
            }
            Ok(None) => {
                self.finished = true;
                None
            }
            Err(e) => {
                self.finished = true;
                Some(Err(e))
            }
        }
    }
}

impl Iterator for Reader {
    type Item = Result<Event, SourceError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_event()
    }
}

fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A plain file mapped one window at a time.
struct MappedFile {
    file: File,
    len: u64,
    pos: u64,
    window: Option<(u64, Arc<Mmap>)>,
}

fn page_size() -> u64 {
    4096
}

impl MappedFile {
    fn map(&mut self, start: u64, want: u64) -> io::Result<(u64, Arc<Mmap>)> {
        let aligned = start - start % page_size();
        let len = (self.len - aligned).min(want + (start - aligned));
        // SAFETY: the mapping is read-only and private to this process. If another
        // process truncates the file while it is mapped, reads may fault (SIGBUS); the
        // same hazard every mmap-based reader (ripgrep, …) accepts. Log files are
        // appended to, not truncated in place, by the servers we read.
        let map = unsafe {
            MmapOptions::new()
                .offset(aligned)
                .len(len as usize)
                .map(&self.file)?
        };
        #[cfg(unix)]
        {
            let _ = map.advise(memmap2::Advice::Sequential);
        }
        Ok((aligned, Arc::new(map)))
    }

    fn next(&mut self, opts: &ReadOptions, name: &str) -> Result<Option<Event>, SourceError> {
        if self.pos >= self.len {
            return Ok(None);
        }
        let pos = self.pos;
        let err = |source| SourceError::Read {
            input: name.to_string(),
            content_offset: pos,
            source,
        };
        // Reuse the current window if it still holds a chunk's worth past `pos`.
        let need_new = match &self.window {
            Some((base, m)) => {
                let end = base + m.len() as u64;
                end < self.len && end - self.pos < opts.chunk_size as u64 || self.pos >= end
            }
            None => true,
        };
        if need_new {
            self.window = None;
            let w = self.map(self.pos, opts.window as u64).map_err(err)?;
            self.window = Some(w);
        }
        let (base, map) = self.window.clone().expect("window mapped");
        let win_end = base + map.len() as u64;
        let at_eof = win_end >= self.len;
        let start = (self.pos - base) as usize;
        let limit = (start + opts.chunk_size).min(map.len());
        let slice = &map[start..limit];
        let cut = if limit == map.len() && at_eof {
            Some(slice.len())
        } else {
            memchr::memrchr(b'\n', slice).map(|i| i + 1)
        };
        match cut {
            Some(n) => {
                let range = start..start + n;
                let chunk = Chunk {
                    data: ChunkData::Mapped(map.clone(), range),
                    first_line: 0,
                    offset: self.pos,
                };
                self.pos += n as u64;
                Ok(Some(Event::Chunk(chunk)))
            }
            None => {
                // No newline within a chunk's worth of bytes: look for it further on.
                let rest = &map[start..];
                if let Some(i) = memchr::memchr(b'\n', rest)
                    && i <= opts.max_line
                {
                    // A normal line that merely straddles the chunk size.
                    let range = start..start + i + 1;
                    let chunk = Chunk {
                        data: ChunkData::Mapped(map.clone(), range),
                        first_line: 0,
                        offset: self.pos,
                    };
                    self.pos += i as u64 + 1;
                    return Ok(Some(Event::Chunk(chunk)));
                }
                // Over-long line: find its end window by window without keeping it.
                let offset = self.pos;
                let head = rest[..rest.len().min(200)].to_vec();
                let mut scan = self.pos;
                let end = loop {
                    let (b, m) = self.map(scan, opts.window as u64).map_err(err)?;
                    let from = (scan - b) as usize;
                    if let Some(i) = memchr::memchr(b'\n', &m[from..]) {
                        break Some(scan + i as u64);
                    }
                    scan = b + m.len() as u64;
                    if scan >= self.len {
                        break None;
                    }
                };
                let (line_end, next) = match end {
                    Some(e) => (e, e + 1),
                    None => (self.len, self.len),
                };
                let len = line_end - offset;
                self.pos = next;
                self.window = None;
                if (len as usize) <= opts.max_line {
                    // Long for a chunk but within the limit: map it whole.
                    let (b, m) = self.map(offset, next - offset).map_err(err)?;
                    let from = (offset - b) as usize;
                    let range = from..from + (next - offset) as usize;
                    return Ok(Some(Event::Chunk(Chunk {
                        data: ChunkData::Mapped(m, range),
                        first_line: 0,
                        offset,
                    })));
                }
                Ok(Some(Event::LongLine {
                    line: 0,
                    offset,
                    len,
                    head,
                }))
            }
        }
    }
}

/// A decoded byte stream cut into owned chunks.
struct StreamReader {
    src: Box<dyn Read + Send>,
    counter: Counter,
    carry: Vec<u8>,
    content_pos: u64,
    eof: bool,
    to_skip: u64,
    pending_error: Option<SourceError>,
}

impl StreamReader {
    fn next(
        &mut self,
        opts: &ReadOptions,
        name: &str,
        compression: Compression,
    ) -> Result<Option<Event>, SourceError> {
        let damaged = |e: io::Error, counter: &Counter, pos: u64| -> SourceError {
            if compression == Compression::None {
                SourceError::Read {
                    input: name.to_string(),
                    content_offset: pos,
                    source: e,
                }
            } else {
                SourceError::Damaged {
                    input: name.to_string(),
                    compression: compression.name(),
                    compressed_offset: counter.load(),
                    content_offset: pos,
                    detail: e.to_string(),
                }
            }
        };
        if self.carry.is_empty()
            && let Some(e) = self.pending_error.take()
        {
            return Err(e);
        }
        // Skip already-ingested content.
        while self.to_skip > 0 {
            let mut buf = vec![0u8; (self.to_skip as usize).min(1 << 20)];
            let n = match self.src.read(&mut buf) {
                Ok(0) => {
                    self.to_skip = 0;
                    break;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(damaged(e, &self.counter, self.content_pos)),
            };
            self.to_skip -= n as u64;
            self.content_pos += n as u64;
        }
        loop {
            // Fill a buffer of about chunk_size, starting with the carried partial line.
            let mut buf = std::mem::take(&mut self.carry);
            let target = opts.chunk_size.max(buf.len() + 4096);
            while !self.eof && buf.len() < target {
                let old = buf.len();
                buf.resize(target, 0);
                match self.src.read(&mut buf[old..]) {
                    Ok(0) => {
                        buf.truncate(old);
                        self.eof = true;
                    }
                    Ok(n) => buf.truncate(old + n),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => buf.truncate(old),
                    Err(e) => {
                        buf.truncate(old);
                        // Deliver the complete lines before the damage, then the error.
                        let cut = memchr::memrchr(b'\n', &buf).map(|i| i + 1).unwrap_or(0);
                        let pos = self.content_pos + cut as u64;
                        if cut > 0 {
                            buf.truncate(cut);
                            let offset = self.content_pos;
                            self.content_pos += cut as u64;
                            self.eof = true;
                            self.carry.clear();
                            self.pending_error = Some(damaged(e, &self.counter, pos));
                            return Ok(Some(Event::Chunk(Chunk {
                                data: ChunkData::Owned(buf),
                                first_line: 0,
                                offset,
                            })));
                        }
                        return Err(damaged(e, &self.counter, pos));
                    }
                }
            }
            if buf.is_empty() {
                return Ok(None);
            }
            let cut = if self.eof {
                Some(buf.len())
            } else {
                memchr::memrchr(b'\n', &buf).map(|i| i + 1)
            };
            match cut {
                Some(n) => {
                    self.carry = buf.split_off(n);
                    let offset = self.content_pos;
                    self.content_pos += n as u64;
                    // An over-long line may hide inside a chunk that also has newlines;
                    // the parser rejects it by length, so nothing unbounded is kept.
                    return Ok(Some(Event::Chunk(Chunk {
                        data: ChunkData::Owned(buf),
                        first_line: 0,
                        offset,
                    })));
                }
                None if buf.len() >= opts.max_line => {
                    // No newline in more than max_line bytes: skip to the next newline.
                    let offset = self.content_pos;
                    let head = buf[..200.min(buf.len())].to_vec();
                    let mut len = buf.len() as u64;
                    drop(buf);
                    let mut tmp = vec![0u8; 1 << 16];
                    loop {
                        let n = match self.src.read(&mut tmp) {
                            Ok(0) => {
                                self.eof = true;
                                break;
                            }
                            Ok(n) => n,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                            Err(e) => {
                                return Err(damaged(e, &self.counter, self.content_pos + len));
                            }
                        };
                        if let Some(i) = memchr::memchr(b'\n', &tmp[..n]) {
                            len += i as u64;
                            self.carry = tmp[i + 1..n].to_vec();
                            self.content_pos += len + 1;
                            return Ok(Some(Event::LongLine {
                                line: 0,
                                offset,
                                len,
                                head,
                            }));
                        }
                        len += n as u64;
                    }
                    self.content_pos += len;
                    return Ok(Some(Event::LongLine {
                        line: 0,
                        offset,
                        len,
                        head,
                    }));
                }
                None => {
                    // A partial line shorter than max_line: read more.
                    self.carry = buf;
                }
            }
        }
    }
}

/// Counts bytes read through it (compressed offsets for messages and progress).
struct CountingReader {
    inner: Box<dyn Read + Send>,
    count: Counter,
}

#[derive(Clone, Default)]
struct Counter(Arc<std::sync::atomic::AtomicU64>);

impl Counter {
    fn load(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl CountingReader {
    fn new(inner: Box<dyn Read + Send>) -> CountingReader {
        CountingReader {
            inner,
            count: Counter::default(),
        }
    }
}

impl Read for CountingReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count
            .0
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// Returns the path of an input if it is a file.
pub fn input_path(input: &Input) -> Option<&Path> {
    match input {
        Input::Path(p) => Some(p),
        Input::Stdin => None,
    }
}
