//! Reading log bytes: files (positioned reads into bounded windows), gzip, zstd and
//! stdin, cut into line-aligned chunks that carry their first line number.
//!
//! Compression is recognised by magic bytes, never by file name. Memory stays bounded
//! whatever the input size: content is read into windows of [`ReadOptions::window`]
//! bytes (reused once the chunks cut from them are parsed), and a line longer than
//! [`ReadOptions::max_line`] is skipped (reported as an [`Event::LongLine`] with its
//! first `max_line` bytes) without being held in memory.
//!
//! Lines end with `\n` (a `\r` before it is the parser's business), or, in a file whose
//! head holds no `\n` at all but does hold `\r` (classic Mac), with a bare `\r`: the
//! choice is made once per input ([`Reader::terminator`]).
//!
//! What counts as read: the complete lines delivered. A final line without terminator
//! is delivered (and consumed) when the input ended cleanly — a compressed file whose
//! every member/frame verified, a plain file, standard input or a pipe read with
//! [`ReadOptions::hold_unterminated`] off. It is neither delivered nor consumed when the
//! input ended early (a truncated or corrupt stream, a file that shrank) or when a
//! plain file, standard input or a pipe is read with `hold_unterminated` (its writer
//! may still be writing it, or was cut off mid-line); [`Reader::held_back`] says how
//! many bytes were left so.
//!
//! Plain files are not memory-mapped: a file truncated while mapped would kill the
//! process (SIGBUS). One that shrinks while read ends with [`DamageKind::Shrank`].

mod decode;
#[cfg(test)]
mod tests;

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::ops::{Deref, Range};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use decode::{ByteSource, Fault, FileSrc, GzipSrc, StreamSrc, ZstdSrc};

use crate::escape;

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

    /// How the input is named in messages (`file:line: …`). Not escaped: escape it
    /// before printing.
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

    /// What its checksummed unit is called: "gzip member", "zstd frame".
    fn unit(self) -> &'static str {
        match self {
            Compression::None => "file",
            Compression::Gzip => "gzip member",
            Compression::Zstd => "zstd frame",
        }
    }
}

/// What happened to an input that ended early.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DamageKind {
    /// The compressed stream ended inside a gzip member or zstd frame (a copy cut
    /// short, a file still being compressed). The complete lines before were delivered
    /// and are as good as the decoder could tell; the unterminated fragment at the end
    /// was neither delivered nor consumed.
    Truncated,
    /// A checksum or length mismatch, invalid deflate/zstd data, or bytes after a
    /// member that are not a member. Lines delivered after [`Damage::verified`] may be
    /// garbage: nothing past that point can be trusted.
    Corrupt,
    /// A plain file became shorter than it was when opened (truncated in place, as
    /// `copytruncate` rotation does) while being read.
    Shrank {
        /// Content offset of the read that noticed it; nothing from there on was
        /// delivered.
        at: u64,
        /// The file's size when it was noticed.
        size: u64,
    },
}

/// A point of the content at a line boundary: bytes and lines before it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinePoint {
    /// Content bytes from the start of the content.
    pub content_bytes: u64,
    /// Lines in those bytes.
    pub lines: u64,
}

/// The details of a damaged input ([`SourceError::Damaged`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// What happened.
    pub kind: DamageKind,
    /// The input's compression.
    pub compression: Compression,
    /// Where the damage was detected: a compressed byte offset (for a checksum
    /// mismatch, the end of the member's trailer); a content offset for plain files.
    pub detected_at: u64,
    /// Compressed offset where the gzip member or zstd frame in which it was detected
    /// starts (`None` for plain files).
    pub unit_start: Option<u64>,
    /// Content bytes delivered and consumed before the damage (the end of the last
    /// complete line delivered), counted from the start of the content.
    pub content_end: u64,
    /// Lines delivered and consumed before the damage (the same point as `content_end`).
    pub lines_end: u64,
    /// The last verified point: the end of the last complete line inside the last
    /// gzip member or zstd frame whose checks passed (0/0 if none did, as in a
    /// single-member file damaged anywhere). A zstd frame without a content checksum
    /// counts as verified at its end. For plain files, equal to `content_end`/`lines_end`.
    pub verified: LinePoint,
    /// The decoder's words ("checksum mismatch", "invalid deflate data (…)", …).
    pub detail: String,
}

impl Damage {
    fn describe(&self, input: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.compression.name();
        let unit = self.compression.unit();
        let start = self.unit_start.unwrap_or(0);
        match &self.kind {
            DamageKind::Truncated => write!(
                f,
                "{input}: truncated {c} stream: {} of the {unit} starting at compressed byte {start} (noticed at compressed byte {}); the {} complete lines before were read, the unterminated rest was not",
                self.detail, self.detected_at, self.lines_end
            ),
            DamageKind::Corrupt => write!(
                f,
                "{input}: corrupt {c} stream: {} in the {unit} starting at compressed byte {start} (noticed at compressed byte {}); only the first {} lines ({} bytes of content) are verified, the {} lines read after them cannot be trusted",
                self.detail,
                self.detected_at,
                self.verified.lines,
                self.verified.content_bytes,
                self.lines_end.saturating_sub(self.verified.lines)
            ),
            DamageKind::Shrank { at, size } => write!(
                f,
                "{input} shrank to {size} bytes while being read at byte {at} (rotated with copytruncate?); the {} lines before byte {} were read, nothing after",
                self.lines_end, self.content_end
            ),
        }
    }
}

/// Errors while reading an input. Each names the input (escaped for a terminal).
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The input could not be opened.
    #[error("{}: cannot open: {error}", escape::terminal_str(input, 1000))]
    Open {
        /// Which input.
        input: String,
        /// Why (part of the message, not a separate cause: printed once).
        error: io::Error,
    },
    /// The input is a directory.
    #[error(
        "{}: is a directory, not a log file",
        escape::terminal_str(input, 1000)
    )]
    IsDir {
        /// Which input.
        input: String,
    },
    /// Reading failed part-way.
    #[error(
        "{}: read error after {content_offset} bytes of content: {error}",
        escape::terminal_str(input, 1000)
    )]
    Read {
        /// Which input.
        input: String,
        /// Content bytes delivered before the error.
        content_offset: u64,
        /// Why (part of the message).
        error: io::Error,
    },
    /// The input is damaged (compressed stream truncated or corrupt) or changed under
    /// the reader (a file that shrank); the complete lines before were delivered.
    #[error("{}", DamagedMsg(input, damage))]
    Damaged {
        /// Which input.
        input: String,
        /// What, where, and how far the content can be trusted.
        damage: Box<Damage>,
    },
}

struct DamagedMsg<'a>(&'a String, &'a Damage);

impl fmt::Display for DamagedMsg<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.1.describe(&escape::terminal_str(self.0, 1000), f)
    }
}

impl SourceError {
    /// The damage details, if this is [`SourceError::Damaged`].
    pub fn damage(&self) -> Option<&Damage> {
        match self {
            SourceError::Damaged { damage, .. } => Some(damage),
            _ => None,
        }
    }
}

/// Reading options.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// Target chunk size in bytes (chunks end at a line end, so they may be shorter).
    pub chunk_size: usize,
    /// Lines longer than this many bytes (terminator excluded) are not kept; they
    /// become [`Event::LongLine`] (or, inside a chunk, bad lines) carrying their first
    /// `max_line` bytes. Any value is valid, 0 included.
    pub max_line: usize,
    /// Bytes read at once into a reused buffer (default 8 MiB; at least 4 KiB): for
    /// plain files one positioned read per window, for streams capped at four chunks. A
    /// line longer than the window but within `max_line` gets a larger buffer for
    /// itself. A window lives while chunks cut from it are being parsed (the chunks in
    /// flight span a few consecutive windows); the reader keeps two spare for reuse.
    pub window: usize,
    /// For plain files, standard input and pipes: an unterminated final line is not
    /// delivered and not consumed (its writer may still be writing it, or was cut off),
    /// so a later read resumes at its start. Off (the default) it is delivered as a
    /// complete line. Compressed files ignore it (they end verified or damaged).
    pub hold_unterminated: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            chunk_size: 1 << 21,
            max_line: 1 << 20,
            window: 1 << 23,
            hold_unterminated: false,
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
    /// The byte lines end with: `\n`, or `\r` for a CR-only input.
    pub terminator: u8,
}

enum ChunkData {
    Shared(Arc<Vec<u8>>, Range<usize>),
    Owned(Vec<u8>),
}

impl Chunk {
    /// A chunk over owned bytes with `\n` line ends (tests, benches).
    pub fn from_vec(data: Vec<u8>, first_line: u64, offset: u64) -> Chunk {
        Chunk {
            data: ChunkData::Owned(data),
            first_line,
            offset,
            terminator: b'\n',
        }
    }
}

impl Deref for Chunk {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.data {
            ChunkData::Shared(m, r) => &m[r.clone()],
            ChunkData::Owned(v) => v,
        }
    }
}

/// What a [`Reader`] produces.
pub enum Event {
    /// Complete lines (the last chunk of a cleanly ended input may end without a
    /// terminator).
    Chunk(Chunk),
    /// A line longer than `max_line`, skipped.
    LongLine {
        /// Its 1-based line number.
        line: u64,
        /// Its content offset.
        offset: u64,
        /// Its length in bytes (without the terminator).
        len: u64,
        /// Its first `max_line` bytes, verbatim.
        head: Vec<u8>,
    },
}

/// The first bytes of an input, for detection and fingerprints.
pub const HEAD_LEN: usize = 64 * 1024;

/// At most this many bytes of content are looked at to sample lines for detection.
pub const SAMPLE_BUDGET: usize = 4 << 20;

/// Lines up to this long are always considered by [`Sample::lines`].
pub const SAMPLE_MIN_LINE: usize = 4096;

/// The first lines of an input, for format detection ([`Reader::sample`]).
pub struct Sample {
    bytes: Vec<u8>,
    terminator: u8,
    at_end: bool,
    max_line: usize,
}

impl Sample {
    /// Up to `n` non-blank lines from the start: complete lines (and the final one if
    /// the sample reached the end of the content), terminators and a trailing `\r`
    /// removed. Lines longer than [`ReadOptions::max_line`] or [`SAMPLE_MIN_LINE`],
    /// whichever is larger, are skipped, not counted (a tiny `max_line` still lets
    /// ordinary lines tell the format).
    pub fn lines(&self, n: usize) -> Vec<&[u8]> {
        let body = if self.at_end {
            &self.bytes[..]
        } else {
            match memchr::memrchr(self.terminator, &self.bytes) {
                Some(i) => &self.bytes[..i],
                None => &[],
            }
        };
        if body.is_empty() {
            return Vec::new();
        }
        body.split(|&b| b == self.terminator)
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .filter(|l| l.len() <= self.max_line && !l.iter().all(u8::is_ascii_whitespace))
            .take(n)
            .collect()
    }

    /// Whether the input holds nothing but white space (an empty input).
    pub fn is_blank(&self) -> bool {
        self.at_end && self.bytes.iter().all(u8::is_ascii_whitespace)
    }

    /// Bytes looked at.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether no byte was looked at.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The line terminator of the input.
    pub fn terminator(&self) -> u8 {
        self.terminator
    }
}

/// An over-long line being skipped.
struct LongSkip {
    offset: u64,
    len: u64,
    head: Vec<u8>,
}

/// Splits one input into [`Event`]s.
pub struct Reader {
    name: String,
    compression: Compression,
    opts: ReadOptions,
    src: Box<dyn ByteSource>,
    /// A final unterminated line at a clean end is a complete line.
    complete_end: bool,
    content_len: Option<u64>,
    terminator: Option<u8>,
    /// Read from the source for peeking, not yet moved into a window.
    peeked: Vec<u8>,
    /// How much of `peeked` went into windows.
    peek_pos: usize,
    /// The source ended (cleanly or not).
    src_done: bool,
    fault: Option<Fault>,
    win: Arc<Vec<u8>>,
    win_len: usize,
    cur: usize,
    /// Content offset of `win[0]`.
    win_off: u64,
    pool: Vec<Arc<Vec<u8>>>,
    long: Option<LongSkip>,
    consumed: u64,
    next_line: u64,
    start: LinePoint,
    held_back: u64,
    // Line accounting of all content taken from the source, to place verified points.
    acc_total: u64,
    acc_terms: u64,
    acc_last_end: u64,
    acc_seen_verified: u64,
    verified: LinePoint,
    finished: bool,
}

impl Reader {
    /// Opens an input and recognises its compression.
    pub fn open(input: &Input, opts: ReadOptions) -> Result<Reader, SourceError> {
        let name = input.display_name();
        let open_err = |error| SourceError::Open {
            input: name.clone(),
            error,
        };
        match input {
            Input::Stdin => {
                let stdin: Box<dyn Read + Send> = Box::new(io::stdin());
                let hold = opts.hold_unterminated;
                let mut r = Reader::from_stream(name, stdin, opts)?;
                // A producer cut off (ssh, zcat, a pipe) ends the stream as cleanly as a
                // finished one: its last line is complete only if the user says so.
                r.complete_end = !hold;
                Ok(r)
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
                    let complete_end = !opts.hold_unterminated;
                    let mut r =
                        Reader::new(name, compression, opts, Box::new(FileSrc::new(file, len)));
                    r.complete_end = complete_end;
                    r.content_len = Some(len);
                    return Ok(r);
                }
                let rest: Box<dyn Read + Send> =
                    Box::new(io::Cursor::new(magic[..n].to_vec()).chain(file));
                let hold = opts.hold_unterminated;
                let mut r = Reader::from_stream(name, rest, opts)?;
                // A FIFO or device is a stream like stdin; a compressed file is finished.
                if !meta.is_file() {
                    r.complete_end = !hold;
                }
                Ok(r)
            }
        }
    }

    /// A reader over any byte stream (sniffs compression). A final line without
    /// terminator at its clean end is complete.
    pub fn from_stream(
        name: String,
        mut raw: Box<dyn Read + Send>,
        opts: ReadOptions,
    ) -> Result<Reader, SourceError> {
        let mut magic = [0u8; 4];
        let n = read_full(&mut raw, &mut magic).map_err(|error| SourceError::Open {
            input: name.clone(),
            error,
        })?;
        let compression = Compression::sniff(&magic[..n]);
        let chained: Box<dyn Read + Send> =
            Box::new(io::Cursor::new(magic[..n].to_vec()).chain(raw));
        let src: Box<dyn ByteSource> = match compression {
            Compression::None => Box::new(StreamSrc::new(chained)),
            Compression::Gzip => Box::new(GzipSrc::new(chained)),
            Compression::Zstd => {
                Box::new(ZstdSrc::new(chained).map_err(|error| SourceError::Open {
                    input: name.clone(),
                    error,
                })?)
            }
        };
        Ok(Reader::new(name, compression, opts, src))
    }

    fn new(
        name: String,
        compression: Compression,
        opts: ReadOptions,
        src: Box<dyn ByteSource>,
    ) -> Reader {
        Reader {
            name,
            compression,
            opts,
            src,
            complete_end: true,
            content_len: None,
            terminator: None,
            peeked: Vec::new(),
            peek_pos: 0,
            src_done: false,
            fault: None,
            win: Arc::new(Vec::new()),
            win_len: 0,
            cur: 0,
            win_off: 0,
            pool: Vec::new(),
            long: None,
            consumed: 0,
            next_line: 1,
            start: LinePoint::default(),
            held_back: 0,
            acc_total: 0,
            acc_terms: 0,
            acc_last_end: 0,
            acc_seen_verified: 0,
            verified: LinePoint::default(),
            finished: false,
        }
    }

    /// Reads from the source into `peeked` until it holds `want` bytes or the source
    /// ended; `stop` may end it early (it sees all peeked bytes).
    fn peek_until(&mut self, want: usize, mut stop: impl FnMut(&[u8]) -> bool) {
        while self.peeked.len() < want && !self.src_done && !stop(&self.peeked) {
            let old = self.peeked.len();
            let step = (want - old).min(HEAD_LEN);
            self.peeked.resize(old + step, 0);
            match self.src.read(&mut self.peeked[old..]) {
                Ok(0) => {
                    self.peeked.truncate(old);
                    self.src_done = true;
                }
                Ok(n) => self.peeked.truncate(old + n),
                Err(f) => {
                    self.peeked.truncate(old);
                    self.src_done = true;
                    self.fault = Some(f);
                }
            }
        }
    }

    /// Decides the line terminator from the head of the content (once).
    fn terminator_byte(&mut self) -> u8 {
        if let Some(t) = self.terminator {
            return t;
        }
        self.peek_until(HEAD_LEN, |_| false);
        let head = &self.peeked[..self.peeked.len().min(HEAD_LEN)];
        let cr_only =
            memchr::memchr(b'\n', head).is_none() && memchr::memchr(b'\r', head).is_some();
        let t = if cr_only {
            // A '\r' but no '\n' in the head: CR-only, unless a '\n' comes later
            // (a long first line that happens to hold a '\r').
            self.peek_until(SAMPLE_BUDGET, |b| memchr::memchr(b'\n', b).is_some());
            if memchr::memchr(b'\n', &self.peeked).is_some() {
                b'\n'
            } else {
                b'\r'
            }
        } else {
            b'\n'
        };
        self.terminator = Some(t);
        t
    }

    /// The byte this input's lines end with: `\n`, or `\r` when the head of the content
    /// holds `\r` but no `\n`.
    pub fn terminator(&mut self) -> u8 {
        self.terminator_byte()
    }

    /// The first bytes of the content (up to [`HEAD_LEN`], decompressed), for
    /// fingerprints. Consumes nothing: the bytes are delivered again. Call before
    /// reading; a damaged stream yields what came out before the damage
    /// ([`Reader::head_damage`]).
    pub fn peek_head(&mut self) -> Result<Vec<u8>, SourceError> {
        self.terminator_byte();
        if self.peeked.is_empty()
            && matches!(self.fault, Some(Fault::Io(_)))
            && let Some(f) = self.fault_copy()
        {
            return Err(self.error_for(f));
        }
        Ok(self.peeked[..self.peeked.len().min(HEAD_LEN)].to_vec())
    }

    /// The first lines of the content, for format detection: bytes are looked at until
    /// `max_lines` non-blank lines that [`Sample::lines`] keeps were seen, the content
    /// ended, or [`SAMPLE_BUDGET`] bytes were looked at (over-long lines are skipped,
    /// not a reason to stop). Consumes nothing. Call before reading.
    pub fn sample(&mut self, max_lines: usize) -> Result<Sample, SourceError> {
        let t = self.terminator_byte();
        let max_line = self.opts.max_line.max(SAMPLE_MIN_LINE);
        let (mut scanned, mut found) = (0usize, 0usize);
        self.peek_until(SAMPLE_BUDGET, |b| {
            while let Some(i) = memchr::memchr(t, &b[scanned..]) {
                let l = &b[scanned..scanned + i];
                let l = l.strip_suffix(b"\r").unwrap_or(l);
                if l.len() <= max_line && !l.iter().all(u8::is_ascii_whitespace) {
                    found += 1;
                }
                scanned += i + 1;
            }
            found >= max_lines
        });
        if self.peeked.is_empty()
            && matches!(self.fault, Some(Fault::Io(_)))
            && let Some(f) = self.fault_copy()
        {
            return Err(self.error_for(f));
        }
        let at_end = self.src_done;
        Ok(Sample {
            bytes: self.peeked.clone(),
            terminator: t,
            at_end: at_end && self.fault.is_none(),
            max_line,
        })
    }

    /// Skips `bytes` of content holding `lines` lines (already ingested), so reading
    /// and line numbering continue after them. Call before reading.
    pub fn skip_to(&mut self, bytes: u64, lines: u64) {
        self.terminator_byte();
        let mut left = bytes;
        let from_peek = (left as usize).min(self.peeked.len());
        let peeked = std::mem::take(&mut self.peeked);
        self.account(&peeked[..from_peek]);
        self.peeked = peeked[from_peek..].to_vec();
        self.peek_pos = 0;
        left -= from_peek as u64;
        if left > 0
            && !self.src_done
            && let Some(k) = self.src.skip(left)
        {
            self.acc_total += k;
            left -= k;
            if left > 0 {
                self.src_done = true;
            }
        }
        let mut scratch = Vec::new();
        if left > 0 && !self.src_done {
            scratch = vec![0u8; 1 << 20];
        }
        while left > 0 && !self.src_done {
            let want = (left as usize).min(scratch.len());
            match self.src.read(&mut scratch[..want]) {
                Ok(0) => self.src_done = true,
                Ok(n) => {
                    self.account(&scratch[..n]);
                    left -= n as u64;
                }
                Err(f) => {
                    self.src_done = true;
                    self.fault = Some(f);
                }
            }
        }
        self.consumed = bytes - left;
        self.win_off = self.consumed;
        self.next_line = lines + 1;
        self.start = LinePoint {
            content_bytes: self.consumed,
            lines,
        };
        // Resuming is trusting what was read before.
        if self.start.content_bytes > self.verified.content_bytes {
            self.verified = self.start;
        }
    }

    /// The damage found while peeking at the head of the input, if any (it is also
    /// returned by reading, after the lines before it).
    pub fn head_damage(&self) -> Option<SourceError> {
        Some(self.error_for(self.fault_copy()?))
    }

    /// Total content length when known in advance (plain files: the size at open; the
    /// reader never reads past it).
    pub fn content_len(&self) -> Option<u64> {
        self.content_len
    }

    /// The input's compression.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// The input's display name (not escaped).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of the next line to be delivered (1-based); after the last event, one
    /// past the number of lines read.
    pub fn next_line(&self) -> u64 {
        self.next_line
    }

    /// Content bytes consumed so far (including skipped ones): the end of the last line
    /// delivered.
    pub fn content_pos(&self) -> u64 {
        self.consumed
    }

    /// Where reading started ([`Reader::skip_to`], or 0/0).
    pub fn start(&self) -> LinePoint {
        self.start
    }

    /// Bytes after the last line delivered that were neither delivered nor consumed at
    /// the end: an unterminated final line held back ([`ReadOptions::hold_unterminated`])
    /// or the fragment a damaged input ended in. 0 otherwise.
    pub fn held_back(&self) -> u64 {
        self.held_back
    }

    /// Compressed (on-disk) bytes consumed so far, for progress.
    pub fn raw_pos(&self) -> u64 {
        self.src.raw_pos()
    }

    /// Takes `data` (the next content bytes from the source, in order) into the line
    /// accounting that places verified points on line boundaries.
    fn account(&mut self, data: &[u8]) {
        if self.compression == Compression::None {
            self.acc_total += data.len() as u64;
            return;
        }
        let t = self.terminator.unwrap_or(b'\n');
        let a = self.acc_total;
        let v = self.src.verified();
        if v > self.acc_seen_verified && v >= a && v <= a + data.len() as u64 {
            let part = &data[..(v - a) as usize];
            let lines = self.acc_terms + memchr::memchr_iter(t, part).count() as u64;
            let end = memchr::memrchr(t, part).map_or(self.acc_last_end, |i| a + i as u64 + 1);
            self.acc_seen_verified = v;
            if end >= self.verified.content_bytes {
                self.verified = LinePoint {
                    content_bytes: end,
                    lines,
                };
            }
        }
        self.acc_terms += memchr::memchr_iter(t, data).count() as u64;
        if let Some(i) = memchr::memrchr(t, data) {
            self.acc_last_end = a + i as u64 + 1;
        }
        self.acc_total += data.len() as u64;
    }

    fn base_window(&self) -> usize {
        let w = if self.content_len.is_some() {
            self.opts.window
        } else {
            self.opts.window.min(self.opts.chunk_size.saturating_mul(4))
        };
        w.max(4096)
    }

    /// A buffer of at least `cap` bytes that no chunk refers to any more.
    fn take_buffer(&mut self, cap: usize) -> Vec<u8> {
        if let Some(i) = self
            .pool
            .iter()
            .position(|b| b.len() >= cap && Arc::strong_count(b) == 1)
            && let Ok(v) = Arc::try_unwrap(self.pool.swap_remove(i))
        {
            return v;
        }
        vec![0u8; cap]
    }

    /// Moves the undelivered tail of the window into a fresh window and fills it: first
    /// from the peeked bytes, then from the source (one read for a plain file).
    fn refill(&mut self) {
        let tail = self.win_len - self.cur;
        let base = self.base_window();
        let cap = if tail * 2 > base { tail * 2 } else { base };
        let mut buf = self.take_buffer(cap);
        let old = std::mem::take(&mut self.win);
        buf[..tail].copy_from_slice(&old[self.cur..self.win_len]);
        let mut filled = tail;
        let peeked = &self.peeked[self.peek_pos..];
        if !peeked.is_empty() {
            let k = peeked.len().min(cap - filled);
            buf[filled..filled + k].copy_from_slice(&peeked[..k]);
            self.peek_pos += k;
            filled += k;
            if self.peek_pos == self.peeked.len() {
                self.peeked = Vec::new();
                self.peek_pos = 0;
            }
        }
        while filled < cap && !self.src_done {
            match self.src.read(&mut buf[filled..cap]) {
                Ok(0) => self.src_done = true,
                Ok(n) => filled += n,
                Err(f) => {
                    self.src_done = true;
                    self.fault = Some(f);
                }
            }
        }
        self.account(&buf[tail..filled]);
        if !old.is_empty() {
            self.pool.push(old);
            if self.pool.len() > 2 {
                // Keep the ones free for reuse.
                self.pool.sort_by_key(Arc::strong_count);
                self.pool.truncate(2);
            }
        }
        self.win_off += self.cur as u64;
        self.win = Arc::new(buf);
        self.win_len = filled;
        self.cur = 0;
    }

    fn at_end(&self) -> bool {
        self.src_done && self.peek_pos == self.peeked.len()
    }

    fn chunk(&mut self, len: usize) -> Event {
        let offset = self.win_off + self.cur as u64;
        let range = self.cur..self.cur + len;
        self.cur += len;
        self.consumed = offset + len as u64;
        Event::Chunk(Chunk {
            data: ChunkData::Shared(self.win.clone(), range),
            first_line: 0,
            offset,
            terminator: self.terminator.unwrap_or(b'\n'),
        })
    }

    /// The error for `fault`, with the counts as they stand.
    fn error_for(&self, fault: Fault) -> SourceError {
        let input = self.name.clone();
        match fault {
            Fault::Io(error) => SourceError::Read {
                input,
                content_offset: self.consumed,
                error,
            },
            Fault::Damage {
                kind,
                detected_at,
                unit_start,
                detail,
            } => {
                let delivered = LinePoint {
                    content_bytes: self.consumed,
                    lines: self.next_line - 1,
                };
                let verified = if self.compression == Compression::None
                    || self.verified.content_bytes > delivered.content_bytes
                {
                    delivered
                } else {
                    self.verified
                };
                SourceError::Damaged {
                    input,
                    damage: Box::new(Damage {
                        kind,
                        compression: self.compression,
                        detected_at,
                        unit_start,
                        content_end: delivered.content_bytes,
                        lines_end: delivered.lines,
                        verified,
                        detail,
                    }),
                }
            }
        }
    }

    fn fault_copy(&self) -> Option<Fault> {
        Some(match self.fault.as_ref()? {
            Fault::Io(e) => Fault::Io(io::Error::new(e.kind(), e.to_string())),
            Fault::Damage {
                kind,
                detected_at,
                unit_start,
                detail,
            } => Fault::Damage {
                kind: kind.clone(),
                detected_at: *detected_at,
                unit_start: *unit_start,
                detail: detail.clone(),
            },
        })
    }

    /// The end of the input: the pending fault, if any.
    fn end(&mut self) -> Option<Result<Event, SourceError>> {
        self.finished = true;
        let fault = self.fault.take()?;
        self.account(&[]);
        Some(Err(self.error_for(fault)))
    }

    /// A final unterminated piece of `len` bytes at the end of the input (the window
    /// tail, or an over-long line being skipped): delivered if the input ended cleanly
    /// and such a line counts as complete, else held back.
    fn final_piece(&self) -> bool {
        self.fault.is_none() && self.complete_end
    }

    fn next_raw(&mut self) -> Option<Result<Event, SourceError>> {
        let t = self.terminator_byte();
        let max_line = self.opts.max_line;
        let chunk_size = self.opts.chunk_size.max(1);
        loop {
            if self.finished {
                return None;
            }
            if let Some(mut skip) = self.long.take() {
                // Over-long line: look for its end without keeping it.
                let data = &self.win[self.cur..self.win_len];
                if let Some(i) = memchr::memchr(t, data) {
                    skip.len += i as u64;
                    self.cur += i + 1;
                    self.consumed = skip.offset + skip.len + 1;
                    return Some(Ok(Event::LongLine {
                        line: 0,
                        offset: skip.offset,
                        len: skip.len,
                        head: skip.head,
                    }));
                }
                skip.len += data.len() as u64;
                self.cur = self.win_len;
                if self.at_end() {
                    if self.final_piece() {
                        self.consumed = skip.offset + skip.len;
                        self.finished = true;
                        return Some(Ok(Event::LongLine {
                            line: 0,
                            offset: skip.offset,
                            len: skip.len,
                            head: skip.head,
                        }));
                    }
                    self.held_back = skip.len;
                    return self.end();
                }
                self.long = Some(skip);
                self.refill();
                continue;
            }
            let avail = self.win_len - self.cur;
            if avail == 0 {
                if self.at_end() {
                    return self.end();
                }
                self.refill();
                continue;
            }
            let data = &self.win[self.cur..self.win_len];
            let lim = avail.min(chunk_size);
            if let Some(i) = memchr::memrchr(t, &data[..lim]) {
                return Some(Ok(self.chunk(i + 1)));
            }
            if let Some(j) = memchr::memchr(t, &data[lim..]) {
                let len = lim + j;
                if len <= max_line {
                    // A line longer than a chunk but within the limit.
                    return Some(Ok(self.chunk(len + 1)));
                }
                let offset = self.win_off + self.cur as u64;
                let head = data[..max_line].to_vec();
                self.cur += len + 1;
                self.consumed = offset + len as u64 + 1;
                return Some(Ok(Event::LongLine {
                    line: 0,
                    offset,
                    len: len as u64,
                    head,
                }));
            }
            // No terminator in all the bytes at hand.
            if avail > max_line {
                let offset = self.win_off + self.cur as u64;
                self.long = Some(LongSkip {
                    offset,
                    len: 0,
                    head: data[..max_line].to_vec(),
                });
                continue;
            }
            if !self.at_end() {
                self.refill();
                continue;
            }
            // The final, unterminated line.
            if self.final_piece() {
                self.finished = true;
                return Some(Ok(self.chunk(avail)));
            }
            self.held_back = avail as u64;
            self.cur = self.win_len;
            return self.end();
        }
    }

    /// The next event, `None` at the end.
    pub fn next_event(&mut self) -> Option<Result<Event, SourceError>> {
        let ev = self.next_raw()?;
        let t = self.terminator.unwrap_or(b'\n');
        match ev {
            Ok(mut ev) => {
                match &mut ev {
                    Event::Chunk(c) => {
                        c.first_line = self.next_line;
                        let n = memchr::memchr_iter(t, c).count() as u64;
                        let trailing = u64::from(c.last().is_some_and(|&b| b != t));
                        self.next_line += n + trailing;
                    }
                    Event::LongLine { line, .. } => {
                        *line = self.next_line;
                        self.next_line += 1;
                    }
                }
                Some(Ok(ev))
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

/// Returns the path of an input if it is a file.
pub fn input_path(input: &Input) -> Option<&Path> {
    match input {
        Input::Path(p) => Some(p),
        Input::Stdin => None,
    }
}
