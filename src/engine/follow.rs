//! Following live logs (`ingest --follow`): the ingest run again and again over the
//! files as they grow, each run one atomic commit, resuming where the last stopped.
//!
//! Nothing is kept between runs but open descriptors and file sizes: what has been read
//! is the dataset's manifest (each content's fingerprint and the bytes consumed), so a
//! follow killed at any moment resumes exactly, and memory does not grow with time.
//!
//! Rotation: a file named on the command line is held open. When its name comes to
//! point at another file (logrotate's rename-and-create) or at nothing, the old file is
//! read to its end through the open descriptor, under the name it was followed by,
//! until it stops growing (the server writes to it until it reopens its logs). A file
//! truncated in place (copytruncate) starts a new content; its copy, if followed too
//! (`access.log*`), is recognised by its first bytes and read from where the live file
//! was left. Compressed files are read once and then left alone (their size and time
//! unchanged). Each run compacts the small parts as they accumulate
//! (`Dataset::compact`).

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use logscope_core::source::Compression;

use super::error::exit;
use super::ingest::{self, Event, IngestJob};
use super::inputs;
use crate::store::ingest::IngestSummary;

/// When a follow commits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitEvery {
    /// After this long (what was appended meanwhile, in one commit).
    Interval(Duration),
    /// As soon as about this many new lines are waiting (estimated from the bytes
    /// appended and the mean line length read so far), and at least every
    /// [`ROWS_MAX_WAIT`].
    Rows(u64),
}

/// The longest a `--commit-every N` follow waits with lines pending.
pub const ROWS_MAX_WAIT: Duration = Duration::from_secs(10);

/// How often sizes are looked at between commits.
const POLL: Duration = Duration::from_millis(100);

/// What to follow, and how.
pub struct FollowJob {
    /// The ingest of each run: its `files` are the paths and patterns to follow
    /// (patterns are expanded again at every run).
    pub ingest: IngestJob,
    /// When to commit.
    pub every: CommitEvery,
}

/// What happens while following, in order.
pub enum FollowEvent<'a> {
    /// An event of one run's ingest.
    Ingest(Event<'a>),
    /// A run committed what it read.
    Committed(&'a IngestSummary),
    /// A followed name points at another file now, or at none: the file it pointed at
    /// is read to its end under its old name.
    Rotated {
        /// The name followed.
        file: &'a str,
        /// It no longer exists (removed or renamed without a successor yet).
        gone: bool,
    },
    /// A followed name points at no file (yet): it is read once it appears.
    Missing {
        /// The name followed.
        file: &'a str,
    },
    /// A followed file was truncated in place (copytruncate): its new content is read
    /// from its start; the lines written before the truncation and not yet read are
    /// in its copy, read if the copy is followed too.
    Truncated {
        /// The name followed.
        file: &'a str,
    },
    /// A followed name exists again (or for the first time).
    Appeared {
        /// The name followed.
        file: &'a str,
    },
}

/// A file named on the command line, held open.
struct Held {
    file: File,
    id: (u64, u64),
}

/// A followed file that lost its name: read to its end through its descriptor.
struct Renamed {
    file: File,
    name: String,
    /// Its size when last read.
    size: u64,
    /// Runs since it last grew.
    still: u32,
}

/// What a file looked like (size, modification time, identity): a run is due only
/// when something changed.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Look {
    id: (u64, u64),
    size: u64,
    mtime_ns: i128,
}

fn look(m: &std::fs::Metadata) -> Look {
    Look {
        id: (m.dev(), m.ino()),
        size: m.len(),
        mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
    }
}

/// Follows `job` into the dataset at `data` until `stop` is set (a signal), then
/// returns the worst exit status any run called for. A run that fails (the disk is
/// full, the dataset is damaged) ends the follow with its error; what earlier runs
/// committed stays.
pub fn run(
    data: &Path,
    job: &mut FollowJob,
    stop: &AtomicBool,
    on: &mut dyn FnMut(FollowEvent<'_>),
) -> anyhow::Result<i32> {
    let patterns = std::mem::take(&mut job.ingest.files);
    job.ingest.skip_unready = true;
    // One follow, however often restarted, is one stream: its bad lines are added to
    // `--rejects` (resumed runs read no line twice).
    job.ingest.append_rejects = true;
    let mut held: BTreeMap<String, Held> = BTreeMap::new();
    let mut missing: BTreeMap<String, bool> = BTreeMap::new();
    let mut renamed: Vec<Renamed> = Vec::new();
    let mut last: HashMap<PathBuf, Look> = HashMap::new();
    // Compressed files read to their end, as they were then.
    let mut settled: HashMap<PathBuf, Look> = HashMap::new();
    let mut worst = exit::OK;
    let mut mean_line = 200.0f64;
    let mut last_run: Option<Instant> = None;
    loop {
        // Wait until a run is due (the first one at once).
        if let Some(at) = last_run {
            loop {
                if stop.load(Ordering::Relaxed) {
                    return Ok(worst);
                }
                let waited = at.elapsed();
                let due = match job.every {
                    CommitEvery::Interval(d) => waited >= d,
                    CommitEvery::Rows(n) => {
                        waited >= ROWS_MAX_WAIT
                            || (waited >= POLL
                                && pending_bytes(&patterns, &last) as f64 / mean_line >= n as f64)
                    }
                };
                if due {
                    break;
                }
                std::thread::sleep(POLL);
            }
        }
        last_run = Some(Instant::now());
        let stopping = stop.load(Ordering::Relaxed);

        // The names given: each held open, its successor noticed.
        let mut files: Vec<PathBuf> = Vec::new();
        for p in &patterns {
            if !is_pattern(p) || Path::new(p).exists() {
                let now = std::fs::metadata(p).ok().filter(|m| m.is_file());
                let id = now.as_ref().map(|m| (m.dev(), m.ino()));
                if let (Some(h), Some(m)) = (held.get(p), &now)
                    && h.id == (m.dev(), m.ino())
                    && last.get(Path::new(p)).is_some_and(|l| m.len() < l.size)
                {
                    on(FollowEvent::Truncated { file: p });
                }
                if held.get(p).is_some_and(|h| Some(h.id) != id) {
                    let h = held.remove(p).expect("held");
                    on(FollowEvent::Rotated {
                        file: p,
                        gone: id.is_none(),
                    });
                    let size = h.file.metadata().map_or(0, |m| m.len());
                    renamed.push(Renamed {
                        file: h.file,
                        name: p.clone(),
                        size,
                        still: 0,
                    });
                }
                match id {
                    Some(id) => {
                        if !held.contains_key(p)
                            && let Ok(file) = File::open(p)
                        {
                            if missing.remove(p).is_some() {
                                on(FollowEvent::Appeared { file: p });
                            }
                            held.insert(p.clone(), Held { file, id });
                        }
                        files.push(PathBuf::from(p));
                    }
                    None => {
                        if missing.insert(p.clone(), true).is_none() {
                            on(FollowEvent::Missing { file: p });
                        }
                    }
                }
            } else if let Ok(found) = inputs::expand(std::slice::from_ref(p)) {
                files.extend(found.into_iter().filter_map(|i| match i {
                    logscope_core::source::Input::Path(p) => Some(p),
                    logscope_core::source::Input::Stdin => None,
                }));
            }
        }
        files.dedup();
        // Look at every file: skip what has not changed since the last run, and the
        // compressed files already read whole.
        let mut looks: HashMap<PathBuf, Look> = HashMap::new();
        let mut ids: Vec<(u64, u64)> = Vec::new();
        files.retain(|f| {
            let Ok(m) = std::fs::metadata(f) else {
                return false;
            };
            let l = look(&m);
            if ids.contains(&l.id) {
                return false;
            }
            ids.push(l.id);
            looks.insert(f.clone(), l);
            settled.get(f) != Some(&l)
        });
        // A renamed file that is also followed by its new name is read under that.
        renamed.retain(|r| {
            r.file
                .metadata()
                .is_ok_and(|m| !ids.contains(&(m.dev(), m.ino())))
        });
        // Only what changed is read: a file that did not is read to its end already
        // (but for a last line still without its newline, which waits for a change).
        let todo: Vec<String> = files
            .iter()
            .filter(|f| last.get(*f) != looks.get(*f))
            .map(|f| f.display().to_string())
            .collect();
        if !renamed.is_empty() || !todo.is_empty() {
            job.ingest.files = todo;
            job.ingest.renamed = renamed
                .iter()
                .map(|r| {
                    (
                        PathBuf::from(format!("/proc/self/fd/{}", r.file.as_raw_fd())),
                        r.name.clone(),
                    )
                })
                .collect();
            let before: Vec<u64> = renamed
                .iter()
                .map(|r| r.file.metadata().map_or(0, |m| m.len()))
                .collect();
            let done = ingest::run(data, &job.ingest, &mut |e| on(FollowEvent::Ingest(e)))?;
            worst = worst.max(done.exit);
            let s = &done.summary;
            if s.lines > 0 && s.bytes > 0 {
                mean_line = (s.bytes as f64 / s.lines as f64).max(1.0);
            }
            for f in &s.files {
                if f.compression != Compression::None.name() && f.unchanged {
                    let p = PathBuf::from(&f.file);
                    if let Some(l) = looks.get(&p) {
                        settled.insert(p, *l);
                    }
                }
            }
            // A renamed file is let go once a run found it no longer growing.
            for (r, size) in renamed.iter_mut().zip(before) {
                if size == r.size {
                    r.still += 1;
                } else {
                    r.size = size;
                    r.still = 0;
                }
            }
            renamed.retain(|r| r.still < 2);
            if s.ingest != 0 {
                on(FollowEvent::Committed(s));
            }
            last = looks;
        }
        if stopping {
            return Ok(worst);
        }
    }
}

/// Bytes appended to the followed files since the last run (for `--commit-every N`).
fn pending_bytes(patterns: &[String], last: &HashMap<PathBuf, Look>) -> u64 {
    let mut n = 0;
    for p in patterns.iter().filter(|p| !is_pattern(p)) {
        if let Ok(m) = std::fs::metadata(p) {
            let before = last.get(Path::new(p)).map_or(0, |l| l.size);
            n += m.len().saturating_sub(before);
        }
    }
    n
}

fn is_pattern(p: &str) -> bool {
    p.contains(['*', '?', '['])
}
