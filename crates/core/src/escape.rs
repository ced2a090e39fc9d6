//! Escaping of attacker-controlled log text for terminals, Markdown, HTML and CSV.

use std::fmt::Write;

/// Text safe to print on a terminal: control characters (ESC, CR, BEL, …) and invalid
/// UTF-8 become `\xHH`, backslashes are doubled only where they would start a fake
/// escape, and the result is cut to `max` characters with `…`.
pub fn terminal(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    // Invalid UTF-8 was replaced by U+FFFD above; show the original bytes instead.
    if matches!(text, std::borrow::Cow::Owned(_)) {
        let mut escaped = String::new();
        crate::batch::push_escaped(&mut escaped, bytes);
        return terminal_str(&escaped, max);
    }
    terminal_str(&text, max)
}

/// [`terminal`] for text already known to be UTF-8.
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

fn push_char(out: &mut String, c: char) {
    if c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    {
        // C0/C1 controls and bidi overrides can rewrite what the terminal shows.
        let mut buf = [0u8; 4];
        for b in c.encode_utf8(&mut buf).bytes() {
            let _ = write!(out, "\\x{b:02x}");
        }
    } else {
        out.push(c);
    }
}

/// Text safe inside a Markdown table cell.
pub fn markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in terminal_str(s, usize::MAX).chars() {
        match c {
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
        assert_eq!(terminal("x\u{202e}y".as_bytes(), 10), "x\\xe2\\x80\\xaey");
    }

    #[test]
    fn markdown_and_html_neutralise_markup() {
        assert_eq!(markdown("a|b*c"), "a\\|b\\*c");
        assert_eq!(html("<script>\"x\"&"), "&lt;script&gt;&quot;x&quot;&amp;");
    }
}
