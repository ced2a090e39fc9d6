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

/// Splits one line into words as HAProxy does: blanks separate, `"…"` (with `\`
/// escapes) and `'…'` quote, `\` escapes one character, `#` starts a comment.
pub(super) fn words(line: &str) -> Result<Vec<String>, String> {
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
                        None => return Err("unterminated double quote".into()),
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
                        None => return Err("unterminated single quote".into()),
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
