//! Rows per distinct combination of stored columns (and the partition `month`), counted
//! per dictionary code where the pages are decoded, on every core: what `logscope sql`
//! answers a plain `SELECT a, b, count(*) FROM requests GROUP BY a, b` from. No row
//! becomes a string or is hashed: rows are counted per code, and only each combination a
//! row group holds is hashed (once per row group).

use logscope_core::batch::NULL_CODE;
use rustc_hash::FxHashMap;

use super::frame::Column;
use super::pages::{self, Decoded, Ints, PageError};
use super::scan::ScanMode;
use super::slices::{self, Plan, Slice};
use super::{Dataset, StoreError};

/// One key column's value in a group.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    /// Null.
    Null,
    /// An integer (or a timestamp in ms).
    Int(i64),
    /// A flag.
    Bool(bool),
    /// Text as stored (and the month).
    Text(String),
}

/// A column to group by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// A stored column.
    Stored(Column),
    /// The partition month of the row's part (`YYYY-MM`, not stored in the files).
    Month,
}

/// Each group (its key values, in the order of the [`By`] columns) with its rows, in
/// order of first appearance in the dataset's row order.
pub type Groups = Vec<(Vec<Key>, u64)>;

/// What [`group_counts`] found: the groups and the snapshot they were counted in.
#[derive(Debug, Default)]
pub struct Grouped {
    /// The groups.
    pub groups: Groups,
    /// The snapshot's parts (file names, in manifest order).
    pub parts: Vec<String>,
    /// Rows counted (every row of the snapshot).
    pub rows: u64,
}

/// Dense counting up to this many key combinations in a row group; a hash table past it.
const DENSE: u64 = 1 << 20;

/// Counts every row of `ds`'s committed snapshot per distinct combination of `by`.
/// `Ok(None)`: the page reader cannot decode a column chunk (an encoding another writer
/// chose), there is no snapshot, or `LOGSCOPE_SCAN=polars` asks for polars only; the
/// caller then answers the general way.
///
/// Each thread takes every n-th slice and adds its groups to a table of its own (each
/// group found again by its encoded key, `Coded::encode`); the tables are merged at
/// the end and the groups put in order of first appearance.
pub fn group_counts(ds: &Dataset, by: &[By]) -> Result<Option<Grouped>, StoreError> {
    let mode = ScanMode::from_env();
    if mode == ScanMode::Polars || by.is_empty() {
        return Ok(None);
    }
    let Some(plan) = slices::plan(ds, None, None, slices::PartOrder::Manifest)? else {
        return Ok(None);
    };
    let work = &plan.slices;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4)
        .min(work.len().max(1));
    let plan = &plan;
    let tables: Vec<Result<Option<Table>, StoreError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|d| {
                std::thread::Builder::new()
                    .name(format!("group-{d}"))
                    .spawn_scoped(scope, move || {
                        let mut table = Table::default();
                        for (at, slice) in work.iter().enumerate().skip(d).step_by(threads) {
                            match mode
                                .settle(&slice.path, count_slice(plan, slice, at, by, &mut table))
                            {
                                Some(Ok(true)) => {}
                                Some(Ok(false)) | None => return Ok(None),
                                Some(Err(e)) => return Err(e),
                            }
                        }
                        Ok(Some(table))
                    })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h.join().unwrap_or_else(|_| Ok(None)),
                Err(e) => Err(StoreError::Io {
                    path: ds.dir().to_path_buf(),
                    error: e,
                }),
            })
            .collect()
    });
    let mut merged = Table::default();
    for t in tables {
        let Some(t) = t? else {
            return Ok(None);
        };
        if merged.len() == 0 {
            merged = t;
            continue;
        }
        for i in 0..t.len() {
            merged.add(t.key(i), t.rows[i], t.first[i]);
        }
    }
    let counted: u64 = merged.rows.iter().sum();
    if counted != plan.rows {
        return Ok(None);
    }
    let mut order: Vec<usize> = (0..merged.len()).collect();
    order.sort_unstable_by_key(|&i| merged.first[i]);
    let groups = order
        .into_iter()
        .map(|i| decode(merged.key(i)).map(|k| (k, merged.rows[i])))
        .collect::<Option<_>>()
        .ok_or_else(|| StoreError::Corrupt {
            path: ds.dir().to_path_buf(),
            detail: "a group's key did not decode (a bug)".into(),
        })?;
    Ok(Some(Grouped {
        groups,
        parts: plan.parts.iter().map(|p| p.file.clone()).collect(),
        rows: plan.rows,
    }))
}

/// One thread's groups: encoded keys (one after the other in `bytes`), rows, and where
/// each was first met (slice, then order within it).
#[derive(Default)]
struct Table {
    index: hashbrown::HashTable<u32>,
    hashes: Vec<u64>,
    bytes: Vec<u8>,
    ends: Vec<usize>,
    rows: Vec<u64>,
    first: Vec<(usize, usize)>,
}

impl Table {
    fn len(&self) -> usize {
        self.ends.len()
    }

    fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    fn add(&mut self, key: &[u8], rows: u64, first: (usize, usize)) {
        let h = xxhash_rust::xxh3::xxh3_64(key);
        let Table {
            index,
            hashes,
            bytes,
            ends,
            ..
        } = self;
        let same = |&i: &u32| {
            let i = i as usize;
            let start = if i == 0 { 0 } else { ends[i - 1] };
            hashes[i] == h && &bytes[start..ends[i]] == key
        };
        if let Some(&i) = index.find(h, same) {
            let i = i as usize;
            self.rows[i] += rows;
            self.first[i] = self.first[i].min(first);
            return;
        }
        let i = self.ends.len() as u32;
        let hashes = &self.hashes;
        self.index.insert_unique(h, i, |&j| hashes[j as usize]);
        self.hashes.push(h);
        self.bytes.extend_from_slice(key);
        self.ends.push(self.bytes.len());
        self.rows.push(rows);
        self.first.push(first);
    }
}

/// One key column of one row group: a code per row below `card`, and its value at a row.
enum Coded {
    /// Text: codes are slots of `values`, `card - 1` the null.
    Text {
        values: logscope_core::batch::TextColumn,
        codes: Vec<u32>,
    },
    /// Integers: codes are dictionary indices, or numbered in order of first use.
    Int {
        ints: Ints,
        codes: Vec<u32>,
        card: u64,
    },
    /// Flags: 0 false, 1 true, 2 null.
    Bool { values: Vec<Option<bool>> },
    /// One value for every row (the month).
    Const(String),
}

impl Coded {
    fn new(d: Decoded) -> Coded {
        match d {
            Decoded::Text { values, mut codes } => {
                let null = values.slots() as u32;
                for c in codes.iter_mut().filter(|c| **c == NULL_CODE) {
                    *c = null;
                }
                Coded::Text { values, codes }
            }
            Decoded::Int(mut ints) => {
                let (codes, card) = match ints.codes.take() {
                    Some(c) if ints.valid.is_none() => (c, ints.dict_len as u64),
                    _ => {
                        let mut seen: FxHashMap<Option<i64>, u32> = FxHashMap::default();
                        let codes = (0..ints.values.len())
                            .map(|i| {
                                let n = seen.len() as u32;
                                *seen.entry(ints.get(i)).or_insert(n)
                            })
                            .collect();
                        (codes, seen.len() as u64)
                    }
                };
                Coded::Int { ints, codes, card }
            }
            Decoded::Bool(values) => Coded::Bool { values },
        }
    }

    /// How many codes there can be.
    fn card(&self) -> u64 {
        match self {
            Coded::Text { values, .. } => values.slots() as u64 + 1,
            Coded::Int { card, .. } => *card,
            Coded::Bool { .. } => 3,
            Coded::Const(_) => 1,
        }
    }

    /// Adds the code of each row of `rows` times `stride` to `out` (one per row).
    fn add_codes(&self, rows: std::ops::Range<usize>, stride: u64, out: &mut [u64]) {
        match self {
            Coded::Text { codes, .. } | Coded::Int { codes, .. } => {
                for (o, &c) in out.iter_mut().zip(&codes[rows]) {
                    *o += c as u64 * stride;
                }
            }
            Coded::Bool { values } => {
                for (o, v) in out.iter_mut().zip(&values[rows]) {
                    *o += match v {
                        Some(false) => 0,
                        Some(true) => stride,
                        None => 2 * stride,
                    };
                }
            }
            Coded::Const(_) => {}
        }
    }

    /// Appends row `i`'s value to `out` ([`encode`]).
    fn encode(&self, i: usize, out: &mut Vec<u8>) {
        match self {
            Coded::Text { values, codes } => {
                let k = codes[i];
                let text = if (k as usize) < values.slots() {
                    values.value(k)
                } else {
                    None
                };
                encode_text(text, out)
            }
            Coded::Int { ints, .. } => match ints.get(i) {
                Some(v) => {
                    out.push(INT);
                    out.extend_from_slice(&v.to_le_bytes());
                }
                None => out.push(NULL),
            },
            Coded::Bool { values } => match values[i] {
                Some(b) => out.extend_from_slice(&[BOOL, b as u8]),
                None => out.push(NULL),
            },
            Coded::Const(text) => encode_text(Some(text), out),
        }
    }
}

// A key encoded: per column a tag, then the value (an integer as 8 bytes, a flag as
// one, text as its length in 8 bytes and its bytes).
const NULL: u8 = 0;
const INT: u8 = 1;
const BOOL: u8 = 2;
const TEXT: u8 = 3;

fn encode_text(text: Option<&str>, out: &mut Vec<u8>) {
    match text {
        Some(s) => {
            out.push(TEXT);
            out.extend_from_slice(&(s.len() as u64).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        None => out.push(NULL),
    }
}

/// The key values of an encoded key.
fn decode(mut b: &[u8]) -> Option<Vec<Key>> {
    let mut out = Vec::new();
    let word = |b: &[u8]| -> Option<u64> { Some(u64::from_le_bytes(b.get(..8)?.try_into().ok()?)) };
    while let Some((&tag, rest)) = b.split_first() {
        b = rest;
        out.push(match tag {
            NULL => Key::Null,
            INT => {
                let v = word(b)? as i64;
                b = &b[8..];
                Key::Int(v)
            }
            BOOL => {
                let v = *b.first()? == 1;
                b = &b[1..];
                Key::Bool(v)
            }
            TEXT => {
                let n = usize::try_from(word(b)?).ok()?;
                let s = std::str::from_utf8(b.get(8..8 + n)?).ok()?.to_string();
                b = &b[8 + n..];
                Key::Text(s)
            }
            _ => return None,
        });
    }
    Some(out)
}

/// Adds slice `s` (number `at` of the plan) to `table`; `false`: a key space too large
/// to code (the general path answers).
fn count_slice(
    plan: &Plan,
    s: &Slice,
    at: usize,
    by: &[By],
    table: &mut Table,
) -> Result<bool, PageError> {
    let Some(md) = plan.footer(&s.path) else {
        return Err(PageError::Unsupported("no footer".into()));
    };
    let sums = plan.sums(&s.path);
    let month = plan
        .parts
        .get(s.part)
        .map(|p| p.month.clone())
        .ok_or_else(|| PageError::Damaged("a slice of no part".into()))?;
    let f =
        std::fs::File::open(&s.path).map_err(|e| PageError::Damaged(format!("opening: {e}")))?;
    let mut seq = 0usize;
    let mut key: Vec<u8> = Vec::new();
    let mut combined: Vec<u64> = Vec::new();
    let mut dense: Vec<u32> = Vec::new();
    let mut sparse: FxHashMap<u64, u32> = FxHashMap::default();
    // Each combination met in the row group: its code, first row and rows.
    let mut first: Vec<(u64, usize, u64)> = Vec::new();
    let mut start = 0usize;
    for (g, rg) in md.row_groups.iter().enumerate() {
        let n = rg.num_rows();
        let (lo, hi) = (s.offset.max(start), (s.offset + s.len).min(start + n));
        if lo < hi {
            let mut cols = Vec::with_capacity(by.len());
            for b in by {
                let c = match b {
                    By::Month => Coded::Const(month.clone()),
                    By::Stored(c) => {
                        let name = c.name();
                        let chunk = rg
                            .columns_under_root_iter(name)
                            .and_then(|mut it| it.next())
                            .ok_or_else(|| PageError::Unsupported(format!("no {name} column")))?;
                        let want = sums.and_then(|s| s.column(g, rg, name));
                        Coded::new(pages::read_column(&f, chunk, n, want, true)?)
                    }
                };
                cols.push(c);
            }
            // Mixed-radix code of a row's combination, column by column.
            let rows = (lo - start)..(hi - start);
            let mut space = 1u64;
            let single = match cols.as_slice() {
                [Coded::Text { codes, .. } | Coded::Int { codes, .. }] => {
                    space = cols[0].card();
                    Some(&codes[rows.clone()])
                }
                _ => None,
            };
            if single.is_none() {
                combined.clear();
                combined.resize(rows.len(), 0);
                for c in &cols {
                    c.add_codes(rows.clone(), space, &mut combined);
                    let Some(s) = space.checked_mul(c.card().max(1)) else {
                        return Ok(false);
                    };
                    space = s;
                }
            }
            first.clear();
            if space <= DENSE {
                dense.clear();
                dense.resize(space as usize, u32::MAX);
                let count = |k: u64, i: usize| {
                    let at = &mut dense[k as usize];
                    if *at == u32::MAX {
                        *at = first.len() as u32;
                        first.push((k, i, 0));
                    }
                    first[*at as usize].2 += 1;
                };
                each_key(single, &combined, count);
            } else {
                sparse.clear();
                let count = |k: u64, i: usize| {
                    let at = *sparse.entry(k).or_insert_with(|| {
                        first.push((k, i, 0));
                        (first.len() - 1) as u32
                    });
                    first[at as usize].2 += 1;
                };
                each_key(single, &combined, count);
            }
            for &(_, i, rows_of) in &first {
                key.clear();
                for c in &cols {
                    c.encode(rows.start + i, &mut key);
                }
                table.add(&key, rows_of, (at, seq));
                seq += 1;
            }
        }
        start += n;
    }
    Ok(true)
}

/// Calls `count(key, row)` for each row of a row group: the codes of its one coded column
/// (the common case: they are the combinations), else the combined keys.
fn each_key(single: Option<&[u32]>, combined: &[u64], mut count: impl FnMut(u64, usize)) {
    match single {
        Some(codes) => {
            for (i, &k) in codes.iter().enumerate() {
                count(u64::from(k), i);
            }
        }
        None => {
            for (i, &k) in combined.iter().enumerate() {
                count(k, i);
            }
        }
    }
}
