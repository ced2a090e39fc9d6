//! Compiler for Apache `LogFormat` strings (`%h %l %u %t "%r" %>s %b …`) into a
//! [`Program`].
//!
//! Accepts the bare format, the format with config escaping (`\"%r\"`), or a whole
//! `LogFormat "…" nickname` line. Directives whose value logscope does not use
//! (`%A`, `%{…}e`, `%{…}n`, `%X`, …) are matched and ignored; a request header
//! (`%{X-Api-Key}i`), an environment variable (`%{UNIQUE_ID}e`) or a note (`%{ratio}n`)
//! is a field named after it, which a replay can key on (`key=field:X-Api-Key`).

use super::FormatError;
use super::captured::Extra;
use super::fields::RtUnit;
use super::program::{Builder, FieldKind, Program, TItem, TimeKind, Trailing};

/// The format with config quoting removed, plus each byte's column in the original.
fn unquote(src: &str) -> (Vec<u8>, Vec<usize>) {
    let col_table = super::nginx::columns(src);
    let col_of = |byte: usize| col_table[byte.min(src.len())];
    let b = src.as_bytes();
    let mut start = 0;
    let mut end = b.len();
    while start < end && b[start].is_ascii_whitespace() {
        start += 1;
    }
    while end > start && b[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    if b[start..end].len() > 9 && b[start..start + 9].eq_ignore_ascii_case(b"LogFormat") {
        start += 9;
        while start < end && b[start].is_ascii_whitespace() {
            start += 1;
        }
    }
    // Wrapped in single quotes as on a shell command line.
    if end - start >= 2 && b[start] == b'\'' && b[end - 1] == b'\'' {
        start += 1;
        end -= 1;
    }
    // A whole quoted config string: `"…"` possibly followed by a nickname.
    let mut quoted = false;
    if start < end && b[start] == b'"' {
        let mut i = start + 1;
        while i < end {
            match b[i] {
                b'\\' => i += 2,
                b'"' => break,
                _ => i += 1,
            }
        }
        if i < end {
            let after = src.get(i + 1..end).unwrap_or_default();
            let nick = after.trim();
            if nick.is_empty() || (!nick.contains(['%', '"', ' ']) && after.starts_with(' ')) {
                start += 1;
                end = i;
                quoted = true;
            }
        }
    }
    let mut text = Vec::with_capacity(end - start);
    let mut cols = Vec::with_capacity(end - start);
    let mut i = start;
    while i < end {
        let c = b[i];
        // Config escapes; outside a quoted config string only `\"` (a common paste).
        if c == b'\\' && i + 1 < end {
            let e = b[i + 1];
            let out = match e {
                b'"' => Some(b'"'),
                b'\\' if quoted => Some(b'\\'),
                b't' if quoted => Some(b'\t'),
                b'n' if quoted => Some(b'\n'),
                _ => None,
            };
            if let Some(o) = out {
                text.push(o);
                cols.push(col_of(i));
                i += 2;
                continue;
            }
        }
        text.push(c);
        cols.push(col_of(i));
        i += 1;
    }
    (text, cols)
}

/// Compiles a strftime pattern of `%{…}t`.
fn strftime(fmt: &[u8], col: usize, token: &str) -> Result<TimeKind, FormatError> {
    if fmt == b"%d/%b/%Y:%H:%M:%S %z" {
        return Ok(TimeKind::Clf);
    }
    let mut items = Vec::new();
    let mut i = 0;
    let mut any = false;
    while i < fmt.len() {
        if fmt[i] != b'%' {
            items.push(TItem::Lit(fmt[i]));
            i += 1;
            continue;
        }
        let Some(&c) = fmt.get(i + 1) else {
            return Err(FormatError::Invalid {
                col,
                token: token.into(),
                reason: "the time format ends with a lone `%`".into(),
            });
        };
        any |= c != b'%';
        match c {
            b'Y' => items.push(TItem::Year),
            b'm' => items.push(TItem::Month),
            b'd' | b'e' => items.push(TItem::Day),
            b'H' => items.push(TItem::Hour),
            b'M' => items.push(TItem::Minute),
            b'S' => items.push(TItem::Second),
            b'b' | b'h' => items.push(TItem::MonthAbbr),
            b'z' => items.push(TItem::Zone),
            b's' => items.push(TItem::EpochSecs),
            b'T' => items.extend([
                TItem::Hour,
                TItem::Lit(b':'),
                TItem::Minute,
                TItem::Lit(b':'),
                TItem::Second,
            ]),
            b'F' => items.extend([
                TItem::Year,
                TItem::Lit(b'-'),
                TItem::Month,
                TItem::Lit(b'-'),
                TItem::Day,
            ]),
            b'%' => items.push(TItem::Lit(b'%')),
            _ => {
                return Err(FormatError::Invalid {
                    col,
                    token: token.into(),
                    reason: format!(
                        "strftime conversion %{} is not supported in a time format \
                         (supported: %Y %m %d %e %H %M %S %b %h %z %s %T %F %%)",
                        c as char
                    ),
                });
            }
        }
        i += 2;
    }
    if !any {
        return Err(FormatError::Invalid {
            col,
            token: token.into(),
            reason: "the time format has no date or time conversion".into(),
        });
    }
    Ok(TimeKind::Strftime(items.into_boxed_slice()))
}

/// Compiles an Apache `LogFormat` string.
pub(crate) fn compile(src: &str) -> Result<Program, FormatError> {
    if src.trim().is_empty() {
        return Err(FormatError::Empty);
    }
    let (text, cols) = unquote(src);
    let mut b = Builder::new();
    let mut lit: Vec<u8> = Vec::new();
    let mut o_idx = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if text[i] != b'%' {
            lit.push(text[i]);
            i += 1;
            continue;
        }
        let col = cols[i];
        let start = i;
        i += 1;
        if text.get(i) == Some(&b'%') {
            lit.push(b'%');
            i += 1;
            continue;
        }
        // Modifiers: `!`, status lists `400,501`, `<`, `>`.
        while i < text.len() && matches!(text[i], b'!' | b',' | b'<' | b'>' | b'0'..=b'9') {
            i += 1;
        }
        let mut arg: Option<&[u8]> = None;
        if text.get(i) == Some(&b'{') {
            let close = text[i + 1..]
                .iter()
                .position(|&c| c == b'}')
                .ok_or_else(|| FormatError::Invalid {
                    col,
                    token: String::from_utf8_lossy(&text[start..]).into_owned(),
                    reason: "missing `}`".into(),
                })?;
            arg = Some(&text[i + 1..i + 1 + close]);
            i += close + 2;
        }
        let Some(&letter) = text.get(i) else {
            return Err(FormatError::Invalid {
                col,
                token: String::from_utf8_lossy(&text[start..]).into_owned(),
                reason: "`%` at the end of the format is not followed by a directive letter".into(),
            });
        };
        i += 1;
        // A non-ASCII "letter" (`%é`): take its whole character into the message.
        while letter >= 0x80 && text.get(i).is_some_and(|c| c & 0xC0 == 0x80) {
            i += 1;
        }
        if letter == b'^' {
            // %{VAR}^ti / ^to (trailers)
            i = (i + 2).min(text.len());
        }
        let token = String::from_utf8_lossy(&text[start..i]).into_owned();
        let argl = arg.map(|a| a.to_ascii_lowercase());
        let mut is_o = false;
        let kind = match letter {
            b'h' | b'a' => {
                if b.has(|k| *k == FieldKind::Client) {
                    FieldKind::Ignore
                } else {
                    FieldKind::Client
                }
            }
            b'l' => FieldKind::Ident,
            b'u' => FieldKind::User,
            b'r' => FieldKind::Request,
            b'm' => FieldKind::Method,
            b'U' => FieldKind::Path,
            b'q' => FieldKind::Query,
            b'H' => FieldKind::Protocol,
            b's' => FieldKind::Status,
            b'b' | b'B' => FieldKind::Bytes,
            b'O' => {
                is_o = true;
                FieldKind::Ignore
            }
            b'D' => FieldKind::ReqTime(RtUnit::Micros),
            b'T' => match argl.as_deref() {
                None | Some(b"s") => FieldKind::ReqTime(RtUnit::Secs),
                Some(b"ms") => FieldKind::ReqTime(RtUnit::Millis),
                Some(b"us") => FieldKind::ReqTime(RtUnit::Micros),
                Some(_) => {
                    return Err(FormatError::Invalid {
                        col,
                        token,
                        reason: "%{UNIT}T takes s, ms or us".into(),
                    });
                }
            },
            b'v' | b'V' => FieldKind::Host,
            b'i' => match argl.as_deref() {
                Some(b"referer") | Some(b"referrer") => FieldKind::Referer,
                Some(b"user-agent") => FieldKind::UserAgent,
                Some(b"x-forwarded-for") => FieldKind::Xff,
                Some(b"cookie") => FieldKind::Cookie,
                Some(b"host") => FieldKind::Host,
                Some(_) => FieldKind::Extra(Box::new(Extra::header(&String::from_utf8_lossy(
                    arg.unwrap_or_default(),
                )))),
                None => {
                    return Err(FormatError::Invalid {
                        col,
                        token,
                        reason: "%i needs a header name, e.g. %{User-Agent}i".into(),
                    });
                }
            },
            b't' => {
                let (completion, a) = match arg {
                    Some(a) if a.starts_with(b"end:") => (true, Some(&a[4..])),
                    Some(a) if a.starts_with(b"begin:") => (false, Some(&a[6..])),
                    a => (false, a),
                };
                let kind = match a {
                    None | Some(b"") => {
                        lit.push(b'[');
                        b.lit(&lit);
                        lit.clear();
                        b.field(
                            FieldKind::Time {
                                kind: TimeKind::Clf,
                                completion,
                            },
                            col,
                            &token,
                        )?;
                        lit.push(b']');
                        continue;
                    }
                    Some(b"sec") => TimeKind::EpochSecs,
                    Some(b"msec") => TimeKind::EpochMillis,
                    Some(b"usec") => TimeKind::EpochMicros,
                    Some(b"msec_frac") => TimeKind::FracMillis,
                    Some(b"usec_frac") => TimeKind::FracMicros,
                    Some(f) => strftime(f, col, &token)?,
                };
                FieldKind::Time { kind, completion }
            }
            b'e' | b'n' if arg.is_some_and(|a| !a.is_empty()) => FieldKind::Extra(Box::new(
                Extra::plain(&String::from_utf8_lossy(arg.unwrap_or_default())),
            )),
            b'A' | b'C' | b'c' | b'e' | b'f' | b'I' | b'k' | b'L' | b'n' | b'o' | b'p' | b'P'
            | b'R' | b'S' | b'X' | b'x' | b'^' => FieldKind::Ignore,
            _ => return Err(FormatError::UnknownDirective { col, token }),
        };
        b.lit(&lit);
        lit.clear();
        if is_o {
            o_idx.push(b.field_index());
        }
        b.field(kind, col, &token)?;
    }
    b.lit(&lit);
    if !b.has(|k| *k == FieldKind::Bytes) {
        for idx in o_idx {
            b.set_kind(idx, FieldKind::Bytes);
        }
    }
    b.finish(Trailing::None)
}
