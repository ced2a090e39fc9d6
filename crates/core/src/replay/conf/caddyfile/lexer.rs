//! The Caddyfile's syntax: `{$ENV}` substitution, tokens, and lines with their blocks.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::super::nginx::Note;
use super::super::syntax::ConfError;

/// Environment lookup for `{$NAME}` (Caddy reads the process environment).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

#[derive(Clone, Debug)]
pub(super) struct Tok {
    pub(super) text: String,
    pub(super) quoted: bool,
    pub(super) line: u32,
    pub(super) end: u32,
}

impl Tok {
    pub(super) fn is(&self, s: &str) -> bool {
        !self.quoted && self.text == s
    }
}

/// One Caddyfile line: a directive and its arguments, with its block.
#[derive(Clone, Debug)]
pub(super) struct Node {
    pub(super) name: Tok,
    pub(super) args: Vec<Tok>,
    pub(super) block: Option<Vec<Node>>,
    pub(super) file: Arc<PathBuf>,
}

impl Node {
    pub(super) fn at(&self) -> String {
        format!("{}:{}", self.file.display(), self.name.line)
    }
    pub(super) fn err(&self, message: impl Into<String>) -> ConfError {
        ConfError {
            file: self.file.as_ref().clone(),
            line: self.name.line,
            message: message.into(),
        }
    }
    pub(super) fn arg_texts(&self) -> Vec<&str> {
        self.args.iter().map(|a| a.text.as_str()).collect()
    }
    pub(super) fn note(&self, message: impl Into<String>) -> Note {
        Note {
            at: self.at(),
            message: message.into(),
        }
    }
}

/// What `{$NAME}` substitution did, for notes.
pub(super) struct EnvUse {
    pub(super) line: u32,
    pub(super) name: String,
    pub(super) value: Option<String>,
    pub(super) default: Option<String>,
}

/// Substitutes `{$NAME}` and `{$NAME:default}` line by line, as Caddy does before
/// lexing (the default runs to the first `}`).
pub(super) fn substitute_env(text: &str, env: Env<'_>, uses: &mut Vec<EnvUse>) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let mut rest = line;
        while let Some(p) = rest.find("{$") {
            let Some(close) = rest[p..].find('}') else {
                break;
            };
            out.push_str(&rest[..p]);
            let inner = &rest[p + 2..p + close];
            let (name, default) = match inner.split_once(':') {
                Some((n, d)) => (n, Some(d.to_string())),
                None => (inner, None),
            };
            let value = env(name);
            out.push_str(value.as_deref().or(default.as_deref()).unwrap_or(""));
            uses.push(EnvUse {
                line: i as u32 + 1,
                name: name.to_string(),
                value,
                default,
            });
            rest = &rest[p + close + 1..];
        }
        out.push_str(rest);
    }
    out
}

pub(super) fn lex(text: &str, file: &Path) -> Result<Vec<Tok>, ConfError> {
    let b = text.as_bytes();
    let mut toks = Vec::new();
    let mut i = 0;
    let mut line = 1u32;
    let err = |line: u32, m: &str| ConfError {
        file: file.to_path_buf(),
        line,
        message: m.to_string(),
    };
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'#' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = line;
        let mut val: Vec<u8> = Vec::new();
        if c == b'"' {
            i += 1;
            loop {
                let Some(&ch) = b.get(i) else {
                    return Err(err(
                        start,
                        "unterminated quoted string (missing closing \")",
                    ));
                };
                i += 1;
                match ch {
                    b'\\' if matches!(b.get(i), Some(b'"')) => {
                        val.push(b'"');
                        i += 1;
                    }
                    b'"' => break,
                    b'\n' => {
                        line += 1;
                        val.push(ch);
                    }
                    _ => val.push(ch),
                }
            }
            toks.push(Tok {
                text: String::from_utf8_lossy(&val).into_owned(),
                quoted: true,
                line: start,
                end: line,
            });
            continue;
        }
        if c == b'`' {
            i += 1;
            loop {
                let Some(&ch) = b.get(i) else {
                    return Err(err(
                        start,
                        "unterminated backtick string (missing closing `)",
                    ));
                };
                i += 1;
                if ch == b'`' {
                    break;
                }
                if ch == b'\n' {
                    line += 1;
                }
                val.push(ch);
            }
            toks.push(Tok {
                text: String::from_utf8_lossy(&val).into_owned(),
                quoted: true,
                line: start,
                end: line,
            });
            continue;
        }
        if b[i..].starts_with(b"<<") && b.get(i + 2).is_some_and(u8::is_ascii_uppercase) {
            return Err(err(start, "heredocs (<<MARKER) are not supported"));
        }
        while i < b.len() && !b[i].is_ascii_whitespace() {
            val.push(b[i]);
            i += 1;
        }
        toks.push(Tok {
            text: String::from_utf8_lossy(&val).into_owned(),
            quoted: false,
            line: start,
            end: start,
        });
    }
    Ok(toks)
}

pub(super) fn parse_nodes(toks: &[Tok], file: &Arc<PathBuf>) -> Result<Vec<Node>, ConfError> {
    let mut i = 0;
    let nodes = parse_block(toks, &mut i, 0, file)?;
    Ok(nodes)
}

/// How deep `{ }` blocks may nest in one file.
pub(super) const MAX_NESTING: usize = 32;

pub(super) fn parse_block(
    toks: &[Tok],
    i: &mut usize,
    depth: usize,
    file: &Arc<PathBuf>,
) -> Result<Vec<Node>, ConfError> {
    let err = |line: u32, m: &str| ConfError {
        file: file.as_ref().clone(),
        line,
        message: m.to_string(),
    };
    if depth > MAX_NESTING {
        // At the `{` that opened this block.
        let line = i
            .checked_sub(1)
            .and_then(|k| toks.get(k))
            .map_or(1, |t| t.line);
        return Err(err(line, &format!("blocks nest deeper than {MAX_NESTING}")));
    }
    let mut out = Vec::new();
    loop {
        let Some(t) = toks.get(*i) else {
            if depth > 0 {
                let line = toks.last().map_or(1, |t| t.end);
                return Err(err(
                    line,
                    "unexpected end of file: a block is not closed (missing })",
                ));
            }
            return Ok(out);
        };
        if t.is("}") {
            if depth == 0 {
                return Err(err(t.line, "unexpected } (no block to close)"));
            }
            *i += 1;
            return Ok(out);
        }
        *i += 1;
        let mut node = Node {
            name: t.clone(),
            args: Vec::new(),
            block: None,
            file: file.clone(),
        };
        let mut last = t.end;
        if t.is("{") {
            // A block without a name: the global options (or a site given as `{`).
            node.block = Some(parse_block(toks, i, depth + 1, file)?);
            out.push(node);
            continue;
        }
        while let Some(n) = toks.get(*i) {
            if n.line != last {
                break;
            }
            if n.is("{") {
                *i += 1;
                node.block = Some(parse_block(toks, i, depth + 1, file)?);
                break;
            }
            if n.is("}") {
                break;
            }
            last = n.end;
            node.args.push(n.clone());
            *i += 1;
        }
        out.push(node);
    }
}
