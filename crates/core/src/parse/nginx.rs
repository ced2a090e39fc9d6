//! Compiler for nginx `log_format` strings (`$remote_addr - $remote_user [$time_local] …`)
//! into a [`Program`].
//!
//! Accepts the bare format, or the format as written in nginx.conf: one or more quoted
//! strings, optionally preceded by `log_format NAME [escape=…]` and followed by `;`.
//! Other variables are fields logscope ignores (nginx allows any variable), named after
//! the variable so that a replay can key on one (`key=field:http_x_api_key`).

use super::FormatError;
use super::captured::Extra;
use super::fields::RtUnit;
use super::program::{Builder, FieldKind, Program, TimeKind, Trailing};

/// The format text with config quoting removed, and for each byte its column in the
/// user's original string (1-based, in characters).
pub(crate) struct Unquoted {
    pub(crate) text: Vec<u8>,
    pub(crate) cols: Vec<usize>,
}

/// For each byte of `src` (and one past the end), the 1-based column, in characters,
/// of the character it belongs to: error messages point at columns, and a byte inside a
/// multi-byte character (`é`) gets that character's column.
pub(crate) fn columns(src: &str) -> Vec<usize> {
    let mut cols = Vec::with_capacity(src.len() + 1);
    let mut col = 0;
    for &c in src.as_bytes() {
        if c & 0xC0 != 0x80 {
            col += 1;
        }
        cols.push(col.max(1));
    }
    cols.push(col + 1);
    cols
}

/// Up to 10 characters of `src` from byte `i` (rounded down to a character start), for
/// error messages.
fn excerpt(src: &str, i: usize) -> String {
    let mut i = i.min(src.len());
    while !src.is_char_boundary(i) {
        i -= 1;
    }
    src[i..].chars().take(10).collect()
}

/// Removes nginx.conf quoting: `log_format main '…' '…';` → the concatenated strings.
fn unquote(src: &str) -> Result<Unquoted, FormatError> {
    let b = src.as_bytes();
    let col_table = columns(src);
    let col_of = |byte: usize| col_table[byte.min(b.len())];
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    skip_ws(&mut i);
    // `log_format NAME [escape=…]`
    if b[i..].starts_with(b"log_format") && b.get(i + 10).is_some_and(u8::is_ascii_whitespace) {
        i += 10;
        skip_ws(&mut i);
        while i < b.len() && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        skip_ws(&mut i);
        if b[i..].starts_with(b"escape=") {
            while i < b.len() && !b[i].is_ascii_whitespace() {
                i += 1;
            }
            skip_ws(&mut i);
        }
    }
    let mut text = Vec::with_capacity(b.len());
    let mut cols = Vec::with_capacity(b.len());
    if i < b.len() && (b[i] == b'\'' || b[i] == b'"') {
        // A sequence of quoted strings.
        while i < b.len() {
            let q = b[i];
            if q == b';' {
                i += 1;
                skip_ws(&mut i);
                if i < b.len() {
                    return Err(FormatError::Invalid {
                        col: col_of(i),
                        token: excerpt(src, i),
                        reason: "text after the closing `;`".into(),
                    });
                }
                break;
            }
            if q != b'\'' && q != b'"' {
                return Err(FormatError::Invalid {
                    col: col_of(i),
                    token: excerpt(src, i),
                    reason: "expected a quoted string (the format is written as one or more '…' strings)"
                        .into(),
                });
            }
            let open = i;
            i += 1;
            loop {
                if i >= b.len() {
                    return Err(FormatError::Invalid {
                        col: col_of(open),
                        token: (q as char).to_string(),
                        reason: "this quote is never closed".into(),
                    });
                }
                let c = b[i];
                if c == q {
                    i += 1;
                    break;
                }
                if c == b'\\' && i + 1 < b.len() {
                    let e = b[i + 1];
                    let out = match e {
                        b'"' | b'\'' | b'\\' => e,
                        b't' => b'\t',
                        b'n' => b'\n',
                        b'r' => b'\r',
                        _ => {
                            text.push(b'\\');
                            cols.push(col_of(i));
                            i += 1;
                            continue;
                        }
                    };
                    text.push(out);
                    cols.push(col_of(i));
                    i += 2;
                    continue;
                }
                text.push(c);
                cols.push(col_of(i));
                i += 1;
            }
            skip_ws(&mut i);
        }
    } else {
        let end = src.trim_end().trim_end_matches(';').len();
        for (k, &c) in b.iter().enumerate().take(end).skip(i) {
            text.push(c);
            cols.push(col_of(k));
        }
    }
    Ok(Unquoted { text, cols })
}

/// What an nginx variable logs.
fn var_kind(name: &str) -> FieldKind {
    match name.to_ascii_lowercase().as_str() {
        "remote_addr" => FieldKind::Client,
        "remote_user" => FieldKind::User,
        "time_local" => FieldKind::Time {
            kind: TimeKind::Clf,
            completion: true,
        },
        "time_iso8601" => FieldKind::Time {
            kind: TimeKind::Iso,
            completion: true,
        },
        "msec" => FieldKind::Time {
            kind: TimeKind::EpochSecs,
            completion: true,
        },
        "request" => FieldKind::Request,
        "request_method" => FieldKind::Method,
        "request_uri" => FieldKind::Uri,
        "uri" | "document_uri" => FieldKind::Path,
        "args" | "query_string" => FieldKind::Query,
        "server_protocol" => FieldKind::Protocol,
        "status" => FieldKind::Status,
        "body_bytes_sent" => FieldKind::Bytes,
        "http_referer" => FieldKind::Referer,
        "http_user_agent" => FieldKind::UserAgent,
        "http_x_forwarded_for" => FieldKind::Xff,
        "http_cookie" => FieldKind::Cookie,
        "host" | "http_host" | "server_name" => FieldKind::Host,
        "request_time" => FieldKind::ReqTime(RtUnit::Secs),
        // Any other variable is a field named after it (`$http_x_api_key`: the
        // request header X-Api-Key), captured when a replay's key names it.
        _ => FieldKind::Extra(Box::new(Extra::named(name))),
    }
}

/// Compiles an nginx `log_format` string.
pub(crate) fn compile(src: &str) -> Result<Program, FormatError> {
    if src.trim().is_empty() {
        return Err(FormatError::Empty);
    }
    let Unquoted { text, cols } = unquote(src)?;
    if text.is_empty() {
        return Err(FormatError::Empty);
    }
    let mut b = Builder::new();
    let mut bytes_sent_idx = Vec::new();
    let mut i = 0;
    let mut lit = Vec::new();
    while i < text.len() {
        let c = text[i];
        if c != b'$' {
            lit.push(c);
            i += 1;
            continue;
        }
        let col = cols[i];
        let (name, next) = if text.get(i + 1) == Some(&b'{') {
            let close = text[i + 2..]
                .iter()
                .position(|&c| c == b'}')
                .ok_or_else(|| FormatError::Invalid {
                    col,
                    token: "${".into(),
                    reason: "missing `}`".into(),
                })?;
            (&text[i + 2..i + 2 + close], i + 3 + close)
        } else {
            let n = text[i + 1..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                .count();
            (&text[i + 1..i + 1 + n], i + 1 + n)
        };
        let token = String::from_utf8_lossy(&text[i..next]).into_owned();
        if name.is_empty() || !name.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_') {
            return Err(FormatError::Invalid {
                col,
                token,
                reason: "`$` must be followed by a variable name ([A-Za-z0-9_]+)".into(),
            });
        }
        b.lit(&lit);
        lit.clear();
        let name = std::str::from_utf8(name).expect("ascii");
        let mut kind = var_kind(name);
        if kind == FieldKind::Client && b.has(|k| *k == FieldKind::Client) {
            kind = FieldKind::Ignore;
        }
        if name.eq_ignore_ascii_case("bytes_sent") {
            bytes_sent_idx.push(b.field_index());
        }
        b.field(kind, col, &token)?;
        i = next;
    }
    b.lit(&lit);
    if !b.has(|k| *k == FieldKind::Bytes) {
        for idx in bytes_sent_idx {
            b.set_kind(idx, FieldKind::Bytes);
        }
    }
    b.finish(Trailing::None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquoting() {
        let u = unquote("log_format main '$remote_addr \"x\"' \n  '$status';").unwrap();
        assert_eq!(u.text, b"$remote_addr \"x\"$status");
        assert_eq!(u.cols[0], 18);
        let u = unquote("$remote_addr [$time_local]").unwrap();
        assert_eq!(u.text, b"$remote_addr [$time_local]");
        assert!(unquote("'abc").is_err());
    }

    #[test]
    fn columns_count_characters() {
        let s = "aé€b";
        assert_eq!(columns(s), [1, 2, 2, 3, 3, 3, 4, 5]);
        assert_eq!(columns(""), [1]);
        assert_eq!(excerpt(s, 2), "é€b");
        assert_eq!(excerpt(s, 99), "");
        let Err(u) = unquote("'é$status' x") else {
            panic!("text after the strings is an error")
        };
        assert!(u.to_string().starts_with("column 12:"), "{u}");
    }
}
