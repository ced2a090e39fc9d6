//! The compiled form of a text log format: a list of literals and fields, and the one
//! generic matcher ([`TextParser`]) that runs it over a line without allocating.
//!
//! Every text format — the predefined ones and the user's nginx/Apache format strings —
//! compiles into a [`Program`]. Each field's end is found by the literal that follows it
//! (memchr), by its fixed width (CLF time), by its own syntax (strftime times), or, for
//! a field between double quotes, by the next unescaped `"` (`\"` is an escape, as
//! Apache writes it; nginx writes `"` as `\x22`, which needs no special case).

use memchr::{memchr, memrchr};

use super::captured::Extra;
use super::fields::RtUnit;
use super::fields::{
    client_list, dash_none, dash_only, find_quote, is_addr_list, parse_ip, parse_rt, parse_status,
    split_absolute, split_request, split_target, starts_with_quoted_list, strip_port,
};
use super::{FormatError, LineParser, ParseError, ParseOptions};
use crate::record::{Precision, Record};
use crate::time::{self, ClfTime};

/// One element of a strftime-like time pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TItem {
    Lit(u8),
    Year,
    Month,
    MonthAbbr,
    Day,
    Hour,
    Minute,
    Second,
    Zone,
    EpochSecs,
}

/// How a time field is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TimeKind {
    /// `dd/Mon/yyyy:HH:MM:SS ±hhmm`, 26 bytes (`$time_local`, Apache `%t` inside `[]`).
    Clf,
    /// ISO 8601 / RFC 3339 (`$time_iso8601`); a missing zone uses the default offset.
    Iso,
    /// Epoch seconds with an optional fraction (`$msec`, `%{sec}t`).
    EpochSecs,
    /// Epoch milliseconds, integer (`%{msec}t`).
    EpochMillis,
    /// Epoch microseconds, integer (`%{usec}t`).
    EpochMicros,
    /// Millisecond fraction to add to a seconds timestamp (`%{msec_frac}t`).
    FracMillis,
    /// Microsecond fraction to add to a seconds timestamp (`%{usec_frac}t`).
    FracMicros,
    /// A strftime pattern (`%{%Y-%m-%d %H:%M:%S}t`).
    Strftime(Box<[TItem]>),
}

/// What a field is, i.e. where its value goes in the [`Record`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FieldKind {
    Client,
    /// `address:port` (AWS): the port is dropped.
    ClientPort,
    Ident,
    User,
    Host,
    /// Host with an optional `:port` suffix to strip (`%v:%p` of vhost formats).
    HostPort,
    /// A timestamp; `completion` when it stamps the end of the request (nginx, Caddy).
    Time {
        kind: TimeKind,
        completion: bool,
    },
    Request,
    /// A request line whose target may be absolute (`GET https://host:443/p HTTP/1.1`,
    /// AWS): the authority goes to `host`, the rest to path/query.
    RequestAbs,
    Method,
    Path,
    Query,
    Uri,
    Protocol,
    Status,
    Bytes,
    Referer,
    UserAgent,
    Xff,
    Cookie,
    ReqTime(RtUnit),
    Ignore,
    /// A field no built-in column takes, named (an nginx variable, an Apache header,
    /// environment variable or note): ignored unless the format was told to capture it
    /// ([`Program::with_slots`]).
    Extra(Box<Extra>),
}

impl FieldKind {
    fn is_number(&self) -> bool {
        matches!(
            self,
            FieldKind::Status | FieldKind::Bytes | FieldKind::ReqTime(_) | FieldKind::Time { .. }
        )
    }

    fn is_time(&self) -> bool {
        matches!(self, FieldKind::Time { .. })
    }
}

/// How the matcher finds where a field ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// At the next unescaped `"` (the field sits between double quotes).
    Quoted,
    /// At the first occurrence of the first byte of the literal that follows.
    Lit,
    /// After exactly this many bytes.
    Fixed(usize),
    /// Where its own syntax stops (strftime patterns).
    SelfDelim,
    /// At the end of the line.
    Eol,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Field {
    kind: FieldKind,
    end: End,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Lit(Box<[u8]>),
    Field(Field),
}

/// What may follow the last token of a format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trailing {
    /// Nothing: the format matches the whole line.
    None,
    /// Any number of extra ` "…"` fields (the combined family).
    Quoted,
    /// Anything after a space (AWS logs, which add fields at the end over time).
    Any,
    /// Complete ` "…"` fields, then optionally unquoted text after a space (Apache's
    /// `host:443 (107 47us) TLSv1.3`, free text); a quote left open is still an error,
    /// so a line cut short stays a bad line.
    Extras,
}

/// A compiled text format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Program {
    toks: Vec<Tok>,
    /// What may follow the last token.
    trailing: Trailing,
    /// Strip an extra pair of double quotes around the whole line.
    strip_outer: bool,
    /// Ignore spaces and tabs before the first field (the format starts with one).
    trim_lead: bool,
    /// The format has no X-Forwarded-For field and takes extra ` "…"` fields: the
    /// first extra field goes to `xff` when it is a list of addresses (nginx's
    /// `main` format, combined + `"$http_x_forwarded_for"`, in a combined file).
    xff_extra: bool,
    /// How many slots of [`Record::fields`] the [`FieldKind::Extra`] fields fill.
    captured: u8,
}

impl Program {
    /// The named fields no built-in column takes, in format order.
    pub(crate) fn extras(&self) -> impl Iterator<Item = &Extra> {
        self.toks.iter().filter_map(|t| match t {
            Tok::Field(Field {
                kind: FieldKind::Extra(e),
                ..
            }) => Some(&**e),
            _ => None,
        })
    }

    /// The same program capturing its extra fields ([`Program::extras`], in that
    /// order) into `slots` (`None`: ignored), `captured` slots in all.
    pub(crate) fn with_slots(&self, slots: &[Option<u8>], captured: u8) -> Program {
        let mut p = self.clone();
        let mut at = slots.iter();
        for t in &mut p.toks {
            if let Tok::Field(Field {
                kind: FieldKind::Extra(e),
                ..
            }) = t
            {
                e.slot = at.next().copied().flatten();
            }
        }
        p.captured = captured;
        p
    }
}

/// Builds a [`Program`] token by token, checking that fields can be delimited.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    toks: Vec<Tok>,
    /// Column (1-based) and token text of each field, for error messages.
    origins: Vec<(usize, String)>,
}

impl Builder {
    pub(crate) fn new() -> Builder {
        Builder::default()
    }

    /// Appends literal bytes (merged with a preceding literal).
    pub(crate) fn lit(&mut self, b: &[u8]) {
        if b.is_empty() {
            return;
        }
        if let Some(Tok::Lit(prev)) = self.toks.last_mut() {
            let mut v = prev.to_vec();
            v.extend_from_slice(b);
            *prev = v.into_boxed_slice();
        } else {
            self.toks.push(Tok::Lit(b.into()));
        }
    }

    /// Appends a field. `col` (1-based) and `token` describe it in error messages.
    pub(crate) fn field(
        &mut self,
        kind: FieldKind,
        col: usize,
        token: &str,
    ) -> Result<(), FormatError> {
        if let Some(Tok::Field(prev)) = self.toks.last_mut() {
            // `%U%q`: path immediately followed by `?query` is one request target.
            if prev.kind == FieldKind::Path && kind == FieldKind::Query {
                prev.kind = FieldKind::Uri;
                return Ok(());
            }
            let self_delimiting = matches!(
                prev.kind,
                FieldKind::Time {
                    kind: TimeKind::Clf | TimeKind::Strftime(_),
                    ..
                }
            );
            if !self_delimiting {
                let (pcol, ptok) = self.origins.last().cloned().unwrap_or_default();
                return Err(FormatError::Adjacent {
                    col,
                    token: token.to_string(),
                    prev_col: pcol,
                    prev: ptok,
                });
            }
        }
        self.toks.push(Tok::Field(Field {
            kind,
            end: End::Eol,
        }));
        self.origins.push((col, token.to_string()));
        Ok(())
    }

    /// Index the next token will have (for [`Builder::set_kind`]).
    pub(crate) fn field_index(&self) -> usize {
        self.toks.len()
    }

    /// Changes the kind of the field at token index `idx`.
    pub(crate) fn set_kind(&mut self, idx: usize, kind: FieldKind) {
        if let Some(Tok::Field(f)) = self.toks.get_mut(idx) {
            f.kind = kind;
        }
    }

    /// Whether any field so far is of this kind (used for precedence, e.g. `%O` vs `%b`).
    pub(crate) fn has(&self, pred: impl Fn(&FieldKind) -> bool) -> bool {
        self.toks
            .iter()
            .any(|t| matches!(t, Tok::Field(f) if pred(&f.kind)))
    }

    /// Finishes the program: decides how each field ends and checks that there is a
    /// timestamp.
    pub(crate) fn finish(mut self, trailing: Trailing) -> Result<Program, FormatError> {
        if self.toks.is_empty() {
            return Err(FormatError::Empty);
        }
        if !self.has(FieldKind::is_time) {
            return Err(FormatError::NoTime);
        }
        let n = self.toks.len();
        for i in 0..n {
            let prev_quote =
                i > 0 && matches!(&self.toks[i - 1], Tok::Lit(l) if l.ends_with(b"\""));
            let next = self.toks.get(i + 1).cloned();
            if let Tok::Field(f) = &mut self.toks[i] {
                f.end = match (&f.kind, &next) {
                    (
                        FieldKind::Time {
                            kind: TimeKind::Clf,
                            ..
                        },
                        _,
                    ) => End::Fixed(ClfTime::LEN),
                    (
                        FieldKind::Time {
                            kind: TimeKind::Strftime(_),
                            ..
                        },
                        _,
                    ) => End::SelfDelim,
                    (_, Some(Tok::Lit(l))) if prev_quote && l.starts_with(b"\"") => End::Quoted,
                    (_, Some(Tok::Lit(_))) => End::Lit,
                    (_, None) => End::Eol,
                    (_, Some(Tok::Field(_))) => unreachable!("checked in Builder::field"),
                };
            }
        }
        let strip_outer = !matches!(&self.toks[0], Tok::Lit(l) if l.starts_with(b"\""));
        let trim_lead = matches!(&self.toks[0], Tok::Field(_));
        let xff_extra = matches!(trailing, Trailing::Quoted | Trailing::Extras)
            && !self.has(|k| *k == FieldKind::Xff);
        Ok(Program {
            toks: self.toks,
            trailing,
            strip_outer,
            trim_lead,
            xff_extra,
            captured: 0,
        })
    }
}

/// Time being assembled from one or more time fields of a line.
#[derive(Clone, Copy, Debug, Default)]
///
/// Microseconds are `i128`, so that no combination of parsed values (epoch numbers,
/// fractions, request times) can overflow; the window check happens once, at the end.
struct TimeAcc {
    have: bool,
    us: i128,
    prec: Precision,
    completion: bool,
    frac_us: Option<(i64, Precision)>,
}

impl TimeAcc {
    #[inline]
    fn offer(&mut self, us: i128, prec: Precision, completion: bool) {
        if !self.have || prec > self.prec {
            self.have = true;
            self.us = us;
            self.prec = prec;
            self.completion = completion;
        }
    }
}

/// Parses a strftime pattern at the start of `s`; returns local-or-UTC µs, the zone
/// offset if the pattern had `%z` (or `%s`, which is UTC), and the bytes consumed.
fn parse_strftime(items: &[TItem], s: &[u8]) -> Option<(i128, Option<i32>, usize)> {
    let mut i = 0;
    let (mut y, mut mo, mut d, mut h, mut mi, mut se) = (1970i64, 1u32, 1u32, 0u32, 0u32, 0u32);
    let mut off = None;
    let mut epoch: Option<i128> = None;
    let num = |i: &mut usize, max: usize| -> Option<u32> {
        let start = *i;
        let mut v = 0u32;
        while *i < s.len() && *i - start < max && s[*i].is_ascii_digit() {
            v = v * 10 + (s[*i] - b'0') as u32;
            *i += 1;
        }
        if *i == start { None } else { Some(v) }
    };
    for it in items {
        match *it {
            TItem::Lit(c) => {
                if s.get(i) != Some(&c) {
                    return None;
                }
                i += 1;
            }
            TItem::Year => y = num(&mut i, 4)? as i64,
            TItem::Month => mo = num(&mut i, 2)?,
            TItem::Day => {
                if s.get(i) == Some(&b' ') {
                    i += 1; // %e pads with a space
                }
                d = num(&mut i, 2)?
            }
            TItem::Hour => h = num(&mut i, 2)?,
            TItem::Minute => mi = num(&mut i, 2)?,
            TItem::Second => se = num(&mut i, 2)?,
            TItem::MonthAbbr => {
                mo = time::month_from_abbr(s.get(i..i + 3)?)?;
                i += 3;
            }
            TItem::Zone => {
                let z = s.get(i..i + 5)?;
                off = Some(time::parse_offset(z)?);
                i += 5;
            }
            TItem::EpochSecs => {
                let start = i;
                while i < s.len() && s[i].is_ascii_digit() {
                    i += 1;
                }
                epoch = Some(time::parse_uint(&s[start..i])? as i128);
            }
        }
    }
    if let Some(e) = epoch {
        return Some((e * 1_000_000, Some(0), i));
    }
    let days = time::checked_days(y, mo, d)?;
    let tod = time::checked_hms(h, mi, se)?;
    Some((
        (days as i128 * time::SECS_PER_DAY as i128 + tod as i128) * 1_000_000,
        off,
        i,
    ))
}

/// The generic matcher: runs a [`Program`] over lines.
pub(crate) struct TextParser {
    prog: std::sync::Arc<Program>,
    clf: ClfTime,
    default_offset: i32,
}

impl TextParser {
    pub(crate) fn new(prog: std::sync::Arc<Program>, opts: &ParseOptions) -> TextParser {
        TextParser {
            prog,
            clf: ClfTime::new(),
            default_offset: opts.default_offset_secs,
        }
    }
}

impl LineParser for TextParser {
    fn parse<'a>(&'a mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError> {
        self.parse_line(line)
    }
}

/// After a user field that ended at the first byte of literal `l` which then did not
/// match: the user name has spaces in it (`1.2.3.4 - john doe [...]`). Returns the
/// user's length when the literal follows later and the reading is plausible: the
/// ident was `-`, and the name has no quote and does not start with `- ` (which is a
/// vhost line read one field off).
fn spaced_user(from: &[u8], l: &[u8]) -> Option<usize> {
    let n = memchr::memmem::find(from, l)?;
    let v = &from[..n];
    (n > 0 && !v.starts_with(b"- ") && memchr(b'"', v).is_none()).then_some(n)
}

impl TextParser {
    /// Parses one line; the record borrows only from the line (so that callers may
    /// try another parser after a failure).
    pub(crate) fn parse_line<'l>(&mut self, line: &'l [u8]) -> Result<Record<'l>, ParseError> {
        let TextParser {
            prog,
            clf,
            default_offset,
        } = self;
        let mut line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return Err(ParseError::Empty);
        }
        if prog.trim_lead && (line[0] == b' ' || line[0] == b'\t') {
            let n = line
                .iter()
                .position(|c| *c != b' ' && *c != b'\t')
                .unwrap_or(line.len());
            line = &line[n..];
            if line.is_empty() {
                return Err(ParseError::Empty);
            }
        }
        if prog.strip_outer
            && line.len() >= 2
            && line[0] == b'"'
            && line[line.len() - 1] == b'"'
            && !starts_with_quoted_list(line)
        {
            line = &line[1..line.len() - 1];
        }
        let mut rec = Record {
            captured: prog.captured,
            ..Record::default()
        };
        let mut t = TimeAcc::default();
        let mut rt: Option<u64> = None;
        let toks = &prog.toks;
        let mut pos = 0usize;
        // Where the last field started (for a user name with spaces).
        let mut field_start = 0usize;
        for (i, tok) in toks.iter().enumerate() {
            let rest = &line[pos..];
            match tok {
                Tok::Lit(l) => {
                    if !rest.starts_with(l) {
                        let after_user = i > 0
                            && matches!(&toks[i - 1], Tok::Field(f)
                                if f.kind == FieldKind::User && f.end == End::Lit)
                            && rec.ident.is_none();
                        match after_user
                            .then(|| spaced_user(&line[field_start..], l))
                            .flatten()
                        {
                            Some(n) => {
                                rec.user = Some(&line[field_start..field_start + n]);
                                pos = field_start + n;
                            }
                            None => {
                                return Err(if l.starts_with(rest) {
                                    ParseError::Truncated
                                } else {
                                    ParseError::Mismatch
                                });
                            }
                        }
                    }
                    pos += l.len();
                }
                Tok::Field(f) => {
                    field_start = pos;
                    let (v, used) = match f.end {
                        End::Quoted => {
                            let n = find_quote(rest).ok_or(ParseError::UnterminatedQuote)?;
                            (&rest[..n], n)
                        }
                        End::Lit => {
                            let Tok::Lit(l) = &toks[i + 1] else {
                                unreachable!()
                            };
                            // The field ends at the first byte of the next literal; the
                            // literal itself is checked next (no searching further: a
                            // field never contains its delimiter).
                            let n = memchr(l[0], rest).ok_or(ParseError::Truncated)?;
                            (&rest[..n], n)
                        }
                        End::Fixed(n) => {
                            if rest.len() < n {
                                return Err(ParseError::BadTimestamp);
                            }
                            (&rest[..n], n)
                        }
                        End::Eol if f.kind.is_number() => {
                            // A number ends at a space; what follows is trailing data.
                            let n = memchr(b' ', rest).unwrap_or(rest.len());
                            (&rest[..n], n)
                        }
                        End::Eol | End::SelfDelim => (rest, rest.len()),
                    };
                    let mut used = used;
                    match &f.kind {
                        FieldKind::Client => {
                            if v.is_empty() {
                                return Err(ParseError::MissingClient);
                            }
                            rec.client = v;
                            if (v[0] == b'"' || v[v.len() - 1] == b',')
                                && let Some(l) = client_list(rest)
                            {
                                // A list of addresses (X-Forwarded-For logged as the
                                // client): the client is its first public address.
                                rec.client = l.client;
                                rec.xff = Some(l.list);
                                rec.client_list = true;
                                used = l.used;
                            } else if let Some(i) = v.iter().rposition(|&c| c != b',')
                                && i + 1 < v.len()
                            {
                                // A list cut to one item that is not an address
                                // (`localhost, - - […]`): the item without the comma.
                                rec.client = &v[..=i];
                            }
                            rec.ip = parse_ip(rec.client);
                        }
                        FieldKind::ClientPort => {
                            let c = strip_port(v);
                            if c.is_empty() || c == b"-" {
                                return Err(ParseError::MissingClient);
                            }
                            rec.client = c;
                            rec.ip = parse_ip(c);
                        }
                        FieldKind::Ident => rec.ident = dash_none(v),
                        FieldKind::User => rec.user = dash_none(v),
                        FieldKind::Host => {
                            // `1.2.3.4, 5.6.7.8 …` is a client list, not a vhost
                            // `1.2.3.4,` followed by a client.
                            if v.last() == Some(&b',') {
                                return Err(ParseError::Mismatch);
                            }
                            if rec.host.is_none() {
                                rec.host = dash_none(v)
                            }
                        }
                        FieldKind::HostPort => {
                            if v.last() == Some(&b',') {
                                return Err(ParseError::Mismatch);
                            }
                            let h = match memrchr(b':', v) {
                                Some(c)
                                    if c + 1 < v.len()
                                        && v[c + 1..].iter().all(u8::is_ascii_digit) =>
                                {
                                    &v[..c]
                                }
                                _ => v,
                            };
                            rec.host = dash_none(h);
                        }
                        FieldKind::Time { kind, completion } => {
                            let completion = *completion;
                            match kind {
                                TimeKind::Clf => {
                                    let s = clf.parse(v).ok_or(ParseError::BadTimestamp)?;
                                    t.offer(s as i128 * 1_000_000, Precision::Second, completion);
                                }
                                TimeKind::Iso => {
                                    let it =
                                        time::parse_iso8601(v).ok_or(ParseError::BadTimestamp)?;
                                    t.offer(
                                        it.utc_us(*default_offset) as i128,
                                        Precision::from_digits(it.frac_digits),
                                        completion,
                                    );
                                }
                                TimeKind::EpochSecs => {
                                    let (us, dg) = time::parse_decimal_micros(v)
                                        .ok_or(ParseError::BadTimestamp)?;
                                    t.offer(us as i128, Precision::from_digits(dg), completion);
                                }
                                TimeKind::EpochMillis => {
                                    let ms = time::parse_uint(v).ok_or(ParseError::BadTimestamp)?;
                                    t.offer(ms as i128 * 1000, Precision::Milli, completion);
                                }
                                TimeKind::EpochMicros => {
                                    let us = time::parse_uint(v).ok_or(ParseError::BadTimestamp)?;
                                    t.offer(us as i128, Precision::Micro, completion);
                                }
                                TimeKind::FracMillis | TimeKind::FracMicros => {
                                    let (want, scale, p) = if *kind == TimeKind::FracMillis {
                                        (3, 1000, Precision::Milli)
                                    } else {
                                        (6, 1, Precision::Micro)
                                    };
                                    if v.len() != want {
                                        return Err(ParseError::BadTimestamp);
                                    }
                                    let f = time::parse_uint(v).ok_or(ParseError::BadTimestamp)?;
                                    t.frac_us = Some((f as i64 * scale, p));
                                }
                                TimeKind::Strftime(items) => {
                                    let (us, off, n) = parse_strftime(items, rest)
                                        .ok_or(ParseError::BadTimestamp)?;
                                    used = n;
                                    let utc =
                                        us - off.unwrap_or(*default_offset) as i128 * 1_000_000;
                                    t.offer(utc, Precision::Second, completion);
                                }
                            }
                        }
                        FieldKind::Request => split_request(v, &mut rec),
                        FieldKind::RequestAbs => {
                            split_request(v, &mut rec);
                            if let Some(p) = rec.path
                                && let Some((host, path)) = split_absolute(p)
                            {
                                if rec.host.is_none() {
                                    rec.host = Some(host);
                                }
                                rec.path = if path.is_empty() { None } else { Some(path) };
                            }
                        }
                        FieldKind::Method => rec.method = dash_none(v),
                        FieldKind::Path => rec.path = dash_none(v),
                        FieldKind::Query => {
                            let q = v.strip_prefix(b"?").unwrap_or(v);
                            rec.query = dash_none(q);
                        }
                        FieldKind::Uri => {
                            if let Some(u) = dash_none(v) {
                                split_target(u, &mut rec);
                            }
                        }
                        FieldKind::Protocol => rec.protocol = dash_none(v),
                        // A status logged as `-` (no response was sent) is kept as 0.
                        FieldKind::Status if v == b"-" => rec.status = 0,
                        FieldKind::Status => {
                            rec.status = parse_status(v).ok_or(if v.is_empty() {
                                ParseError::MissingStatus
                            } else {
                                ParseError::BadStatus
                            })?;
                        }
                        FieldKind::Bytes => {
                            rec.bytes = if v == b"-" {
                                None
                            } else {
                                Some(time::parse_uint(v).ok_or(ParseError::BadBytes)?)
                            };
                        }
                        FieldKind::Referer => rec.referer = dash_only(v),
                        FieldKind::UserAgent => rec.user_agent = dash_only(v),
                        FieldKind::Xff => {
                            // A client list already holds the whole chain.
                            if !rec.client_list {
                                rec.xff = dash_none(v);
                            }
                        }
                        FieldKind::Cookie => rec.has_cookie = Some(dash_none(v).is_some()),
                        FieldKind::ReqTime(unit) => {
                            if v != b"-" && !(*unit == RtUnit::SecsOrNeg && v == b"-1") {
                                let us = parse_rt(v, *unit).ok_or(ParseError::BadRequestTime)?;
                                rt = Some(us);
                                rec.request_time_us = Some(us);
                            }
                        }
                        FieldKind::Ignore => {}
                        FieldKind::Extra(e) => {
                            if let Some(k) = e.slot
                                && let Some(f) = rec.fields.get_mut(usize::from(k))
                            {
                                *f = dash_none(v);
                            }
                        }
                    }
                    pos += used;
                }
            }
        }
        if pos < line.len() {
            let mut r = &line[pos..];
            match prog.trailing {
                Trailing::None => return Err(ParseError::TrailingData),
                Trailing::Any => {
                    if r[0] != b' ' {
                        return Err(ParseError::TrailingData);
                    }
                }
                Trailing::Extras => {
                    let mut first = true;
                    while let Some(q) = r.strip_prefix(b" \"") {
                        let n = find_quote(q).ok_or(ParseError::UnterminatedQuote)?;
                        if first && prog.xff_extra && rec.xff.is_none() && is_addr_list(&q[..n]) {
                            rec.xff = Some(&q[..n]);
                        }
                        first = false;
                        r = &q[n + 1..];
                    }
                    if !r.is_empty() && r[0] != b' ' {
                        return Err(ParseError::TrailingData);
                    }
                }
                Trailing::Quoted => {
                    let mut first = true;
                    while !r.is_empty() {
                        r = r.strip_prefix(b" \"").ok_or(ParseError::TrailingData)?;
                        let n = find_quote(r).ok_or(ParseError::UnterminatedQuote)?;
                        if first && prog.xff_extra && rec.xff.is_none() && is_addr_list(&r[..n]) {
                            rec.xff = Some(&r[..n]);
                        }
                        first = false;
                        r = &r[n + 1..];
                    }
                }
            }
        }
        if !t.have {
            return Err(ParseError::BadTimestamp);
        }
        let mut us = t.us;
        let mut prec = t.prec;
        if let Some((f, p)) = t.frac_us
            && prec == Precision::Second
        {
            us += f as i128;
            prec = p;
        }
        if t.completion
            && let Some(rt) = rt
        {
            us -= rt as i128;
        }
        rec.ts_ms = time::arrival_ms(us).ok_or(ParseError::TimestampOutOfRange)?;
        rec.precision = prec;
        Ok(rec)
    }
}
