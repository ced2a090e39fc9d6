//! haproxy.cfg's syntax: lines split into words, grouped into sections.

pub(super) struct Stmt {
    pub(super) line: usize,
    pub(super) words: Vec<String>,
}

pub(super) struct Section {
    pub(super) kind: String,
    pub(super) name: String,
    pub(super) stmts: Vec<Stmt>,
}

/// A quote not closed on its line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Unterminated {
    /// `"…`
    DoubleQuote,
    /// `'…`
    SingleQuote,
}

impl std::fmt::Display for Unterminated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unterminated::DoubleQuote => "unterminated double quote",
            Unterminated::SingleQuote => "unterminated single quote",
        })
    }
}

impl std::error::Error for Unterminated {}

/// Splits one line into words as HAProxy does: blanks separate, `"…"` (with `\`
/// escapes) and `'…'` quote, `\` escapes one character, `#` starts a comment.
pub(super) fn words(line: &str) -> Result<Vec<String>, Unterminated> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut has = false;
    let mut it = line.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            ' ' | '\t' => {
                if has {
                    out.push(std::mem::take(&mut cur));
                    has = false;
                }
            }
            '#' => break,
            '\\' => {
                has = true;
                if let Some(n) = it.next() {
                    cur.push(n);
                }
            }
            '"' => {
                has = true;
                loop {
                    match it.next() {
                        None => return Err(Unterminated::DoubleQuote),
                        Some('"') => break,
                        Some('\\') => {
                            if let Some(n) = it.next() {
                                cur.push(n);
                            }
                        }
                        Some(x) => cur.push(x),
                    }
                }
            }
            '\'' => {
                has = true;
                loop {
                    match it.next() {
                        None => return Err(Unterminated::SingleQuote),
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                    }
                }
            }
            _ => {
                has = true;
                cur.push(c);
            }
        }
    }
    if has {
        out.push(cur);
    }
    Ok(out)
}

pub(super) const SECTIONS: &[&str] = &[
    "global",
    "defaults",
    "frontend",
    "backend",
    "listen",
    "peers",
    "resolvers",
    "userlist",
    "mailers",
    "program",
    "http-errors",
    "ring",
    "cache",
    "fcgi-app",
    "crt-store",
    "traces",
];
