//! An ingest's bookkeeping in the dataset: which inputs are already known (a compressed
//! copy read to its end is skipped, grown content resumes where it stopped), what is
//! recorded about each input afterwards, whether anything changed (the commit
//! decision), and the typed summary of the run ([`IngestSummary`]) with its distinct
//! clients and prefixes counted the way the reports count them.

use std::fs::File;
use std::io::Read;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use logscope_core::batch::Batch;
use logscope_core::classify::ClientKey;
use logscope_core::pipeline::InputStats;
use logscope_core::source::{Compression, DamageKind, Input};
use rustc_hash::FxHashSet as HashSet;
use serde::Serialize;

use super::manifest::{FINGERPRINT_LEN, fingerprint};
use super::{Build, CompressedCopy, Dataset, Manifest, PartEntry, SourceEntry, StoreError};

/// Prefix lengths of the summary's distinct networks: the reports' defaults
/// (`--prefix-v4 24`, `--prefix-v6 48`).
pub const SUMMARY_V4_PREFIX: u8 = 24;
// `Distinct` keeps an IPv4 network as the address shifted right by 32 - this.
const _: () = assert!(SUMMARY_V4_PREFIX > 0 && SUMMARY_V4_PREFIX <= 32);
/// See [`SUMMARY_V4_PREFIX`].
pub const SUMMARY_V6_PREFIX: u8 = 48;

/// What happened to one input.
#[derive(Debug, Serialize, Clone)]
pub struct FileSummary {
    /// Input name.
    pub file: String,
    /// Format used.
    pub format: String,
    /// Detection confidence (matched/sampled), when detected.
    pub confidence: Option<f64>,
    /// Compression.
    pub compression: String,
    /// Lines read now.
    pub lines: u64,
    /// Records added now.
    pub added: u64,
    /// Lines skipped because already ingested.
    pub already_seen: u64,
    /// Bad lines now.
    pub bad: u64,
    /// Blank lines and directives.
    pub skipped: u64,
    /// Content bytes read now.
    pub bytes: u64,
    /// Damage found in a compressed input.
    pub damage: Option<String>,
    /// A compressed file already read to its end by an earlier ingest (same size and
    /// first bytes): skipped without decompressing it.
    pub unchanged: bool,
    /// Bytes of an unterminated last line held back (`--final-line hold`): read by the
    /// next ingest once complete.
    pub held_back_bytes: u64,
    /// Nothing from this input was stored: its content could not be trusted (corrupt
    /// compressed data, or the file changed while it was read).
    pub discarded: bool,
    /// Records parsed now by each layout, most first: the format used, and for a CLF
    /// file that mixes layouts the others that took lines (`common`, `vhost-combined`,
    /// `combined+extras`, …; see `logscope_core::parse::Layered`).
    pub layouts: Vec<(String, u64)>,
}

/// The whole summary of an ingest (`--json` prints it).
#[derive(Debug, Serialize)]
pub struct IngestSummary {
    /// Dataset directory.
    pub dataset: String,
    /// Ingest number (0 when nothing was committed: nothing new, or `--dry-run`).
    pub ingest: u64,
    /// Inputs.
    pub files: Vec<FileSummary>,
    /// Lines read.
    pub lines: u64,
    /// Records added.
    pub added: u64,
    /// Lines already in the dataset.
    pub already_seen: u64,
    /// Bad lines.
    pub bad: u64,
    /// Blank lines and directives.
    pub skipped: u64,
    /// Bad lines by reason, most frequent first.
    pub bad_reasons: Vec<(String, u64)>,
    /// Earliest arrival added (RFC 3339 UTC).
    pub first: Option<String>,
    /// Latest arrival added.
    pub last: Option<String>,
    /// Distinct client addresses among added records (IPv4-mapped IPv6 counted as IPv4).
    pub distinct_ips: u64,
    /// Distinct IPv4 /24 prefixes (as `concentration` groups them).
    pub distinct_v4_24: u64,
    /// Distinct IPv6 /48 prefixes.
    pub distinct_v6_48: u64,
    /// Distinct clients that are host names, not addresses.
    pub distinct_hostnames: u64,
    /// Content bytes read.
    pub bytes: u64,
    /// Wall time of the run in seconds.
    pub seconds: f64,
    /// Rows in the dataset after the ingest.
    pub dataset_rows: u64,
    /// Whether this was a `--dry-run` (nothing written).
    pub dry_run: bool,
}

/// Distinct clients, networks and the time range of the records added.
///
/// Addresses and prefixes are [`ClientKey`]s, built as the reports build them
/// ([`ClientKey::prefix`]: IPv4-mapped IPv6 is IPv4), so the summary's counts are the
/// reports' counts.
#[derive(Debug, Default)]
pub struct Distinct {
    /// IPv4 addresses by their bits, and their networks by the bits above the prefix:
    /// a quarter of the bytes of a [`ClientKey`] an entry, which the caches hold better.
    ip4: HashSet<u32>,
    net4: HashSet<u32>,
    /// IPv6 addresses and networks.
    ips: HashSet<ClientKey>,
    nets: HashSet<ClientKey>,
    hosts: HashSet<String>,
    first: Option<i64>,
    last: Option<i64>,
}

impl Distinct {
    /// Counts the records of a batch.
    pub fn add(&mut self, b: &Batch) {
        // A coded client column (what the parse workers build) is counted once per
        // distinct client of the batch: the same client text is the same address.
        let mut seen = vec![
            false;
            if b.client.is_coded() {
                b.client.slots()
            } else {
                0
            }
        ];
        for (i, ip) in b.ip.iter().enumerate() {
            if b.client.is_coded()
                && let Some(k) = b.client.code(i)
            {
                if seen[k as usize] {
                    continue;
                }
                seen[k as usize] = true;
            }
            match ip {
                Some(ip) => self.add_ip(*ip),
                None => {
                    if let Some(h) = b.client.get(i)
                        && !self.hosts.contains(h)
                    {
                        self.hosts.insert(h.to_string());
                    }
                }
            }
        }
        if let Some(&mn) = b.ts_ms.iter().min() {
            self.first = Some(self.first.map_or(mn, |f| f.min(mn)));
        }
        if let Some(&mx) = b.ts_ms.iter().max() {
            self.last = Some(self.last.map_or(mx, |f| f.max(mx)));
        }
    }

    #[inline]
    fn add_ip(&mut self, ip: IpAddr) {
        if let IpAddr::V4(a) = logscope_core::net::canonical(ip) {
            let a = u32::from(a);
            if self.ip4.insert(a) {
                self.net4.insert(a >> (32 - SUMMARY_V4_PREFIX));
            }
            return;
        }
        if self.ips.insert(ClientKey::addr(ip)) {
            self.nets
                .insert(ClientKey::prefix(ip, SUMMARY_V4_PREFIX, SUMMARY_V6_PREFIX));
        }
    }

    /// Adds what another tally counted.
    pub fn merge(&mut self, other: Distinct) {
        self.ip4.extend(other.ip4);
        self.net4.extend(other.net4);
        self.ips.extend(other.ips);
        self.nets.extend(other.nets);
        self.hosts.extend(other.hosts);
        for t in [other.first, other.last].into_iter().flatten() {
            self.first = Some(self.first.map_or(t, |f| f.min(t)));
            self.last = Some(self.last.map_or(t, |l| l.max(t)));
        }
    }

    /// Distinct addresses.
    pub fn ips(&self) -> u64 {
        (self.ip4.len() + self.ips.len()) as u64
    }

    /// Distinct IPv4 networks and IPv6 networks.
    pub fn nets(&self) -> (u64, u64) {
        (self.net4.len() as u64, self.nets.len() as u64)
    }

    /// Distinct host names.
    pub fn hosts(&self) -> u64 {
        self.hosts.len() as u64
    }

    /// Earliest and latest arrival, UTC ms.
    pub fn range(&self) -> (Option<i64>, Option<i64>) {
        (self.first, self.last)
    }
}

/// The manifest as an ingest updates it, and whether it changed.
#[derive(Debug)]
pub struct Ledger {
    manifest: Manifest,
    changed: bool,
}

/// What to do with one input.
#[derive(Debug)]
pub enum Plan {
    /// A compressed file already read to its end: nothing to read.
    Unchanged {
        /// The format it was read with.
        format: String,
        /// Lines of its content already in the dataset.
        lines: u64,
    },
    /// Read it (from [`Tracked::resume_bytes`]), then [`Ledger::record`] it.
    Read(Tracked),
}

/// An input being read, as the ledger knows it.
#[derive(Debug)]
pub struct Tracked {
    /// The source entry of the same content, if known.
    known: Option<usize>,
    /// The compressed file's identity (compressed inputs on disk).
    copy: Option<CompressedCopy>,
    /// A plain file's path and identity at open, to check it did not change.
    plain: Option<(PathBuf, Option<(u64, u64)>)>,
    /// Content bytes already ingested: where reading resumes.
    pub resume_bytes: u64,
    /// Lines before `resume_bytes`.
    pub resume_lines: u64,
}

/// Whether what was read from an input can be stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trust {
    /// A plain file that no longer starts as it did (truncated and rewritten while it
    /// was read, e.g. logrotate's copytruncate).
    pub changed: bool,
    /// Nothing from it may be stored (corrupt compressed data, or `changed`); its
    /// resume point is not moved.
    pub discard: bool,
}

impl Tracked {
    /// Judges an input after reading it: corrupt or changed while read means discard.
    pub fn trust(&self, stats: &InputStats, head: &[u8]) -> Trust {
        let changed = match &self.plain {
            Some((path, id)) => head_changed(path, *id, head),
            None => false,
        };
        let corrupt = stats
            .damage_info()
            .is_some_and(|d| d.kind == DamageKind::Corrupt);
        Trust {
            changed,
            discard: corrupt || changed,
        }
    }
}

impl Ledger {
    /// A ledger over the committed manifest.
    pub fn new(manifest: Manifest) -> Ledger {
        Ledger {
            manifest,
            changed: false,
        }
    }

    /// The number the ingest will commit as.
    pub fn next_ingest(&self) -> u64 {
        // A manifest whose count would wrap is refused when the dataset is opened
        // (`Manifest::problems`); saturating only keeps a panic out of the way.
        self.manifest.ingests.saturating_add(1)
    }

    /// Whether the sources changed (a new entry, a moved resume point, a new name or
    /// compressed copy): with no new part either, there is nothing to commit.
    pub fn changed(&self) -> bool {
        self.changed
    }

    /// The updated manifest.
    pub fn into_manifest(self) -> Manifest {
        self.manifest
    }

    /// Decides what to do with an input before reading it: `name` is its display name,
    /// `head` the first bytes of its content. A compressed copy already read to its end
    /// is [`Plan::Unchanged`] (its name is recorded); anything else is read, resuming
    /// after the content an earlier ingest consumed.
    pub fn plan(
        &mut self,
        input: &Input,
        name: &str,
        compression: Compression,
        head: &[u8],
    ) -> Plan {
        let path = match input {
            Input::Path(p) => Some(p),
            Input::Stdin => None,
        };
        let copy = path
            .filter(|_| compression != Compression::None)
            .and_then(|p| compressed_copy(p));
        if let Some(i) = copy.as_ref().and_then(|c| self.manifest.find_compressed(c)) {
            let s = &mut self.manifest.sources[i];
            if !s.names.iter().any(|n| n == name) {
                s.names.push(name.to_string());
                self.changed = true;
            }
            return Plan::Unchanged {
                format: s.format.clone(),
                lines: s.lines,
            };
        }
        let id = path.and_then(|p| file_id(p));
        let plain = path
            .filter(|_| compression == Compression::None)
            .map(|p| (p.clone(), id));
        let known = self.manifest.find_source(head);
        let (resume_bytes, resume_lines) = match known {
            Some(i) => {
                let s = &self.manifest.sources[i];
                (s.content_bytes, s.lines)
            }
            None => (0, 0),
        };
        Plan::Read(Tracked {
            known,
            copy,
            plain,
            resume_bytes,
            resume_lines,
        })
    }

    /// Records how far an input's content has been consumed, after reading it with
    /// `format`. A discarded input keeps the resume point it had; a compressed copy is
    /// remembered only once read to its end intact; an input that consumed nothing gets
    /// no entry (one fingerprinting no bytes would match every later input). Returns
    /// the records added.
    pub fn record(
        &mut self,
        t: Tracked,
        name: &str,
        format: String,
        head: &[u8],
        stats: &InputStats,
        trust: Trust,
    ) -> u64 {
        let discard = trust.discard;
        let copy = t.copy.filter(|_| stats.damage.is_none());
        let (records, bad) = if discard {
            (0, 0)
        } else {
            (stats.records, stats.bad)
        };
        let (content_end, lines_end) = if discard {
            (t.resume_bytes, t.resume_lines)
        } else {
            (stats.content_end, stats.lines_end)
        };
        let fp_len = head.len().min(FINGERPRINT_LEN);
        let fp = fingerprint(&head[..fp_len]);
        match t.known {
            None if fp_len == 0 || content_end == 0 => {}
            Some(i) => {
                let s = &mut self.manifest.sources[i];
                let before = s.clone();
                if !discard {
                    s.fingerprint = fp;
                    s.fingerprint_len = fp_len;
                }
                s.content_bytes = content_end;
                s.lines = lines_end;
                s.records += records;
                s.bad += bad;
                if !s.names.iter().any(|n| n == name) {
                    s.names.push(name.to_string());
                }
                if let Some(c) = copy
                    && !s.compressed.contains(&c)
                {
                    s.compressed.push(c);
                }
                self.changed |= *s != before;
            }
            None => {
                self.manifest.sources.push(SourceEntry {
                    fingerprint: fp,
                    fingerprint_len: fp_len,
                    names: vec![name.to_string()],
                    format,
                    content_bytes: content_end,
                    lines: lines_end,
                    records,
                    bad,
                    compressed: copy.into_iter().collect(),
                });
                self.changed = true;
            }
        }
        records
    }
}

impl Dataset {
    /// Ends an ingest: commits the build with the ledger's manifest and the new parts
    /// when anything changed, else drops the build and leaves the dataset untouched.
    /// Returns the committed ingest number, or `None` when nothing was committed.
    pub fn finish_ingest(
        &self,
        build: Build,
        ledger: Ledger,
        parts: Vec<PartEntry>,
    ) -> Result<Option<u64>, StoreError> {
        if parts.is_empty() && !ledger.changed() {
            self.discard(build)?;
            return Ok(None);
        }
        let id = build.id;
        self.commit(build, ledger.into_manifest(), parts)?;
        Ok(Some(id))
    }
}

/// The file system identity of a path (device, inode).
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Whether the plain file `id` (still at `path`) no longer starts with the bytes it
/// started with when opened.
fn head_changed(path: &Path, id: Option<(u64, u64)>, head: &[u8]) -> bool {
    if id.is_none() || file_id(path) != id {
        // Renamed away (logrotate's rename) and maybe replaced: what was read came
        // from the open file, which rotation does not change.
        return false;
    }
    let n = head.len().min(FINGERPRINT_LEN);
    let mut now = Vec::with_capacity(n);
    match File::open(path) {
        Ok(f) => {
            if f.take(n as u64).read_to_end(&mut now).is_err() {
                return true;
            }
            now != head[..n]
        }
        // Removed or renamed after reading (logrotate's rename): what was read was
        // read from the open file, intact.
        Err(_) => false,
    }
}

/// The identity of a compressed file on disk: its size and the fingerprint of its
/// first bytes. `None` if it cannot be read (the reader reports that).
fn compressed_copy(path: &Path) -> Option<CompressedCopy> {
    let mut f = File::open(path).ok()?;
    let size = f.metadata().ok()?.len();
    let mut head = Vec::with_capacity(FINGERPRINT_LEN);
    Read::by_ref(&mut f)
        .take(FINGERPRINT_LEN as u64)
        .read_to_end(&mut head)
        .ok()?;
    Some(CompressedCopy {
        size,
        fingerprint: fingerprint(&head),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(ips: &[&str]) -> Batch {
        let mut b = Batch::default();
        for s in ips {
            b.ip.push(Some(s.parse().unwrap()));
        }
        b
    }

    #[test]
    fn distinct_counts_mapped_v6_as_v4() {
        let mut d = Distinct::default();
        d.add(&batch(&[
            "::ffff:1.2.3.4",
            "1.2.3.5",
            "1.2.3.4",
            "2001:db8::1",
        ]));
        assert_eq!(d.ips(), 3);
        assert_eq!(d.nets(), (1, 1));
        let mut e = Distinct::default();
        e.add(&batch(&["1.2.4.1", "2001:db8:0:1::1", "2001:db9::1"]));
        d.merge(e);
        assert_eq!(d.nets(), (2, 2));
    }

    fn stats(records: u64, content_end: u64, lines_end: u64) -> InputStats {
        InputStats {
            lines: lines_end,
            records,
            content_end,
            lines_end,
            ..InputStats::default()
        }
    }

    const KEEP: Trust = Trust {
        changed: false,
        discard: false,
    };

    #[test]
    fn ledger_changes_only_when_sources_change() {
        let head = b"line one\nline two\n";
        let mut l = Ledger::new(Manifest::empty());
        let Plan::Read(t) = l.plan(&Input::Stdin, "<stdin>", Compression::None, head) else {
            panic!("stdin is read");
        };
        assert_eq!((t.resume_bytes, t.resume_lines), (0, 0));
        assert_eq!(
            l.record(
                t,
                "<stdin>",
                "combined".into(),
                head,
                &stats(2, 18, 2),
                KEEP
            ),
            2
        );
        assert!(l.changed());

        // The same content again, nothing new: no change.
        let mut l = Ledger::new(l.into_manifest());
        let Plan::Read(t) = l.plan(&Input::Stdin, "<stdin>", Compression::None, head) else {
            panic!("stdin is read");
        };
        assert_eq!((t.resume_bytes, t.resume_lines), (18, 2));
        l.record(
            t,
            "<stdin>",
            "combined".into(),
            head,
            &stats(0, 18, 2),
            KEEP,
        );
        assert!(!l.changed());

        // Seen under another name: a change.
        let Plan::Read(t) = l.plan(&Input::Stdin, "other", Compression::None, head) else {
            panic!("stdin is read");
        };
        l.record(t, "other", "combined".into(), head, &stats(0, 18, 2), KEEP);
        assert!(l.changed());

        // A discarded input keeps its resume point; an empty one gets no entry.
        let mut l = Ledger::new(l.into_manifest());
        let Plan::Read(t) = l.plan(&Input::Stdin, "other", Compression::None, head) else {
            panic!("stdin is read");
        };
        let discard = Trust {
            changed: true,
            discard: true,
        };
        assert_eq!(
            l.record(
                t,
                "other",
                "combined".into(),
                head,
                &stats(5, 99, 9),
                discard
            ),
            0
        );
        assert!(!l.changed());
        let Plan::Read(t) = l.plan(&Input::Stdin, "empty", Compression::None, b"") else {
            panic!("stdin is read");
        };
        l.record(t, "empty", "combined".into(), b"", &stats(0, 0, 0), KEEP);
        assert!(!l.changed());
        assert_eq!(l.into_manifest().sources[0].content_bytes, 18);
    }
}
