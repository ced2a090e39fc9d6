//! Columnar, owned batches of parsed records: what the parse workers hand to the store,
//! the reports and the replay, with the bad lines found on the way.

use std::net::IpAddr;

use crate::record::Record;

/// A column of optional text in the *stored form* ([`push_stored`]): the log's text as
/// the server wrote it (its own escapes, `\x16` or `\"`, untouched), a byte that is not
/// valid UTF-8 written as a private-use character U+EF80–U+EFFF, so every value is
/// valid UTF-8, nothing of the original is lost, and a raw byte 0xAC and the four
/// characters `\xac` a server wrote stay apart.
///
/// Two layouts, one meaning: *plain* (row `i` is value `i`, as the parser fills it) and
/// *coded* (row `i` is value `codes[i]`, each distinct value stored once, as the dataset
/// reader fills it from Parquet dictionary pages). [`TextColumn::get`] reads either;
/// [`TextColumn::code`] gives the value slot of a row so that work done per distinct
/// value (classifying a user agent, matching a host) can be cached per slot.
#[derive(Clone, Debug, Default)]
pub struct TextColumn {
    data: String,
    /// End offset of each value in `data` (`usize`: a column may exceed 4 GiB when
    /// `--max-line` allows lines of more than 1 GiB, each byte stored as up to 3).
    ends: Vec<usize>,
    valid: Vec<bool>,
    /// Coded layout: the value slot of each row ([`NULL_CODE`] = null).
    codes: Option<Vec<u32>>,
    /// The values stored so far by [`TextColumn::push_interned`], to find them again.
    index: Option<Box<Index>>,
    /// Coded layout known to be in first-use order ([`in_first_use_order`]): built that
    /// way ([`TextColumn::push_interned`], [`TextColumn::to_coded`]), so that it need
    /// not be checked row by row.
    ordered: bool,
}

/// The hash tables of [`TextColumn::push_interned`]: slots whose stored form is the
/// logged bytes (`clean`, found by the raw bytes, so a repeated value is neither
/// validated nor escaped again) and slots that needed escaping (`escaped`, found by
/// their stored form).
#[derive(Clone, Debug, Default)]
struct Index {
    clean: hashbrown::HashTable<u32>,
    escaped: hashbrown::HashTable<u32>,
}

fn hash(b: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(b)
}

/// The stored bytes of slot `k`.
fn stored<'a>(data: &'a str, ends: &[usize], k: u32) -> &'a [u8] {
    let k = k as usize;
    let start = if k == 0 { 0 } else { ends[k - 1] };
    &data.as_bytes()[start..ends[k]]
}

/// The code of a null row in a coded [`TextColumn`].
pub const NULL_CODE: u32 = u32::MAX;

/// Whether every one of `slots` slots is used by `codes` ([`NULL_CODE`] = none), each
/// first used after all slots below it: the order in which the parse codes a column and
/// the dataset's writer numbers its dictionaries.
pub fn in_first_use_order(codes: &[u32], slots: usize) -> bool {
    // `next`: the number of slots used so far, which is the next new one.
    let mut next = 0u32;
    let mut ok = true;
    // Without a branch per row: nulls and used slots mix unpredictably.
    for &k in codes {
        ok &= (k <= next) | (k == NULL_CODE);
        next += u32::from(k == next);
    }
    ok && next as usize == slots
}

impl TextColumn {
    /// An empty coded column: add values with [`TextColumn::push_value`] and rows with
    /// [`TextColumn::push_code`].
    pub fn coded() -> TextColumn {
        TextColumn {
            codes: Some(Vec::new()),
            ordered: true,
            ..TextColumn::default()
        }
    }

    /// Whether the coded layout has every slot used, each first used after the slots
    /// below it ([`in_first_use_order`]; false for the plain layout). Known without a
    /// look at the rows where the column was built that way.
    pub fn in_first_use_order(&self) -> bool {
        match &self.codes {
            Some(_) if self.ordered => true,
            Some(c) => in_first_use_order(c, self.slots()),
            None => false,
        }
    }

    /// A coded column from its distinct values (a plain column whose slots are the
    /// values) and the slot of each row ([`NULL_CODE`] = null). Codes past the values
    /// read as null.
    pub fn with_codes(values: TextColumn, mut codes: Vec<u32>) -> TextColumn {
        let slots = values.slots() as u32;
        // NULL_CODE + 1 wraps to 0: one comparison per row, and no early exit, so the
        // loop vectorises.
        let bad = codes
            .iter()
            .fold(false, |bad, &k| bad | (k.wrapping_add(1) > slots));
        if bad {
            codes
                .iter_mut()
                .filter(|k| **k >= slots)
                .for_each(|k| *k = NULL_CODE);
        }
        let mut out = values;
        out.codes = Some(codes);
        out.ordered = false;
        out
    }

    /// A column that was not read (a dataset read stores only the columns a command
    /// asks for): coded, with no rows stored, so every row reads as null at no cost
    /// per row.
    pub fn absent() -> TextColumn {
        TextColumn::coded()
    }

    /// Appends a value (`None` = null).
    pub fn push(&mut self, v: Option<&[u8]>) {
        if let Some(bytes) = v {
            push_stored(&mut self.data, bytes);
        }
        self.end_row(v.is_some());
    }

    /// Appends a value as [`TextColumn::push`] does, in the coded layout: a value seen
    /// before in this column gets its slot again (one hash of the bytes, no UTF-8
    /// check, no copy). A plain column is converted to the coded layout first.
    pub fn push_interned(&mut self, v: Option<&[u8]>) {
        let Some(bytes) = v else {
            self.push_code(NULL_CODE);
            return;
        };
        self.make_coded();
        let h = hash(bytes);
        // A value seen before gets its slot, a new one the next slot: the order of
        // first use is kept.
        let TextColumn {
            data,
            ends,
            valid,
            codes,
            index,
            ..
        } = self;
        let index = index.get_or_insert_with(Box::default);
        // A clean slot's stored form is its logged bytes, so equal bytes are the value.
        let found = index
            .clean
            .find(h, |&k| stored(data, ends, k) == bytes)
            .copied();
        let code = match found {
            Some(k) => k,
            None => {
                let start = data.len();
                push_stored(data, bytes);
                let clean = &data.as_bytes()[start..] == bytes;
                let (table, form_hash) = if clean {
                    (&mut index.clean, h)
                } else {
                    (&mut index.escaped, hash(&data.as_bytes()[start..]))
                };
                let again = if clean {
                    None
                } else {
                    let form = &data.as_bytes()[start..];
                    table
                        .find(form_hash, |&k| stored(data, ends, k) == form)
                        .copied()
                };
                match again {
                    Some(k) => {
                        data.truncate(start);
                        k
                    }
                    None => {
                        valid.push(true);
                        ends.push(data.len());
                        let k = (ends.len() - 1) as u32;
                        table.insert_unique(form_hash, k, |&k| hash(stored(data, ends, k)));
                        k
                    }
                }
            }
        };
        if let Some(c) = codes {
            c.push(code);
        }
    }

    /// Appends a value already in the stored form (no validation, no escaping): a value
    /// read back from the dataset or copied from another column.
    pub fn push_str(&mut self, v: Option<&str>) {
        if let Some(s) = v {
            self.data.push_str(s);
        }
        self.end_row(v.is_some());
    }

    /// Closes the value just appended to `data` as a new slot (and row).
    fn end_row(&mut self, valid: bool) {
        let code = if valid {
            self.ends.len() as u32
        } else {
            // A slot no row uses.
            self.ordered = false;
            NULL_CODE
        };
        self.valid.push(valid);
        self.ends.push(self.data.len());
        if let Some(codes) = &mut self.codes {
            codes.push(code);
        }
    }

    /// Coded layout: stores a distinct value and returns its slot (no row is added).
    /// A plain column is converted to the coded layout first.
    pub fn push_value(&mut self, s: &str) -> u32 {
        self.make_coded();
        self.ordered = false;
        self.data.push_str(s);
        self.valid.push(true);
        self.ends.push(self.data.len());
        (self.ends.len() - 1) as u32
    }

    /// Coded layout: appends a row holding value slot `code` ([`NULL_CODE`] = null).
    /// A plain column is converted to the coded layout first.
    pub fn push_code(&mut self, code: u32) {
        self.make_coded();
        self.ordered = false;
        if let Some(codes) = &mut self.codes {
            codes.push(code);
        }
    }

    fn make_coded(&mut self) {
        if self.codes.is_none() {
            self.ordered = self.ends.is_empty();
            let valid = &self.valid;
            self.codes = Some(
                (0..valid.len())
                    .map(|i| if valid[i] { i as u32 } else { NULL_CODE })
                    .collect(),
            );
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        match &self.codes {
            Some(c) => c.len(),
            None => self.ends.len(),
        }
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value slot of row `i` (`None` = null): equal slots hold equal values. In the
    /// plain layout the slot is the row. In the coded layout a row past the stored codes
    /// is null ([`TextColumn::absent`]).
    #[inline]
    pub fn code(&self, i: usize) -> Option<u32> {
        match &self.codes {
            Some(c) => c.get(i).copied().filter(|&k| k != NULL_CODE),
            None => self.valid[i].then_some(i as u32),
        }
    }

    /// The slot of every row ([`NULL_CODE`] = null) of a coded column; `None` in the
    /// plain layout.
    #[inline]
    pub fn codes(&self) -> Option<&[u32]> {
        self.codes.as_deref()
    }

    /// Number of value slots ([`TextColumn::value`] takes `0..slots()`).
    pub fn slots(&self) -> usize {
        self.ends.len()
    }

    /// Whether the column is coded (slots are distinct values, fewer than rows).
    pub fn is_coded(&self) -> bool {
        self.codes.is_some()
    }

    /// The value in slot `k` (`None` for a null slot of the plain layout).
    #[inline]
    pub fn value(&self, k: u32) -> Option<&str> {
        let k = k as usize;
        if !self.valid[k] {
            return None;
        }
        let start = if k == 0 { 0 } else { self.ends[k - 1] };
        Some(&self.data[start..self.ends[k]])
    }

    /// The i-th row's value.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&str> {
        self.value(self.code(i)?)
    }

    /// All values in row order.
    pub fn iter(&self) -> impl Iterator<Item = Option<&str>> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }

    /// Bytes of text held.
    pub fn text_bytes(&self) -> usize {
        self.data.len()
    }

    /// The same rows in the coded layout, each distinct value stored once in order of
    /// first appearance (a coded column is returned as it is). The ingest runs it on the
    /// parse workers, so that the Parquet writer works per distinct value.
    pub fn to_coded(&self) -> TextColumn {
        if self.is_coded() {
            return self.clone();
        }
        let mut seen: rustc_hash::FxHashMap<&str, u32> = rustc_hash::FxHashMap::default();
        let mut out = TextColumn::coded();
        if let Some(c) = &mut out.codes {
            c.reserve(self.len());
        }
        for i in 0..self.len() {
            let code = match self.get(i) {
                None => NULL_CODE,
                Some(s) => *seen.entry(s).or_insert_with(|| out.push_value(s)),
            };
            out.push_code(code);
        }
        // Each value stored as it first appears.
        out.ordered = true;
        out
    }
}

/// The first of the 128 private-use characters U+EF80–U+EFFF that stand for a byte
/// 0x80–0xFF that is not valid UTF-8 in the stored form: byte `b` is `BYTE_BASE + b`.
pub const BYTE_BASE: u32 = 0xEF00;

/// Appends `bytes` to `out` in the stored form: text as logged, each byte that is not
/// valid UTF-8 as the private-use character U+EF00 + byte (U+EF80–U+EFFF), and a
/// character of that range that was itself logged as its three UTF-8 bytes, each so
/// written. Two different byte strings never give the same text, and text a server
/// escaped (`\x16`, `\"`) stays exactly as it wrote it; [`stored_bytes`] gives the
/// bytes back.
pub fn push_stored(out: &mut String, mut bytes: &[u8]) {
    loop {
        let (good, bad) = match std::str::from_utf8(bytes) {
            Ok(_) => (bytes.len(), 0),
            Err(e) => (
                e.valid_up_to(),
                e.error_len().unwrap_or(bytes.len() - e.valid_up_to()),
            ),
        };
        push_valid(out, &bytes[..good]);
        for &b in &bytes[good..good + bad] {
            out.push(byte_char(b));
        }
        if bad == 0 {
            return;
        }
        bytes = &bytes[good + bad..];
    }
}

/// The character that stands for byte `b` (≥ 0x80) in the stored form.
#[inline]
fn byte_char(b: u8) -> char {
    char::from_u32(BYTE_BASE + b as u32).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// Valid UTF-8 `v` in the stored form: as it is, but for a character of U+EF80–U+EFFF
/// (UTF-8 `EE BE xx`, `EE BF xx`), written as its three bytes (one `memchr` when there
/// is none, the common case).
#[inline]
fn push_valid(out: &mut String, mut v: &[u8]) {
    while let Some(i) = memchr::memchr(0xEE, v) {
        // `v` is valid UTF-8, so 0xEE starts a three-byte character.
        out.push_str(std::str::from_utf8(&v[..i]).unwrap_or_default());
        if matches!(v.get(i + 1), Some(0xBE | 0xBF)) {
            v[i..i + 3].iter().for_each(|&b| out.push(byte_char(b)));
        } else {
            out.push_str(std::str::from_utf8(&v[i..i + 3]).unwrap_or_default());
        }
        v = &v[i + 3..];
    }
    out.push_str(std::str::from_utf8(v).unwrap_or_default());
}

/// The byte a character of the stored form stands for, when it stands for one (the
/// private-use range U+EF80–U+EFFF of [`push_stored`]).
#[inline]
pub fn stored_byte(c: char) -> Option<u8> {
    let n = (c as u32).wrapping_sub(BYTE_BASE);
    (0x80..=0xFF).contains(&n).then_some(n as u8)
}

/// The logged bytes of stored text `s` (the inverse of [`push_stored`]): borrowed when
/// it holds no byte character.
pub fn stored_bytes(s: &str) -> std::borrow::Cow<'_, [u8]> {
    if !s
        .as_bytes()
        .windows(2)
        .any(|w| w[0] == 0xEE && w[1] >= 0xBE)
    {
        return std::borrow::Cow::Borrowed(s.as_bytes());
    }
    let mut out = Vec::with_capacity(s.len());
    let mut buf = [0u8; 4];
    for c in s.chars() {
        match stored_byte(c) {
            Some(b) => out.push(b),
            None => out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A line that could not be parsed.
#[derive(Clone, Debug)]
pub struct BadLine {
    /// 1-based line number in its input.
    pub line: u64,
    /// Why it was rejected.
    pub reason: &'static str,
    /// The line as read (without the newline); for over-long lines only the head.
    pub raw: Vec<u8>,
}

/// Parsed records of one chunk, in line order, plus its bad lines.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    /// Arrival, UTC ms since the epoch.
    pub ts_ms: Vec<i64>,
    /// Timestamp precision as decimal digits (0, 3, 6); may be empty when read from a
    /// dataset by a reader that does not need it.
    pub precision: Vec<u8>,
    /// Client as written.
    pub client: TextColumn,
    /// Client address, when the client is one.
    pub ip: Vec<Option<IpAddr>>,
    /// Rows with equal codes here have equal [`Batch::ip`] ([`NO_CODE`] aside): set by
    /// the dataset reader (the index of each row's address in its row group's
    /// dictionary) so that a report can work per distinct address; `None` elsewhere.
    /// Rows pushed into a batch drop it.
    pub ip_codes: Option<IpCodes>,
    /// identd field.
    pub ident: TextColumn,
    /// Authenticated user.
    pub user: TextColumn,
    /// Method.
    pub method: TextColumn,
    /// Path without query.
    pub path: TextColumn,
    /// Query without `?`.
    pub query: TextColumn,
    /// Protocol.
    pub protocol: TextColumn,
    /// Status.
    pub status: Vec<u16>,
    /// Body bytes; may be empty when read from a dataset by a reader that does not need
    /// them (read them with [`Batch::size`]).
    pub bytes: Vec<Option<u64>>,
    /// Referer.
    pub referer: TextColumn,
    /// User agent.
    pub user_agent: TextColumn,
    /// Host.
    pub host: TextColumn,
    /// Request time in µs; may be empty when read from a dataset by a reader that does
    /// not need it (read it with [`Batch::request_time`]).
    pub request_time_us: Vec<Option<u64>>,
    /// X-Forwarded-For.
    pub xff: TextColumn,
    /// Cookie header present; may be empty when read from a dataset by a reader that
    /// does not need it (read it with [`Batch::cookie`]).
    pub has_cookie: Vec<Option<bool>>,
    /// Whether the client field was a list of addresses, now in `xff`
    /// ([`Record::client_list`]); may be empty when read from a dataset that does not
    /// need it (read it with `.get(i)`: missing = not a list).
    pub client_list: Vec<bool>,
    /// The fields a format was told to capture ([`Record::fields`]), a column per slot;
    /// empty when none was (every log read without `key=field:…`, and the dataset, which
    /// stores no such column): read them with [`Batch::field`].
    pub fields: Vec<TextColumn>,
    /// Line number of each record; may be empty when read from a dataset by a reader
    /// that does not need it (read it with [`Batch::line_no`]).
    pub line: Vec<u64>,
    /// Lines rejected in this chunk, in order.
    pub bad: Vec<BadLine>,
    /// Lines read in this chunk (records + bad + skipped directives).
    pub lines: u64,
    /// Lines that are format directives (`#Fields:` …) or blank: neither records nor bad.
    pub skipped: u64,
}

/// A row an [`IpCodes`] does not cover (its address is worked out from [`Batch::ip`]).
pub const NO_CODE: u32 = u32::MAX;

/// Codes of a batch's addresses ([`Batch::ip_codes`]).
#[derive(Clone, Debug, Default)]
pub struct IpCodes {
    /// One per row, below `slots`, or [`NO_CODE`].
    pub codes: Vec<u32>,
    /// How many codes there may be.
    pub slots: usize,
}

impl IpCodes {
    /// Codes for `clients` as the dataset reader gives them: one per distinct IPv4
    /// address (in order of first appearance, spread out so that slots go unused), none
    /// for the others. For tests of the readers of codes.
    #[cfg(test)]
    pub(crate) fn for_test(clients: &[String]) -> IpCodes {
        let mut seen: Vec<&String> = Vec::new();
        let codes = clients
            .iter()
            .map(|c| {
                if c.parse::<std::net::Ipv4Addr>().is_err() {
                    return NO_CODE;
                }
                let k = seen.iter().position(|s| *s == c).unwrap_or_else(|| {
                    seen.push(c);
                    seen.len() - 1
                });
                (2 * k + 1) as u32
            })
            .collect();
        IpCodes {
            codes,
            slots: 2 * seen.len() + 2,
        }
    }
}

impl Batch {
    /// Number of records.
    pub fn len(&self) -> usize {
        self.ts_ms.len()
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.ts_ms.is_empty()
    }

    /// Appends one record found on `line`.
    pub fn push(&mut self, r: &Record<'_>, line: u64) {
        self.push_with(r, line, TextColumn::push);
    }

    /// Every text column in the coded layout ([`TextColumn::to_coded`]).
    pub fn code_text(&mut self) {
        for c in [
            &mut self.client,
            &mut self.ident,
            &mut self.user,
            &mut self.method,
            &mut self.path,
            &mut self.query,
            &mut self.protocol,
            &mut self.referer,
            &mut self.user_agent,
            &mut self.host,
            &mut self.xff,
        ]
        .into_iter()
        .chain(&mut self.fields)
        {
            if !c.is_coded() {
                *c = c.to_coded();
            }
        }
    }

    /// Appends one record found on `line`, its text columns coded
    /// ([`TextColumn::push_interned`]): what the parse workers build.
    pub fn push_coded(&mut self, r: &Record<'_>, line: u64) {
        self.push_with(r, line, TextColumn::push_interned);
    }

    /// Appends one record, each text field through `text`.
    #[inline]
    fn push_with(&mut self, r: &Record<'_>, line: u64, text: fn(&mut TextColumn, Option<&[u8]>)) {
        if self.ip_codes.is_some() {
            self.ip_codes = None;
        }
        self.ts_ms.push(r.ts_ms);
        self.precision.push(r.precision.digits());
        text(&mut self.client, Some(r.client));
        self.ip.push(r.ip);
        text(&mut self.ident, r.ident);
        text(&mut self.user, r.user);
        text(&mut self.method, r.method);
        text(&mut self.path, r.path);
        text(&mut self.query, r.query);
        text(&mut self.protocol, r.protocol);
        self.status.push(r.status);
        self.bytes.push(r.bytes);
        text(&mut self.referer, r.referer);
        text(&mut self.user_agent, r.user_agent);
        text(&mut self.host, r.host);
        self.request_time_us.push(r.request_time_us);
        text(&mut self.xff, r.xff);
        self.has_cookie.push(r.has_cookie);
        self.client_list.push(r.client_list);
        self.line.push(line);
        if r.captured > 0 || !self.fields.is_empty() {
            self.push_fields(r, text);
        }
    }

    /// Appends the captured fields of `r` (the row itself already pushed): a column per
    /// slot, null for the rows before a column's first value and in the slots `r` does
    /// not fill.
    fn push_fields(&mut self, r: &Record<'_>, text: fn(&mut TextColumn, Option<&[u8]>)) {
        let n = usize::from(r.captured).min(r.fields.len());
        while self.fields.len() < n {
            let mut c = TextColumn::default();
            for _ in 1..self.ts_ms.len() {
                text(&mut c, None);
            }
            self.fields.push(c);
        }
        for (k, c) in self.fields.iter_mut().enumerate() {
            text(c, r.fields.get(k).copied().flatten().filter(|_| k < n));
        }
    }

    /// Row `i`'s captured field in slot `k` ([`Batch::fields`]), `None` when absent.
    #[inline]
    pub fn field(&self, k: usize, i: usize) -> Option<&str> {
        self.fields.get(k).filter(|c| i < c.len())?.get(i)
    }

    /// Keeps only the records whose index satisfies `keep` (bad lines untouched).
    pub fn retain_indices(&self, idx: &[usize]) -> Batch {
        let mut out = Batch::default();
        for &i in idx {
            out.ts_ms.push(self.ts_ms[i]);
            if let Some(&p) = self.precision.get(i) {
                out.precision.push(p);
            }
            out.client.push_str(self.client.get(i));
            out.ip.push(self.ip[i]);
            out.ident.push_str(self.ident.get(i));
            out.user.push_str(self.user.get(i));
            out.method.push_str(self.method.get(i));
            out.path.push_str(self.path.get(i));
            out.query.push_str(self.query.get(i));
            out.protocol.push_str(self.protocol.get(i));
            out.status.push(self.status[i]);
            if let Some(&v) = self.bytes.get(i) {
                out.bytes.push(v);
            }
            out.referer.push_str(self.referer.get(i));
            out.user_agent.push_str(self.user_agent.get(i));
            out.host.push_str(self.host.get(i));
            if let Some(&v) = self.request_time_us.get(i) {
                out.request_time_us.push(v);
            }
            out.xff.push_str(self.xff.get(i));
            if let Some(&v) = self.has_cookie.get(i) {
                out.has_cookie.push(v);
            }
            out.client_list
                .push(self.client_list.get(i).copied().unwrap_or(false));
            if let Some(&v) = self.line.get(i) {
                out.line.push(v);
            }
        }
        out.fields = self
            .fields
            .iter()
            .map(|c| {
                let mut kept = TextColumn::default();
                idx.iter().for_each(|&i| kept.push_str(c.get(i)));
                kept
            })
            .collect();
        out
    }

    /// Row `i`'s response size (`None`: not logged, or the column was not read).
    #[inline]
    pub fn size(&self, i: usize) -> Option<u64> {
        self.bytes.get(i).copied().flatten()
    }

    /// Row `i`'s request time in µs (`None`: not logged, or the column was not read).
    #[inline]
    pub fn request_time(&self, i: usize) -> Option<u64> {
        self.request_time_us.get(i).copied().flatten()
    }

    /// Whether row `i` sent a Cookie header (`None`: not logged, or not read).
    #[inline]
    pub fn cookie(&self, i: usize) -> Option<bool> {
        self.has_cookie.get(i).copied().flatten()
    }

    /// Row `i`'s line in its input (0 where the column was not read).
    #[inline]
    pub fn line_no(&self, i: usize) -> u64 {
        self.line.get(i).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every text column of `b` absent, as the dataset reader leaves a column it did
    /// not read.
    fn absent_texts(b: &mut Batch) {
        for c in [
            &mut b.client,
            &mut b.ident,
            &mut b.user,
            &mut b.method,
            &mut b.path,
            &mut b.query,
            &mut b.protocol,
            &mut b.referer,
            &mut b.user_agent,
            &mut b.host,
            &mut b.xff,
        ] {
            *c = TextColumn::absent();
        }
    }

    #[test]
    fn captured_fields_get_a_column_per_slot() {
        let rec = |t: i64, f: [Option<&'static [u8]>; 2], captured: u8| Record {
            ts_ms: t,
            client: b"1.2.3.4",
            fields: [f[0], f[1], None, None],
            captured,
            ..Record::default()
        };
        for coded in [false, true] {
            let mut b = Batch::default();
            let push = |b: &mut Batch, r: &Record<'_>, l| {
                if coded {
                    b.push_coded(r, l)
                } else {
                    b.push(r, l)
                }
            };
            // No field asked for: no column, no cost.
            push(&mut b, &rec(1, [Some(b"x"), None], 0), 1);
            assert!(b.fields.is_empty());
            push(&mut b, &rec(2, [Some(b"k\\1"), None], 2), 2);
            push(&mut b, &rec(3, [None, Some(b"t")], 2), 3);
            // A row that fills no slot keeps the columns aligned.
            push(&mut b, &rec(4, [Some(b"y"), None], 0), 4);
            push(&mut b, &rec(5, [Some(b"k\\1"), Some(b"t")], 2), 5);
            fn col(b: &Batch, k: usize) -> Vec<Option<&str>> {
                (0..b.len()).map(|i| b.field(k, i)).collect()
            }
            assert_eq!(
                col(&b, 0),
                [None, Some("k\\1"), None, None, Some("k\\1")],
                "coded {coded}"
            );
            assert_eq!(col(&b, 1), [None, None, Some("t"), None, Some("t")]);
            assert_eq!((b.field(2, 0), b.field(0, 99)), (None, None));
            let kept = b.retain_indices(&[1, 2]);
            assert_eq!(col(&kept, 0), [Some("k\\1"), None]);
            assert_eq!(col(&kept, 1), [None, Some("t")]);
            b.code_text();
            assert!(b.fields.iter().all(TextColumn::is_coded));
            assert_eq!(col(&b, 1), [None, None, Some("t"), None, Some("t")]);
        }
    }

    #[test]
    fn columns_not_read_give_their_default() {
        // A batch as the dataset reader makes it without `bytes`, `request_time_us`,
        // `line`, `ts_precision` and `has_cookie`: those vectors stay empty.
        let mut b = Batch::default();
        absent_texts(&mut b);
        for (t, s) in [(1_000, 200u16), (2_000, 404), (3_000, 500)] {
            b.ts_ms.push(t);
            b.status.push(s);
            b.ip.push(None);
        }
        assert_eq!(b.len(), 3);
        for i in 0..3 {
            assert_eq!(
                (b.size(i), b.request_time(i), b.cookie(i), b.line_no(i)),
                (None, None, None, 0)
            );
        }
        let kept = b.retain_indices(&[0, 2]);
        assert_eq!(kept.ts_ms, [1_000, 3_000]);
        assert_eq!(kept.status, [200, 500]);
        assert!(kept.bytes.is_empty() && kept.line.is_empty() && kept.has_cookie.is_empty());
        // Read columns answer per row.
        b.bytes = vec![Some(10), None, Some(30)];
        b.line = vec![7, 8, 9];
        b.has_cookie = vec![Some(true), None, Some(false)];
        b.request_time_us = vec![None, Some(1_500), None];
        assert_eq!(
            (0..3)
                .map(|i| (b.size(i), b.request_time(i), b.cookie(i), b.line_no(i)))
                .collect::<Vec<_>>(),
            [
                (Some(10), None, Some(true), 7),
                (None, Some(1_500), None, 8),
                (Some(30), None, Some(false), 9)
            ]
        );
        let kept = b.retain_indices(&[2]);
        assert_eq!(
            (kept.size(0), kept.line_no(0), kept.cookie(0)),
            (Some(30), 9, Some(false))
        );
    }

    #[test]
    fn first_use_order() {
        assert!(in_first_use_order(&[], 0));
        assert!(in_first_use_order(&[0, NULL_CODE, 0, 1, 0, 2, 1], 3));
        assert!(!in_first_use_order(&[0, 2, 1], 3));
        assert!(!in_first_use_order(&[1, 0], 2));
        assert!(!in_first_use_order(&[0, 1], 3));
        assert!(!in_first_use_order(&[NULL_CODE], 1));
    }

    proptest::proptest! {
        /// A column's own answer (known where it was built in order) is the check of
        /// its rows, whatever mix of appends built it.
        #[test]
        fn a_column_knows_its_first_use_order(
            ops in proptest::collection::vec((0u8..7, 0u8..4), 0..60),
            start_plain in proptest::bool::ANY,
        ) {
            let mut c = if start_plain { TextColumn::default() } else { TextColumn::coded() };
            let word = |x: u8| ["a", "b", "c", "d"][x as usize];
            for (op, x) in ops {
                match op {
                    0..=2 => c.push_interned(Some(word(x).as_bytes())),
                    3 => c.push_interned(None),
                    4 => c.push(if x == 0 { None } else { Some(word(x).as_bytes()) }),
                    5 => c.push_code(u32::from(x).min(c.slots() as u32)),
                    _ => {
                        c.push_value(word(x));
                    }
                }
            }
            let check = c.codes().is_some_and(|k| in_first_use_order(k, c.slots()));
            proptest::prop_assert_eq!(c.in_first_use_order(), check);
            let coded = c.to_coded();
            let k = coded.codes().expect("coded");
            proptest::prop_assert_eq!(coded.in_first_use_order(), in_first_use_order(k, coded.slots()));
        }
    }

    proptest::proptest! {
        /// The branch-free check answers as a walk with the set of slots seen does, on
        /// sequences that are mostly in order (long stretches of used slots, new ones
        /// among them) with a slot skipped here and there, or one slot too many.
        #[test]
        fn first_use_order_is_the_walk_with_a_set(
            steps in proptest::collection::vec((0u8..40, 0u32..6), 0..300),
            extra in 0usize..3,
        ) {
            let mut codes = Vec::new();
            let mut used = 0u32;
            for (kind, x) in steps {
                codes.push(match kind {
                    0..=2 => { used += 1; used - 1 }
                    3 => NULL_CODE,
                    4 => used + x,
                    _ => x.min(used.saturating_sub(1)),
                });
            }
            let walk = |codes: &[u32], slots: usize| {
                let mut seen = std::collections::BTreeSet::new();
                codes.iter().filter(|&&k| k != NULL_CODE).all(|&k| {
                    let ok = k as usize <= seen.len();
                    seen.insert(k);
                    ok
                }) && seen.len() == slots
            };
            let slots = used as usize + extra;
            proptest::prop_assert_eq!(in_first_use_order(&codes, slots), walk(&codes, slots));
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 1000,
            rng_seed: proptest::test_runner::RngSeed::Fixed(9),
            ..proptest::prelude::ProptestConfig::default()
        })]
        #[test]
        fn interned_column_reads_as_the_plain_one(
            rows in proptest::collection::vec(
                proptest::option::of(proptest::collection::vec(
                    proptest::sample::select(vec![b'a', b'\\', b'x', b'f', 0xff, 0xc3, 0xa9, 0xee, 0xbe, 0x80]),
                    0..5,
                )),
                0..60,
            )
        ) {
            let mut plain = TextColumn::default();
            let mut coded = TextColumn::default();
            for v in &rows {
                plain.push(v.as_deref());
                coded.push_interned(v.as_deref());
            }
            let distinct: std::collections::HashSet<&[u8]> =
                rows.iter().flatten().map(|v| v.as_slice()).collect();
            proptest::prop_assert_eq!(coded.slots(), distinct.len());
            for (i, row) in rows.iter().enumerate() {
                proptest::prop_assert_eq!(coded.get(i), plain.get(i));
                let back = coded.get(i).map(|s| stored_bytes(s).into_owned());
                proptest::prop_assert_eq!(back.as_ref(), row.as_ref());
            }
        }
    }

    #[test]
    fn an_absent_column_reads_null_on_every_row() {
        let c = TextColumn::absent();
        for i in [0, 1, 65_535, usize::MAX] {
            assert_eq!(c.code(i), None);
            assert_eq!(c.get(i), None);
        }
        assert_eq!(c.slots(), 0);
        let mut b = Batch {
            ts_ms: vec![5, 6, 7],
            ip: vec![None; 3],
            status: vec![200; 3],
            bytes: vec![None; 3],
            precision: vec![0; 3],
            request_time_us: vec![None; 3],
            has_cookie: vec![None; 3],
            line: vec![1, 2, 3],
            ..Batch::default()
        };
        absent_texts(&mut b);
        let kept = b.retain_indices(&[0, 2]);
        assert_eq!(kept.ts_ms, vec![5, 7]);
        assert_eq!(kept.path.get(1), None);
    }

    #[test]
    fn interned_rows_read_as_plain_rows_with_each_value_stored_once() {
        let rows: &[Option<&[u8]>] = &[
            Some(b"/a"),
            None,
            Some(br"\xff"),
            Some(br"\xff"),
            Some(b"/a"),
            Some(br"\xff"),
            Some(b"\xff"),
            Some(br"a\\b"),
            Some(b"\xff"),
            Some(br"a\\b"),
            Some(b""),
            Some(b""),
        ];
        let mut plain = TextColumn::default();
        let mut coded = TextColumn::default();
        for &v in rows {
            plain.push(v);
            coded.push_interned(v);
        }
        assert!(coded.is_coded());
        assert_eq!(coded.len(), rows.len());
        for i in 0..rows.len() {
            assert_eq!(coded.get(i), plain.get(i), "row {i}");
        }
        // "/a", the four characters `\xff`, the byte 0xff, `a\\b` and "".
        assert_eq!(coded.slots(), 5);
        assert_eq!(coded.code(2), coded.code(3));
        assert_ne!(coded.code(2), coded.code(6));
        assert_eq!(coded.code(6), coded.code(8));
        assert_eq!(coded.get(6), Some("\u{efff}"));
        assert_eq!(coded.get(2), Some(r"\xff"));
        assert_eq!(coded.to_coded().slots(), 5);
    }

    #[test]
    fn invalid_utf8_is_kept_as_byte_characters_not_lost() {
        let mut s = String::new();
        push_stored(&mut s, b"SEARCH /\x90\x90\x02ok \xe2\x82");
        assert_eq!(s, "SEARCH /\u{ef90}\u{ef90}\x02ok \u{efe2}\u{ef82}");
        assert_eq!(
            stored_bytes(&s).as_ref(),
            b"SEARCH /\x90\x90\x02ok \xe2\x82"
        );
        let mut t = String::new();
        push_stored(&mut t, "caf\u{e9}".as_bytes());
        assert_eq!(t, "caf\u{e9}");
        assert!(matches!(stored_bytes(&t), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn stored_form_is_the_logged_text_and_unambiguous() {
        let stored = |b: &[u8]| {
            let mut s = String::new();
            push_stored(&mut s, b);
            s
        };
        // What a server escaped stays as it wrote it: a search for `\x16` finds it.
        assert_eq!(stored(br"/a\x16b"), r"/a\x16b");
        assert_eq!(stored(br#"agent \"q\""#), r#"agent \"q\""#);
        assert_eq!(stored(br"\\"), r"\\");
        // A raw byte 0xAC and the four characters `\xac` differ once stored.
        assert_eq!(stored(b"/a\xac"), "/a\u{efac}");
        assert_ne!(stored(b"/a\xac"), stored(br"/a\xac"));
        // A logged character of the byte range is its three bytes, so it is not
        // mistaken for the byte it would stand for.
        assert_eq!(stored("/\u{efac}".as_bytes()), "/\u{efee}\u{efbe}\u{efac}");
        assert_ne!(stored("\u{efac}".as_bytes()), stored(b"\xac"));
        // Other characters that start with 0xEE are kept.
        assert_eq!(stored("\u{e000}\u{ef7f}".as_bytes()), "\u{e000}\u{ef7f}");
        assert_eq!(stored(b"plain"), "plain");
        for b in [
            &b"/a\xac"[..],
            "/\u{efac}\u{e000}".as_bytes(),
            b"\xee\xbe",
            b"\xee",
            b"x\xee\xbf\xbfy",
        ] {
            assert_eq!(stored_bytes(&stored(b)).as_ref(), b);
        }
    }

    #[test]
    fn text_column_keeps_nulls_and_order() {
        let mut c = TextColumn::default();
        c.push(Some(b"a"));
        c.push(None);
        c.push(Some(b""));
        c.push(Some(b"xyz"));
        assert_eq!(
            c.iter().collect::<Vec<_>>(),
            vec![Some("a"), None, Some(""), Some("xyz")]
        );
    }

    #[test]
    fn coded_column_reads_like_a_plain_one() {
        let mut c = TextColumn::coded();
        let a = c.push_value("GET");
        let b = c.push_value("POST");
        for k in [a, b, NULL_CODE, a, a] {
            c.push_code(k);
        }
        c.push_str(Some("PUT"));
        assert_eq!(
            c.iter().collect::<Vec<_>>(),
            vec![
                Some("GET"),
                Some("POST"),
                None,
                Some("GET"),
                Some("GET"),
                Some("PUT")
            ]
        );
        assert_eq!(c.len(), 6);
        assert_eq!(c.slots(), 3);
        assert_eq!(c.code(3), c.code(0));
        assert_eq!(c.code(2), None);
        // A plain column switched to codes keeps its rows.
        let mut p = TextColumn::default();
        p.push(Some(b"x"));
        p.push(None);
        let k = p.push_value("y");
        p.push_code(k);
        assert_eq!(
            p.iter().collect::<Vec<_>>(),
            vec![Some("x"), None, Some("y")]
        );
    }
}
