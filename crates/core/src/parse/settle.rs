//! Settling an input's format: the syntax of a user's format string recognised (nginx
//! `log_format` or Apache `LogFormat`), or the format detected from a sample of the
//! input's first lines, with a typed reason when neither works.

use super::{Detection, Format, FormatError, detect};
use crate::escape;

/// Why no format could be settled. The messages leave out the input's name: callers
/// put it in front (`NAME: …`).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SettleError {
    /// A format string with neither `$variable`s (nginx) nor `%directive`s (Apache).
    #[error("'{0}' has no $variable (nginx log_format) and no %directive (Apache LogFormat)")]
    UnknownSyntax(String),
    /// The format string is recognised but does not compile.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// The sample holds bytes but no complete line short enough to look at.
    #[error(
        "cannot recognise the log format: its first {bytes} bytes hold no complete line of at most {max_line} bytes (--max-line)"
    )]
    NoCompleteLine {
        /// Bytes sampled.
        bytes: usize,
        /// The longest line looked at.
        max_line: usize,
    },
    /// No built-in format parses any sampled line.
    #[error(
        "cannot recognise the log format: none of the known formats matches any of its first {lines} lines (first line: \"{}\")",
        escape::terminal(.first, 120)
    )]
    NoMatch {
        /// Lines sampled.
        lines: usize,
        /// The first of them, as read.
        first: Vec<u8>,
    },
    /// The stream is damaged so early that too little came out to tell its format.
    #[error("too little came out before the damage to recognise the format")]
    Damaged,
}

/// Compiles a user's format string, recognising its syntax: `$variable`s without `%`
/// are nginx, `%directive`s without `$` are Apache, both together are taken as nginx
/// (a `%` in an nginx format is a literal).
pub fn log_format(f: &str) -> Result<Format, SettleError> {
    let (dollar, percent) = (f.contains('$'), f.contains('%'));
    let fmt = if dollar {
        Format::nginx(f)
    } else if percent {
        Format::apache(f)
    } else {
        return Err(SettleError::UnknownSyntax(f.to_string()));
    };
    Ok(fmt?)
}

/// What was sampled from the start of an input (`source::Reader::sample`).
#[derive(Clone, Copy, Debug)]
pub struct Sampled<'s> {
    /// Its first non-blank complete lines.
    pub lines: &'s [&'s [u8]],
    /// Bytes sampled.
    pub bytes: usize,
    /// Whether the input holds nothing but white space.
    pub blank: bool,
    /// Whether the stream was found damaged within the sample.
    pub damaged: bool,
    /// The longest line the sample considered.
    pub max_line: usize,
}

/// The format of an input, detected from its sample. An empty input, or a damaged one
/// that gave no line at all (reading it reports the damage), has nothing to parse:
/// any format does, and `combined` is returned without a detection.
pub fn from_sample(s: &Sampled<'_>) -> Result<(Format, Option<Detection>), SettleError> {
    let Some(&first) = s.lines.first() else {
        if !s.blank && !s.damaged {
            return Err(SettleError::NoCompleteLine {
                bytes: s.bytes,
                max_line: s.max_line,
            });
        }
        return Ok((Format::Combined, None));
    };
    match detect(s.lines) {
        Some(d) => Ok((d.format.clone(), Some(d))),
        None if s.damaged => Err(SettleError::Damaged),
        None => Err(SettleError::NoMatch {
            lines: s.lines.len(),
            first: first.to_vec(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_format_syntax() {
        assert!(matches!(
            log_format("$remote_addr [$time_local] \"$request\" $status"),
            Ok(Format::Custom(_))
        ));
        assert!(matches!(
            log_format("%h %l %u %t \"%r\" %>s %b"),
            Ok(Format::Custom(_))
        ));
        assert_eq!(
            log_format("no fields here"),
            Err(SettleError::UnknownSyntax("no fields here".into()))
        );
        assert!(matches!(log_format("%Q"), Err(SettleError::Format(_))));
    }

    fn sampled<'s>(lines: &'s [&'s [u8]], blank: bool, damaged: bool) -> Sampled<'s> {
        Sampled {
            lines,
            bytes: 10,
            blank,
            damaged,
            max_line: 4096,
        }
    }

    #[test]
    fn from_samples() {
        let line: &[u8] =
            br#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" "ua""#;
        let (f, d) = from_sample(&sampled(&[line], false, false)).unwrap();
        assert_eq!(f, Format::Combined);
        assert!(d.is_some());
        assert_eq!(
            from_sample(&sampled(&[], true, false)).unwrap(),
            (Format::Combined, None)
        );
        assert_eq!(
            from_sample(&sampled(&[], false, true)).unwrap(),
            (Format::Combined, None)
        );
        assert_eq!(
            from_sample(&sampled(&[], false, false)),
            Err(SettleError::NoCompleteLine {
                bytes: 10,
                max_line: 4096
            })
        );
        let junk: &[u8] = b"junk \x1b[31m";
        let e = from_sample(&sampled(&[junk], false, false)).unwrap_err();
        assert!(e.to_string().contains("first 1 lines"), "{e}");
        assert!(!e.to_string().contains('\x1b'), "{e}");
        assert_eq!(
            from_sample(&sampled(&[junk], false, true)),
            Err(SettleError::Damaged)
        );
    }

    /// A file of one line that no built-in format takes as it is, but the per-line
    /// fallback layouts read, is recognised (as `combined`) and read with the right
    /// fields.
    #[test]
    fn odd_clf_lines_are_recognised_through_the_fallback_layouts() {
        type Want<'w> = (
            &'w [u8],
            Option<&'w [u8]>,
            Option<&'w [u8]>,
            Option<&'w [u8]>,
        );
        let cases: &[(&[u8], Want)] = &[
            // combined, then unquoted extra fields
            (
                br#"1.2.3.4 - - [03/Apr/2017:03:27:28 -0600] "GET /a HTTP/1.1" 404 419 "-" "ua" - 115052 5.6.7.8"#,
                (b"1.2.3.4", None, Some(b"ua"), None),
            ),
            // unquoted `-` for referer and user agent
            (
                br#"1.2.3.4 - - [03/Apr/2017:03:27:28 -0600] "GET /a HTTP/1.1" 404 419 - -"#,
                (b"1.2.3.4", None, None, None),
            ),
            // a virtual host with its port before the client, a request time after
            (
                br#"localhost:443 178.20.184.42 1j0vhgd jsmith [26/Jul/2023:00:01:26 -0700] "GET /a?b=1 HTTP/2.0" 200 17163 "https://r/" "Mozilla/5.0" 116075"#,
                (
                    b"178.20.184.42",
                    Some(b"https://r/"),
                    Some(b"Mozilla/5.0"),
                    Some(b"localhost"),
                ),
            ),
            // Apache's extended tail
            (
                br#"1.2.3.4 - - [03/Apr/2017:03:27:28 -0600] "GET /a HTTP/1.1" 200 5 "-" "ua" example.org:443 (107 47us) TLSv1.3"#,
                (b"1.2.3.4", None, Some(b"ua"), None),
            ),
        ];
        for (line, want) in cases {
            let (f, d) = from_sample(&sampled(&[line], false, false))
                .unwrap_or_else(|e| panic!("{}: {e}", String::from_utf8_lossy(line)));
            assert_eq!(f, Format::Combined);
            let d = d.expect("detected");
            assert_eq!((d.matched, d.sampled), (1, 1));
            let mut l = super::super::Layered::new(&f, &Default::default());
            let r = l.as_dyn().parse(line).expect("the layouts read it");
            assert_eq!((r.client, r.referer, r.user_agent, r.host), *want);
            assert_eq!(r.path, Some(&b"/a"[..]));
            assert!(r.status >= 200 && r.bytes.is_some());
        }
        let r_line: &[u8] = cases[2].0;
        let mut l = super::super::Layered::new(&Format::Combined, &Default::default());
        let r = l.as_dyn().parse(r_line).unwrap();
        assert_eq!(
            (r.ident, r.user, r.query, r.status, r.bytes),
            (
                Some(&b"1j0vhgd"[..]),
                Some(&b"jsmith"[..]),
                Some(&b"b=1"[..]),
                200,
                Some(17163)
            )
        );
        // A bracketed program tag before the line (InfluxDB's HTTP log).
        let tagged: &[u8] = br#"[httpd] ::1 - - [14/Jun/2016:11:33:29 +0100] "POST /write HTTP/1.1" 204 0 "-" "InfluxDBClient" 6f61bc44-321b-11e6-8050-000000000000 2513"#;
        let (f, _) = from_sample(&sampled(&[tagged], false, false)).unwrap();
        let mut l = super::super::Layered::new(&f, &Default::default());
        let r = l.as_dyn().parse(tagged).unwrap();
        assert_eq!(
            (r.client, r.path, r.status, r.user_agent),
            (
                &b"::1"[..],
                Some(&b"/write"[..]),
                204,
                Some(&b"InfluxDBClient"[..])
            )
        );
        // Lines the layouts read only with a `-` client, or with a client or virtual
        // host that is neither an address nor a host name, are still not recognised.
        let dash: &[u8] = br#"- - - [03/Apr/2017:03:27:28 -0600] "GET /a HTTP/1.1" 200 5 x"#;
        let braced: &[u8] = br#"{httpd} ::1 - - [14/Jun/2016:11:33:29 +0100] "POST /write HTTP/1.1" 204 0 "-" "InfluxDBClient" 2513"#;
        for line in [dash, braced] {
            let got = from_sample(&sampled(&[line], false, false));
            assert!(matches!(got, Err(SettleError::NoMatch { .. })), "{got:?}");
        }
    }
}
