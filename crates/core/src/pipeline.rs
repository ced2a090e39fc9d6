//! The parallel parse pipeline: one reader thread (mapping or decompressing), parse
//! workers on every core, and in-order delivery of [`Batch`]es to the caller.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_channel::bounded;

use crate::batch::{BadLine, Batch};
use crate::parse::{Format, Layered, LayoutCounts, LineParser, ParseOptions};
use crate::source::{
    Chunk, Compression, Damage, DamageKind, Event, ReadOptions, Reader, SourceError,
};

/// How to run the pipeline.
#[derive(Clone, Debug, Default)]
pub struct PipelineOptions {
    /// Parse threads (0 = one per core).
    pub threads: usize,
    /// Reading options (chunk size, line limit, skip).
    pub read: ReadOptions,
    /// Parser options.
    pub parse: ParseOptions,
    /// Raw on-disk bytes read so far, for progress bars.
    pub progress: Option<Arc<AtomicU64>>,
}

/// What one input yielded.
#[derive(Debug, Default)]
pub struct InputStats {
    /// Lines read (records + bad + skipped).
    pub lines: u64,
    /// Records parsed.
    pub records: u64,
    /// Bad lines.
    pub bad: u64,
    /// Blank lines and format directives.
    pub skipped: u64,
    /// Content bytes consumed, counted from the start of the content (skipped ones
    /// included): the end of the last complete line delivered (an unterminated last
    /// line counts only when the input ended cleanly and it was not held back). Where a
    /// later ingest of the same content resumes — except for a corrupt input, see
    /// [`InputStats::trusted_end`].
    pub content_end: u64,
    /// Lines consumed from the start of the content (skipped ones included).
    pub lines_end: u64,
    /// Where reading started (the resume point given to `Reader::skip_to`; 0 if none).
    pub start_bytes: u64,
    /// Lines before `start_bytes`.
    pub start_lines: u64,
    /// Bytes after `content_end` that were neither delivered nor consumed: an
    /// unterminated final line of a plain file read with
    /// [`ReadOptions::hold_unterminated`] (its writer may still be writing it; the next
    /// read starts with it), or the fragment a damaged input ended in. 0 if none.
    pub held_back_bytes: u64,
    /// The input's compression.
    pub compression: Option<Compression>,
    /// Lines taken by each fallback layout of the CLF family (a file mixing combined,
    /// common and vhost lines); [`LayoutCounts::named`] gives records per layout.
    pub layouts: LayoutCounts,
    /// The input ended early: a damaged compressed stream or a file that shrank
    /// ([`SourceError::Damaged`], see [`InputStats::damage_info`]), or a read error after
    /// some lines. The complete lines before it were delivered.
    pub damage: Option<SourceError>,
}

impl InputStats {
    /// The details of the damage, if the input ended with [`SourceError::Damaged`].
    pub fn damage_info(&self) -> Option<&Damage> {
        self.damage.as_ref()?.damage()
    }

    /// How far the delivered content can be trusted, as (content bytes, lines): for a
    /// [`DamageKind::Corrupt`] input the last verified point (never before
    /// `start_bytes`/`start_lines`), otherwise `content_end`/`lines_end`. Rows with a
    /// line number above the second value must be dropped; the pair is the resume point
    /// to record.
    pub fn trusted_end(&self) -> (u64, u64) {
        match self.damage_info() {
            Some(d) if d.kind == DamageKind::Corrupt => {
                if d.verified.content_bytes >= self.start_bytes {
                    (d.verified.content_bytes, d.verified.lines)
                } else {
                    (self.start_bytes, self.start_lines)
                }
            }
            _ => (self.content_end, self.lines_end),
        }
    }
}

/// Reason given for lines over the length limit.
pub const LONG_LINE: &str = "line longer than the limit";

/// Parses one opened input with `format`, calling `sink` with each batch in input order.
///
/// Returns an error only when the input cannot be opened or read at all; damage in a
/// compressed stream ends the input early and is reported in [`InputStats::damage`].
/// If `sink` breaks, reading stops and the stats cover what was delivered.
pub fn run<F>(
    reader: Reader,
    format: &Format,
    opts: &PipelineOptions,
    sink: F,
) -> Result<InputStats, SourceError>
where
    F: FnMut(Batch) -> ControlFlow<()>,
{
    run_map(reader, format, opts, |b| b, sink)
}

/// Counts of one batch, taken before it is mapped.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    lines: u64,
    records: u64,
    bad: u64,
    skipped: u64,
}

/// Like [`run`], but each batch is first passed through `map` on the parse workers (in
/// parallel), and `sink` receives the mapped values in input order. Use it to move
/// per-batch work (conversions, encodings) off the consuming thread.
pub fn run_map<T, M, F>(
    mut reader: Reader,
    format: &Format,
    opts: &PipelineOptions,
    map: M,
    mut sink: F,
) -> Result<InputStats, SourceError>
where
    T: Send,
    M: Fn(Batch) -> T + Sync,
    F: FnMut(T) -> ControlFlow<()>,
{
    let compression = reader.compression();
    let threads = if opts.threads == 0 {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    } else {
        opts.threads
    };
    // Formats whose parser carries state from line to line (W3C `#Fields`) run on one
    // worker so that state follows the file.
    let threads = if format.is_stateful() { 1 } else { threads };
    let max_line = opts.read.max_line;

    let (chunk_tx, chunk_rx) = bounded::<(u64, Work)>(threads * 2);
    let (batch_tx, batch_rx) = bounded::<(u64, Counts, T)>(threads * 2);
    let start = reader.start();
    let mut stats = InputStats {
        compression: Some(compression),
        start_bytes: start.content_bytes,
        start_lines: start.lines,
        ..InputStats::default()
    };

    std::thread::scope(|scope| {
        // Reader.
        let progress = opts.progress.clone();
        let reader_handle = scope.spawn(move || {
            let mut seq = 0u64;
            let mut last_raw = 0u64;
            let mut damage = None;
            while let Some(ev) = reader.next_event() {
                if let Some(p) = &progress {
                    let raw = reader.raw_pos();
                    p.fetch_add(raw.saturating_sub(last_raw), Ordering::Relaxed);
                    last_raw = raw;
                }
                let work = match ev {
                    Ok(Event::Chunk(c)) => Work::Chunk(c),
                    Ok(Event::LongLine {
                        line, len, head, ..
                    }) => Work::Long { line, len, head },
                    Err(e) => {
                        damage = Some(e);
                        break;
                    }
                };
                if chunk_tx.send((seq, work)).is_err() {
                    break;
                }
                seq += 1;
            }
            drop(chunk_tx);
            let end = (reader.content_pos(), reader.next_line() - 1);
            (end, reader.held_back(), damage)
        });

        // Workers.
        let mut workers = Vec::with_capacity(threads);
        for _ in 0..threads {
            let rx = chunk_rx.clone();
            let tx = batch_tx.clone();
            let mut parser = Layered::new(format, &opts.parse);
            let map = &map;
            workers.push(scope.spawn(move || {
                for (seq, work) in rx {
                    let batch = match work {
                        Work::Chunk(c) => parse_chunk(parser.as_dyn(), &c, max_line),
                        Work::Long { line, len, head } => {
                            let mut b = Batch {
                                lines: 1,
                                ..Batch::default()
                            };
                            let _ = len;
                            b.bad.push(BadLine {
                                line,
                                reason: LONG_LINE,
                                raw: head,
                            });
                            b
                        }
                    };
                    let counts = Counts {
                        lines: batch.lines,
                        records: batch.len() as u64,
                        bad: batch.bad.len() as u64,
                        skipped: batch.skipped,
                    };
                    if tx.send((seq, counts, map(batch))).is_err() {
                        break;
                    }
                }
                parser.counts()
            }));
        }
        drop(chunk_rx);
        drop(batch_tx);

        // In-order delivery.
        let mut pending: BTreeMap<u64, (Counts, T)> = BTreeMap::new();
        let mut next = 0u64;
        let mut stopped = false;
        for (seq, counts, item) in batch_rx.iter() {
            if stopped {
                continue;
            }
            pending.insert(seq, (counts, item));
            while let Some((c, item)) = pending.remove(&next) {
                next += 1;
                stats.lines += c.lines;
                stats.records += c.records;
                stats.bad += c.bad;
                stats.skipped += c.skipped;
                if sink(item).is_break() {
                    stopped = true;
                    break;
                }
            }
        }
        for w in workers {
            stats.layouts.add(&w.join().expect("parse worker"));
        }
        let ((content_end, lines_end), held_back, damage) =
            reader_handle.join().expect("reader thread");
        stats.content_end = content_end;
        stats.lines_end = lines_end;
        stats.held_back_bytes = held_back;
        stats.damage = damage;
    });
    match stats.damage.take() {
        Some(e @ SourceError::Damaged { .. }) => stats.damage = Some(e),
        Some(e) if stats.lines == 0 => return Err(e),
        other => stats.damage = other,
    }
    Ok(stats)
}

enum Work {
    Chunk(Chunk),
    Long { line: u64, len: u64, head: Vec<u8> },
}

/// Parses the lines of one chunk. A line longer than `max_line` bytes is a bad line
/// whose `raw` is its first `max_line` bytes (as [`Event::LongLine`] carries); every
/// other bad line's `raw` is the line verbatim (without its terminator and a `\r`
/// before it).
pub fn parse_chunk(parser: &mut dyn LineParser, chunk: &Chunk, max_line: usize) -> Batch {
    let mut batch = Batch::default();
    let data: &[u8] = chunk;
    let t = chunk.terminator;
    let mut line_no = chunk.first_line;
    let mut start = 0usize;
    while start < data.len() {
        let end = memchr::memchr(t, &data[start..]).map_or(data.len(), |i| start + i);
        let mut line = &data[start..end];
        if let [rest @ .., b'\r'] = line {
            line = rest;
        }
        batch.lines += 1;
        if line.len() > max_line {
            batch.bad.push(BadLine {
                line: line_no,
                reason: LONG_LINE,
                raw: line[..max_line].to_vec(),
            });
        } else if line.iter().all(|b| b.is_ascii_whitespace()) {
            batch.skipped += 1;
        } else {
            match parser.parse(line) {
                Ok(rec) => batch.push_coded(&rec, line_no),
                Err(e) if e.is_skip() => batch.skipped += 1,
                Err(e) => batch.bad.push(BadLine {
                    line: line_no,
                    reason: e.reason(),
                    raw: line.to_vec(),
                }),
            }
        }
        line_no += 1;
        start = end + 1;
    }
    batch
}
