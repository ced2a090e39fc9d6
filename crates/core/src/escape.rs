//! Escaping of attacker-controlled log text for terminals, Markdown, HTML and CSV, and
//! of paths in messages.

use std::fmt::Write;

/// Text safe to print on a terminal: the bytes in the stored form of log text
/// ([`crate::batch::push_stored`]), then shown as [`terminal_str`] shows it: a byte
/// that is not UTF-8 and control characters (ESC, CR, BEL, …) as `\xHH`, as nginx and
/// Apache write them in their logs; cut to `max` characters with `…`.
pub fn terminal(bytes: &[u8], max: usize) -> String {
    let mut stored = String::with_capacity(bytes.len());
    crate::batch::push_stored(&mut stored, bytes);
    terminal_str(&stored, max)
}

/// [`terminal`] for text already known to be UTF-8 and in the stored form (log text read
/// from a batch or the dataset) or our own: a stored byte (U+EF80–U+EFFF) is shown as
/// `\xHH`, backslashes are left as they are.
pub fn terminal_str(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in s.chars().enumerate() {
        if n >= max {
            out.push('…');
            return out;
        }
        push_char(&mut out, c);
    }
    out
}

/// Whether `c` is shown as `\xHH` escapes: C0 controls, DEL, C1 controls, zero-width
/// and bidi formatting characters, and the Unicode line and paragraph separators.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || crate::batch::stored_byte(c).is_some()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

fn push_char(out: &mut String, c: char) {
    if let Some(b) = crate::batch::stored_byte(c) {
        // A byte of the log that is not UTF-8.
        let _ = write!(out, "\\x{b:02x}");
    } else if needs_escape(c) {
        // C0/C1 controls and bidi overrides can rewrite what the terminal shows.
        let mut buf = [0u8; 4];
        for b in c.encode_utf8(&mut buf).bytes() {
            let _ = write!(out, "\\x{b:02x}");
        }
    } else {
        out.push(c);
    }
}

/// A message (which may quote paths, options or log text) safe to print on a
/// terminal: like [`terminal_str`], uncut, but line breaks (`\n`) are kept.
pub fn message(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, line) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&terminal_str(line, usize::MAX));
    }
    out
}

/// A path (user-supplied or taken from input) safe to print in a message: like
/// [`terminal`], with bytes that are not UTF-8 shown as `\xHH`.
pub fn path(p: &std::path::Path) -> String {
    terminal(p.as_os_str().as_encoded_bytes(), 1000)
}

/// One CSV cell (RFC 4180) as every CSV writer of logscope writes it: control and
/// formatting characters escaped as `\xHH` (as for terminals, so a cell never holds a
/// raw ESC, BEL, CR or newline), a leading `'` on a cell a spreadsheet would run as a
/// formula (`=`, `+`, `-`, `@` not starting a number), and quotes when the cell holds
/// `,` or `"`.
pub fn csv_cell(s: &str) -> String {
    let escaped = if s.chars().any(needs_escape) {
        std::borrow::Cow::Owned(terminal_str(s, usize::MAX))
    } else {
        std::borrow::Cow::Borrowed(s)
    };
    let defused = match escaped.as_bytes().first() {
        Some(b'=' | b'+' | b'-' | b'@') if escaped.len() > 1 && escaped.parse::<f64>().is_err() => {
            std::borrow::Cow::Owned(format!("'{escaped}"))
        }
        _ => escaped,
    };
    if defused.contains([',', '"']) {
        format!("\"{}\"", defused.replace('"', "\"\""))
    } else {
        defused.into_owned()
    }
}

/// Text safe inside a one-line `#` comment of an emitted config: every character
/// [`terminal`] would escape (controls, line breaks, bidi and zero-width formatting)
/// becomes `?`, so the comment stays one line and reads as it is.
pub fn comment(s: &str) -> String {
    s.chars()
        .map(|c| if needs_escape(c) { '?' } else { c })
        .collect()
}

/// Serialized JSON safe to print on a terminal and to embed in a page: every character
/// [`terminal`] would escape that the JSON serializer leaves raw (DEL, C1 controls,
/// zero-width and bidi formatting characters, U+2028/U+2029) written as `\uXXXX`, which
/// every JSON reader decodes back to the same text. Such characters only occur inside
/// JSON strings, so the document's structure is untouched.
pub fn json(s: &str) -> std::borrow::Cow<'_, str> {
    // C0 controls are escaped by the serializer inside strings: outside them they are
    // the document's own line breaks and indentation.
    let raw = |c: char| c >= '\u{7f}' && needs_escape(c);
    if !s.chars().any(raw) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if raw(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{u:04x}");
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Text safe inside a Markdown table cell: markup characters backslash-escaped and `&`
/// as `&amp;` (so a logged `&lt;` shows as written, not as `<`).
pub fn markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in terminal_str(s, usize::MAX).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '|' | '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '!' | '~' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Text safe inside HTML element content and attribute values.
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in terminal_str(s, usize::MAX).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_controls_and_bad_utf8() {
        assert_eq!(terminal(b"a\x1b[31mred\x07", 100), "a\\x1b[31mred\\x07");
        assert_eq!(terminal(b"\x90\x90ok", 100), "\\x90\\x90ok");
        assert_eq!(terminal(b"abcdef", 3), "abc…");
        // Both read as nginx writes them: `\x1b` as logged, a raw ESC escaped.
        assert_eq!(terminal(b"\\x1b", 100), "\\x1b");
        assert_eq!(terminal(b"\x1b", 100), "\\x1b");
        assert_eq!(terminal(br"a\b", 100), r"a\b");
        // A stored byte shows as the byte it stands for, in every output.
        assert_eq!(terminal_str("/\u{efac}", 100), "/\\xac");
        assert_eq!(html("\u{efac}<"), "\\xac&lt;");
        assert_eq!(csv_cell("\u{efac}"), "\\xac");
        assert_eq!(json("\"\u{efac}\""), "\"\\uefac\"");
        assert_eq!(terminal("x\u{202e}y".as_bytes(), 10), "x\\xe2\\x80\\xaey");
        assert_eq!(terminal("x\u{2028}y".as_bytes(), 10), "x\\xe2\\x80\\xa8y");
        assert_eq!(
            path(std::path::Path::new("out\x1b[2J.csv")),
            "out\\x1b[2J.csv"
        );
    }

    #[test]
    fn messages_keep_line_breaks_only() {
        assert_eq!(message("a\x1b[2J\nb\r\x07"), "a\\x1b[2J\nb\\x0d\\x07");
    }

    #[test]
    fn csv_cells_escape_controls_and_defuse_formulas() {
        assert_eq!(csv_cell("plain"), "plain");
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(
            csv_cell("Mozilla \x1b[31mred\x07\r\nx"),
            "Mozilla \\x1b[31mred\\x07\\x0d\\x0ax"
        );
        assert_eq!(
            csv_cell("a\u{85}\u{7f}\u{202e}"),
            "a\\xc2\\x85\\x7f\\xe2\\x80\\xae"
        );
        assert_eq!(csv_cell("=1+1"), "'=1+1");
        assert_eq!(csv_cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_cell("-5"), "-5");
        assert_eq!(csv_cell("-"), "-");
        // A leading tab or CR is escaped, so it can no longer start a formula.
        assert_eq!(csv_cell("\t=x"), "\\x09=x");
        assert_eq!(csv_cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        for c in csv_cell("\x00\x01\x1f\x7f\u{9b}\r\n\t").chars() {
            assert!(!c.is_control(), "{c:?}");
        }
    }

    #[test]
    fn comments_stay_one_plain_line() {
        assert_eq!(comment("a\nb\u{202e}c\u{2029}d\x1b"), "a?b?c?d?");
    }

    #[test]
    fn json_escapes_what_serde_leaves_raw() {
        let v = serde_json::json!({"ua": "a\u{202e}b\u{2028}c\u{7f}\u{85}\u{1b}é"});
        let text = serde_json::to_string(&v).unwrap();
        let safe = json(&text);
        assert_eq!(safe, r#"{"ua":"a\u202eb\u2028c\u007f\u0085\u001bé"}"#);
        assert!(!safe.chars().any(needs_escape));
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, v);
        // Pretty-printed: the layout's own line breaks stay.
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        let safe = json(&pretty);
        assert!(safe.contains("{\n  \"ua\""), "{safe}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), v);
        assert!(matches!(json("{\"a\":1}"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn markdown_and_html_neutralise_markup() {
        assert_eq!(markdown("a|b*c"), "a\\|b\\*c");
        assert_eq!(markdown("&lt;b&gt; & co"), "&amp;lt;b&amp;gt; &amp; co");
        assert_eq!(html("<script>\"x\"&"), "&lt;script&gt;&quot;x&quot;&amp;");
    }
}
