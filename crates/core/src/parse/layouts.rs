//! Several layouts in one file: a file detected as one of the CLF family (`combined`,
//! `common`, the `vhost-*` and `combined-*` variants) may mix lines of the others.
//! [`Layered`] parses each line with the detected format and, only when that fails (or
//! reads the client as `-`), tries the compatible layouts in a fixed order, counting
//! how many lines each one took. A file that is all one layout pays nothing: the
//! fallback runs on failing lines only.
//!
//! The compatible layouts, tried in this order (the detected one skipped):
//! `combined`, `common`, `vhost-combined`, `vhost-common`; `combined-rt-mid` (nginx's
//! request time between the size and the referer, `… 206 33973115 0.202 "-" "ua"`, as
//! `$body_bytes_sent $request_time "$http_referer"` formats log it; arrival =
//! `$time_local` − request time); `vhost-combined+extras` and `vhost-common+extras`
//! (a virtual host, often with its port, before the client, and unquoted text after
//! the last field, e.g. a `%D` request time: `example.com:443 1.2.3.4 - - […] … "ua"
//! 116075`); `combined+extras` (combined followed by unquoted text, e.g. Apache's
//! `host:443 (107 47us) TLSv1.3` or free text: the tail is dropped, it goes into no
//! column) and `common+extras` (the same after common, which also reads combined with
//! unquoted `-` for referer and user agent, `… 200 5 - -`); then
//! `combined-one-identity` (one identity field where CLF has two,
//! `1.2.3.4 - [date] "GET / HTTP/1.1" 200 5 "-" "ua"`, from formats written as
//! `$remote_addr - [$time_local] …`; the field goes to `user`); after all of them,
//! `tagged-combined+extras`: combined + extras behind a bracketed program tag, as
//! InfluxDB's HTTP log writes it (`[httpd] ::1 - - […] "POST /write HTTP/1.1" 204 0 "-"
//! "curl/8.5.0" 6f61bc44-… 2513`; the tag goes into no column). A first extra quoted
//! field that is a list of addresses goes to `xff` in every layout (nginx's `main`
//! format: combined + `"$http_x_forwarded_for"`). A fallback reading whose client is
//! `-`, or whose client or virtual host is neither an address nor a host name, is taken
//! only when no layout reads a client.
//!
//! The same layouts also settle a file that no built-in format recognises at all
//! ([`detect_family`]): such a file is read as `combined` with this fallback.

use super::fields::RtUnit;
use super::program::{Builder, FieldKind, TextParser, TimeKind, Trailing};
use super::{Format, LineParser, ParseError, ParseOptions, clf_prefix, combined_suffix};
use crate::record::Record;

/// The fallback layouts, in the order they are tried.
const NAMES: [&str; 11] = [
    "combined",
    "common",
    "vhost-combined",
    "vhost-common",
    "combined+extras",
    "common+extras",
    "combined-one-identity",
    "combined-rt-mid",
    "vhost-combined+extras",
    "vhost-common+extras",
    "tagged-combined+extras",
];

/// The order the fallback layouts are tried in (indices into [`NAMES`]): those that
/// take unquoted extra text after the stricter ones (a virtual host first: read
/// without it, `example.com:443 1.2.3.4 - - […]` would be a client `example.com:443`
/// with the address as its ident), and the one-identity reading last
/// (`1.2.3.4 ident - [date] … -` is combined + a tail, not a user `ident -`); a
/// bracketed tag before the line after everything else.
const ORDER: [usize; NAMES.len()] = [0, 1, 2, 3, 7, 8, 9, 4, 5, 6, 10];

/// Lines parsed by each fallback layout (the detected format's own lines are not
/// counted per line: they are the records minus these).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LayoutCounts {
    by_fallback: [u64; NAMES.len()],
}

impl LayoutCounts {
    /// Adds another worker's counts.
    pub fn add(&mut self, other: &LayoutCounts) {
        for (a, b) in self.by_fallback.iter_mut().zip(other.by_fallback) {
            *a += b;
        }
    }

    /// Records per layout, most first (ties by name): `primary` (the detected format's
    /// name) took `records` minus the fallbacks' lines. Layouts with no line are left
    /// out; no records gives an empty list.
    pub fn named(&self, primary: &str, records: u64) -> Vec<(String, u64)> {
        let fallback: u64 = self.by_fallback.iter().sum();
        let mut v: Vec<(String, u64)> = Vec::new();
        let own = records.saturating_sub(fallback);
        if own > 0 {
            v.push((primary.to_string(), own));
        }
        for (name, n) in NAMES.iter().zip(self.by_fallback) {
            if n > 0 {
                v.push((name.to_string(), n));
            }
        }
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v
    }
}

/// The program of fallback layout `i` of [`NAMES`].
fn program(i: usize) -> super::program::Program {
    let mut b = Builder::new();
    if i == 6 {
        // `CLIENT USER [TIME] "REQUEST" STATUS BYTES "REFERER" "UA"`
        let f = |b: &mut Builder, k: FieldKind| b.field(k, 0, "").expect("builtin");
        f(&mut b, FieldKind::Client);
        b.lit(b" ");
        f(&mut b, FieldKind::User);
        b.lit(b" [");
        f(
            &mut b,
            FieldKind::Time {
                kind: TimeKind::Clf,
                completion: false,
            },
        );
        b.lit(b"] \"");
        f(&mut b, FieldKind::Request);
        b.lit(b"\" ");
        f(&mut b, FieldKind::Status);
        b.lit(b" ");
        f(&mut b, FieldKind::Bytes);
        combined_suffix(&mut b);
        return b.finish(Trailing::Extras).expect("builtin layout");
    }
    if i == 10 {
        // `[httpd] 1.2.3.4 - - [TIME] "REQUEST" STATUS BYTES "REFERER" "UA" …`
        b.lit(b"[");
        b.field(FieldKind::Ignore, 0, "tag").expect("builtin");
        b.lit(b"] ");
        clf_prefix(&mut b, false);
        combined_suffix(&mut b);
        return b.finish(Trailing::Extras).expect("builtin layout");
    }
    if i == 7 {
        clf_prefix(&mut b, true);
        b.lit(b" ");
        b.field(FieldKind::ReqTime(RtUnit::SecsFrac), 0, "")
            .expect("builtin");
        combined_suffix(&mut b);
        return b.finish(Trailing::Extras).expect("builtin layout");
    }
    let vhost = matches!(i, 2 | 3 | 8 | 9);
    if vhost {
        b.field(FieldKind::HostPort, 0, "vhost").expect("builtin");
        b.lit(b" ");
    }
    clf_prefix(&mut b, false);
    let combined = matches!(i, 0 | 2 | 4 | 8);
    if combined {
        combined_suffix(&mut b);
    }
    let trailing = match i {
        0 | 2 => Trailing::Quoted,
        4 | 5 | 8 | 9 => Trailing::Extras,
        _ => Trailing::None,
    };
    b.finish(trailing).expect("builtin layout")
}

/// The index in [`NAMES`] of a format that is itself one of the layouts.
fn own_index(f: &Format) -> Option<usize> {
    match f {
        Format::Combined => Some(0),
        Format::Common => Some(1),
        Format::VhostCombined => Some(2),
        Format::VhostCommon => Some(3),
        _ => None,
    }
}

/// The detected format's parser plus the fallback layouts.
struct Family {
    primary: TextParser,
    alts: Vec<(usize, TextParser)>,
    counts: LayoutCounts,
}

/// Whether a field read as a client or a virtual host is an address or a host name
/// (`[httpd]`, the tag InfluxDB writes before its lines, is neither: read as either,
/// the line is misread).
fn host_like(v: &[u8]) -> bool {
    super::client_ip(v).is_some()
        || v.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b':'))
}

/// Whether a fallback layout's reading has a client: not `-`, an address or a host
/// name, after a virtual host (if any) that is one too.
fn reads_a_client(r: &Record<'_>) -> bool {
    r.client != b"-" && host_like(r.client) && r.host.is_none_or(host_like)
}

impl Family {
    fn parse_line<'l>(&mut self, line: &'l [u8]) -> Result<Record<'l>, ParseError> {
        let mut dash = match self.primary.parse_line(line) {
            Ok(r) if r.client != b"-" => return Ok(r),
            Ok(r) => Ok(r),
            Err(e) if e.is_skip() => return Err(e),
            Err(e) => Err(e),
        };
        let mut dash_from = None;
        for (k, p) in self.alts.iter_mut() {
            if let Ok(r) = p.parse_line(line) {
                if reads_a_client(&r) {
                    self.counts.by_fallback[*k] += 1;
                    return Ok(r);
                }
                if dash.is_err() {
                    dash = Ok(r);
                    dash_from = Some(*k);
                }
            }
        }
        if let (Ok(_), Some(k)) = (&dash, dash_from) {
            self.counts.by_fallback[k] += 1;
        }
        dash
    }
}

impl LineParser for Family {
    fn parse<'a>(&'a mut self, line: &'a [u8]) -> Result<Record<'a>, ParseError> {
        self.parse_line(line)
    }
}

enum Inner {
    Plain(Box<dyn LineParser>),
    Family(Box<Family>),
}

/// A parser for a whole input: the format's own parser, with per-line fallback to the
/// compatible layouts for the CLF family (see the module docs). One per worker.
pub struct Layered {
    inner: Inner,
}

impl Layered {
    /// The parser for `format`.
    pub fn new(format: &Format, opts: &ParseOptions) -> Layered {
        let family = matches!(
            format,
            Format::Combined
                | Format::Common
                | Format::VhostCombined
                | Format::VhostCommon
                | Format::CombinedXff
                | Format::CombinedRt
                | Format::CombinedUs
        );
        let inner = match format.program() {
            Some(prog) if family => {
                let own = own_index(format);
                let alts = ORDER
                    .into_iter()
                    .filter(|i| Some(*i) != own)
                    .map(|i| (i, TextParser::new(std::sync::Arc::new(program(i)), opts)))
                    .collect();
                Inner::Family(Box::new(Family {
                    primary: TextParser::new(prog, opts),
                    alts,
                    counts: LayoutCounts::default(),
                }))
            }
            _ => Inner::Plain(format.parser(opts)),
        };
        Layered { inner }
    }

    /// The line parser to run.
    pub fn as_dyn(&mut self) -> &mut dyn LineParser {
        match &mut self.inner {
            Inner::Plain(p) => p.as_mut(),
            Inner::Family(f) => f.as_mut(),
        }
    }

    /// Lines each fallback layout took so far.
    pub fn counts(&self) -> LayoutCounts {
        match &self.inner {
            Inner::Plain(_) => LayoutCounts::default(),
            Inner::Family(f) => f.counts,
        }
    }
}

/// How many lines of a sample the CLF family reads when read as `combined` with the
/// fallback layouts (a reading without a client, see [`reads_a_client`], does not
/// count), and how many it
/// skips: the last resort of [`super::detect`] for a file that no built-in format
/// recognises as it is.
pub(crate) fn detect_family(sample: &[&[u8]]) -> (usize, usize) {
    let mut l = Layered::new(&Format::Combined, &ParseOptions::default());
    let p = l.as_dyn();
    let (mut ok, mut skip) = (0, 0);
    for line in sample {
        match p.parse(line) {
            Ok(r) if reads_a_client(&r) => ok += 1,
            Ok(_) => {}
            Err(e) if e.is_skip() => skip += 1,
            Err(_) => {}
        }
    }
    (ok, skip)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layered(f: Format) -> Layered {
        Layered::new(&f, &ParseOptions::default())
    }

    const COMBINED: &[u8] =
        br#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.0" 200 5 "-" "ua""#;
    const COMMON: &[u8] = br#"1.2.3.5 - - [10/Oct/2000:13:55:36 -0700] "GET /b HTTP/1.0" 404 -"#;
    const VHOST: &[u8] = br#"example.org:443 1.2.3.6 - - [10/Oct/2000:13:55:36 -0700] "GET /c HTTP/1.1" 200 7 "-" "ua""#;
    const TAIL: &[u8] = br#"1.2.3.7 - - [10/Oct/2000:13:55:36 -0700] "GET /d HTTP/1.1" 200 8 "-" "ua" host:443 (107 47us) TLSv1.3"#;

    #[test]
    fn mixed_lines_fall_back_and_are_counted() {
        let mut l = layered(Format::Combined);
        let p = l.as_dyn();
        assert_eq!(p.parse(COMBINED).unwrap().path, Some(&b"/a"[..]));
        let r = p.parse(COMMON).unwrap();
        assert_eq!(
            (r.client, r.status, r.referer),
            (&b"1.2.3.5"[..], 404, None)
        );
        let r = p.parse(VHOST).unwrap();
        assert_eq!(
            (r.client, r.host),
            (&b"1.2.3.6"[..], Some(&b"example.org"[..]))
        );
        let r = p.parse(TAIL).unwrap();
        assert_eq!(
            (r.client, r.user_agent),
            (&b"1.2.3.7"[..], Some(&b"ua"[..]))
        );
        assert!(p.parse(b"garbage").is_err());
        let n = l.counts().named("combined", 4);
        assert_eq!(
            n,
            vec![
                ("combined".to_string(), 1),
                ("combined+extras".to_string(), 1),
                ("common".to_string(), 1),
                ("vhost-combined".to_string(), 1),
            ]
        );
    }

    #[test]
    fn dash_client_reading_loses_to_an_address() {
        let line =
            br#"1.2.3.4 - john doe [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 5 "-" "ua""#;
        let mut l = layered(Format::VhostCombined);
        let r = l.as_dyn().parse(line).unwrap();
        assert_eq!(r.client, b"1.2.3.4");
        assert_eq!(r.user, Some(&b"john doe"[..]));
        assert_eq!(r.host, None);
    }
}
