//! The fields of a user's format that no built-in column takes — an nginx variable
//! (`$http_x_api_key`), an Apache request header, environment variable or note
//! (`%{X-Api-Key}i`, `%{UNIQUE_ID}e`), a `--json-map` `field:NAME=KEY` entry — and how a
//! format is told to capture some of them ([`Format::capture`]) into
//! [`Record::fields`](crate::record::Record::fields), for a replay keyed on them
//! (`key=field:NAME`). Fields nobody asks for stay ignored: no cost per line.
//!
//! Names are matched ASCII case-insensitively, a leading `$` ignored. A request header
//! answers to its own name and to nginx's variable for it: `%{X-Api-Key}i` is
//! `X-Api-Key` and `http_x_api_key`, `$http_x_api_key` is also `X-Api-Key`.

use std::sync::Arc;

use super::{CustomFormat, Format};
use crate::record::MAX_FIELDS;

/// A field of a user's format that no built-in column takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Extra {
    /// Its name as the format writes it (`http_x_api_key`, `X-Api-Key`, `api_key`).
    pub(crate) name: Box<str>,
    /// The request header it logs, when it is one (`X-Api-Key`).
    pub(crate) header: Option<Box<str>>,
    /// The slot of [`Record::fields`](crate::record::Record::fields) it is captured
    /// into, when a caller asked for it.
    pub(crate) slot: Option<u8>,
}

impl Extra {
    /// A field named `name`: nginx's convention makes `http_NAME` a request header.
    pub(crate) fn named(name: &str) -> Extra {
        Extra {
            name: name.into(),
            header: request_header(name).map(String::into_boxed_str),
            slot: None,
        }
    }

    /// A field that is not a header (an Apache environment variable or note).
    pub(crate) fn plain(name: &str) -> Extra {
        Extra {
            name: name.into(),
            header: None,
            slot: None,
        }
    }

    /// The request header `header` (Apache `%{X-Api-Key}i`).
    pub(crate) fn header(header: &str) -> Extra {
        Extra {
            name: header.into(),
            header: Some(header.into()),
            slot: None,
        }
    }

    /// Whether `want` (a name as a key gives it) names this field.
    pub(crate) fn answers(&self, want: &str) -> bool {
        let want = normalise_field(want);
        normalise_field(&self.name) == want
            || self
                .header
                .as_deref()
                .is_some_and(|h| h.eq_ignore_ascii_case(&want) || header_variable(h) == want)
    }
}

/// A field name as compared: trimmed, without a leading `$`, ASCII lower case.
pub fn normalise_field(name: &str) -> String {
    let n = name.trim();
    n.strip_prefix('$').unwrap_or(n).to_ascii_lowercase()
}

/// The request header a field named after nginx's variables logs: `http_x_api_key` →
/// `X-Api-Key` (each word capitalised, as Go and most servers write it); `None` for a
/// name that does not start with `http_`.
pub fn request_header(name: &str) -> Option<String> {
    let n = normalise_field(name);
    let rest = n.strip_prefix("http_").filter(|r| !r.is_empty())?;
    let words: Vec<String> = rest
        .split(['_', '-'])
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
                None => String::new(),
            }
        })
        .collect();
    Some(words.join("-"))
}

/// nginx's variable for request header `h`: `X-Api-Key` → `http_x_api_key`.
pub fn header_variable(h: &str) -> String {
    format!("http_{}", h.trim().to_ascii_lowercase().replace('-', "_"))
}

/// Why a format cannot capture the fields a replay names.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CaptureError {
    /// The format has no such field.
    #[error("{}", unknown_text(.name, .known))]
    Unknown {
        /// The name asked for.
        name: String,
        /// The fields the format can capture, in format order.
        known: Vec<String>,
    },
    /// More distinct fields than [`MAX_FIELDS`].
    #[error(
        "the candidates' keys name {0} different fields; at most {MAX_FIELDS} can be captured in one replay"
    )]
    TooMany(usize),
}

fn unknown_text(name: &str, known: &[String]) -> String {
    if known.is_empty() {
        format!(
            "the log format captures no field `{name}`: it has no field beyond the built-in columns"
        )
    } else {
        format!(
            "the log format captures no field `{name}`; the fields it captures: {}",
            known.join(", ")
        )
    }
}

/// Where a field a replay names was captured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captured {
    /// Its slot in [`Record::fields`](crate::record::Record::fields).
    pub slot: u8,
    /// The request header it logs, when it is one (`X-Api-Key`).
    pub header: Option<String>,
}

/// The slots of `extras` (format order) for `names`: per extra its slot (`None`: not
/// asked for), per name where it went, and how many slots.
type Plan = (Vec<Option<u8>>, Vec<Captured>, u8);

fn plan(extras: &[&Extra], names: &[&str]) -> Result<Plan, CaptureError> {
    // The distinct fields asked for (by their normalised name), in order of first use.
    let mut chosen: Vec<String> = Vec::new();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let Some(e) = extras.iter().find(|e| e.answers(name)) else {
            let mut known: Vec<String> = Vec::new();
            for e in extras {
                if !known.iter().any(|k| k.eq_ignore_ascii_case(&e.name)) {
                    known.push(e.name.to_string());
                }
            }
            return Err(CaptureError::Unknown {
                name: name.trim().to_string(),
                known,
            });
        };
        let id = normalise_field(&e.name);
        let slot = match chosen.iter().position(|c| *c == id) {
            Some(k) => k,
            None => {
                chosen.push(id);
                chosen.len() - 1
            }
        };
        out.push(Captured {
            slot: slot as u8,
            header: e.header.as_deref().map(str::to_string),
        });
    }
    if chosen.len() > MAX_FIELDS {
        return Err(CaptureError::TooMany(chosen.len()));
    }
    let slots = extras
        .iter()
        .map(|e| {
            let id = normalise_field(&e.name);
            chosen.iter().position(|c| *c == id).map(|k| k as u8)
        })
        .collect();
    Ok((slots, out, chosen.len() as u8))
}

impl Format {
    /// The fields beyond the built-in columns this format can capture, in format order
    /// (each once): a user's nginx or Apache format string, a `--json-map`'s
    /// `field:NAME` entries (inside the CRI prefix too); none for the built-in formats.
    pub fn extra_fields(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let names: Vec<Box<str>> = match self {
            Format::Custom(c) => c.prog.extras().map(|e| e.name.clone()).collect(),
            Format::Json(m) => m.extras().map(|e| e.name.clone()).collect(),
            Format::Cri(inner) => return inner.extra_fields(),
            _ => Vec::new(),
        };
        for n in names {
            if !out.iter().any(|k| k.eq_ignore_ascii_case(&n)) {
                out.push(n.into());
            }
        }
        out
    }

    /// This format capturing the fields `names` name (see the module's matching rules)
    /// into [`Record::fields`](crate::record::Record::fields), and where each went:
    /// names of one field share its slot, slots numbered in order of first use. Fails
    /// when the format has no field of a name (the error lists those it has), or when
    /// the names are more than [`MAX_FIELDS`] fields.
    pub fn capture(&self, names: &[&str]) -> Result<(Format, Vec<Captured>), CaptureError> {
        match self {
            Format::Custom(c) => {
                let extras: Vec<&Extra> = c.prog.extras().collect();
                let (slots, out, n) = plan(&extras, names)?;
                let prog = c.prog.with_slots(&slots, n);
                Ok((
                    Format::Custom(CustomFormat {
                        syntax: c.syntax,
                        source: c.source.clone(),
                        prog: Arc::new(prog),
                    }),
                    out,
                ))
            }
            Format::Json(m) => {
                let extras: Vec<&Extra> = m.extras().collect();
                let (slots, out, n) = plan(&extras, names)?;
                Ok((Format::Json(m.with_slots(&slots, n)), out))
            }
            Format::Cri(inner) => {
                let (f, out) = inner.capture(names)?;
                Ok((Format::Cri(Box::new(f)), out))
            }
            _ => plan(&[], names).map(|(_, out, _)| (self.clone(), out)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_headers() {
        assert_eq!(
            request_header("http_x_api_key").as_deref(),
            Some("X-Api-Key")
        );
        assert_eq!(
            request_header("$HTTP_X_API_KEY").as_deref(),
            Some("X-Api-Key")
        );
        assert_eq!(request_header("api_key"), None);
        assert_eq!(request_header("http_"), None);
        assert_eq!(header_variable("X-Api-Key"), "http_x_api_key");
        let nginx = Extra::named("http_x_api_key");
        let apache = Extra::header("X-Api-Key");
        for e in [&nginx, &apache] {
            for n in [
                "X-Api-Key",
                "x-api-key",
                "http_x_api_key",
                "$http_X_API_KEY",
            ] {
                assert!(e.answers(n), "{e:?} {n}");
            }
            assert!(!e.answers("api_key"));
        }
        let plain = Extra::plain("http_x");
        assert!(plain.answers("HTTP_X") && plain.header.is_none());
    }

    #[test]
    fn captures_only_what_is_asked() {
        let f = Format::nginx(
            r#"$remote_addr - - [$time_local] "$request" $status $body_bytes_sent "$http_x_api_key" $upstream_addr $http_x_api_key"#,
        )
        .unwrap();
        assert_eq!(f.extra_fields(), ["http_x_api_key", "upstream_addr"]);
        let (g, at) = f
            .capture(&["X-Api-Key", "$upstream_addr", "http_x_api_key"])
            .unwrap();
        assert_eq!(
            at,
            [
                Captured {
                    slot: 0,
                    header: Some("X-Api-Key".into())
                },
                Captured {
                    slot: 1,
                    header: None
                },
                Captured {
                    slot: 0,
                    header: Some("X-Api-Key".into())
                },
            ]
        );
        let mut p = g.parser(&Default::default());
        let r = p
            .parse(br#"1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "k1" 10.0.0.1:80 k1"#)
            .unwrap();
        assert_eq!(r.captured, 2);
        assert_eq!(r.fields[0], Some(&b"k1"[..]));
        assert_eq!(r.fields[1], Some(&b"10.0.0.1:80"[..]));
        // Not asked: not captured.
        let mut p = f.parser(&Default::default());
        let r = p
            .parse(br#"1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" - -"#)
            .unwrap();
        assert_eq!((r.captured, r.fields[0]), (0, None));
        let e = f.capture(&["api_key"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the log format captures no field `api_key`; the fields it captures: http_x_api_key, upstream_addr"
        );
        assert!(matches!(
            Format::Combined.capture(&["x"]),
            Err(CaptureError::Unknown { known, .. }) if known.is_empty()
        ));
        let many = Format::nginx("$msec $a $b $c $d $e").unwrap();
        assert_eq!(
            many.capture(&["a", "b", "c", "d", "e"]).unwrap_err(),
            CaptureError::TooMany(5)
        );
    }

    #[test]
    fn apache_headers() {
        let f = Format::apache(r#"%h %l %u %t "%r" %>s %b "%{X-Api-Key}i" %{UNIQUE_ID}e"#).unwrap();
        assert_eq!(f.extra_fields(), ["X-Api-Key", "UNIQUE_ID"]);
        let (g, at) = f.capture(&["http_x_api_key", "unique_id"]).unwrap();
        assert_eq!(at[0].header.as_deref(), Some("X-Api-Key"));
        assert_eq!(at[1].header, None);
        let mut p = g.parser(&Default::default());
        let r = p
            .parse(br#"1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" abc"#)
            .unwrap();
        assert_eq!((r.fields[0], r.fields[1]), (None, Some(&b"abc"[..])));
    }
}
