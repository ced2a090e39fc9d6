//! nginx configuration syntax: a tokenizer that follows nginx's own rules
//! (`ngx_conf_read_token`: `#` comments at the start of a word, `"`/`'` quoting with
//! backslash escapes, `{ } ;` as the only specials, `${var}` inside a word), and a tree
//! of directives with `include` expanded (globs, paths relative to the including file's
//! directory). Every directive keeps its file and line for messages.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A syntax or include error: where, and one message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {message}", file.display())]
pub struct ConfError {
    /// The file.
    pub file: PathBuf,
    /// The line (1-based; 0 when the file could not be read at all).
    pub line: u32,
    /// What is wrong.
    pub message: String,
}

/// One argument of a directive: its text with quotes and escapes removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arg {
    /// The text.
    pub text: String,
    /// Whether it was quoted (`"…"` or `'…'`).
    pub quoted: bool,
}

/// One directive: `name args… ;` or `name args… { block }`.
#[derive(Clone, Debug)]
pub struct Directive {
    /// The name (first word).
    pub name: String,
    /// The other words.
    pub args: Vec<Arg>,
    /// The block, for `name … { … }`.
    pub block: Option<Vec<Directive>>,
    /// The file it is in.
    pub file: Arc<PathBuf>,
    /// Its line.
    pub line: u32,
}

impl Directive {
    /// `file:line`, for messages.
    pub fn at(&self) -> String {
        format!("{}:{}", self.file.display(), self.line)
    }

    /// An error at this directive.
    pub fn error(&self, message: impl Into<String>) -> ConfError {
        ConfError {
            file: self.file.as_ref().clone(),
            line: self.line,
            message: message.into(),
        }
    }

    /// The argument texts.
    pub fn texts(&self) -> Vec<&str> {
        self.args.iter().map(|a| a.text.as_str()).collect()
    }
}

#[derive(Debug, PartialEq)]
enum Tok {
    Word(Arg),
    Semi,
    Open,
    Close,
}

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
    line: u32,
    file: &'a Path,
}

impl Lexer<'_> {
    fn err(&self, line: u32, message: impl Into<String>) -> ConfError {
        ConfError {
            file: self.file.to_path_buf(),
            line,
            message: message.into(),
        }
    }

    /// The next token and its line; `None` at the end of the text.
    fn next(&mut self) -> Result<Option<(Tok, u32)>, ConfError> {
        // Skip blanks and comments.
        loop {
            match self.s.get(self.i) {
                None => return Ok(None),
                Some(b'\n') => {
                    self.line += 1;
                    self.i += 1;
                }
                Some(b' ' | b'\t' | b'\r') => self.i += 1,
                Some(b'#') => {
                    while let Some(&c) = self.s.get(self.i) {
                        if c == b'\n' {
                            break;
                        }
                        self.i += 1;
                    }
                }
                _ => break,
            }
        }
        let line = self.line;
        let c = self.s[self.i];
        match c {
            b';' => {
                self.i += 1;
                Ok(Some((Tok::Semi, line)))
            }
            b'{' => {
                self.i += 1;
                Ok(Some((Tok::Open, line)))
            }
            b'}' => {
                self.i += 1;
                Ok(Some((Tok::Close, line)))
            }
            b'"' | b'\'' => {
                self.i += 1;
                let mut out = Vec::new();
                loop {
                    let Some(&ch) = self.s.get(self.i) else {
                        return Err(
                            self.err(line, "unterminated quoted string (missing closing quote)")
                        );
                    };
                    self.i += 1;
                    match ch {
                        b'\\' => {
                            let Some(&n) = self.s.get(self.i) else {
                                return Err(self.err(line, "unterminated quoted string"));
                            };
                            self.i += 1;
                            match n {
                                b'"' | b'\'' | b'\\' => out.push(n),
                                b't' => out.push(b'\t'),
                                b'r' => out.push(b'\r'),
                                b'n' => out.push(b'\n'),
                                b'\n' => {
                                    self.line += 1;
                                    out.extend_from_slice(b"\\\n");
                                }
                                other => {
                                    out.push(b'\\');
                                    out.push(other);
                                }
                            }
                        }
                        b'\n' => {
                            self.line += 1;
                            out.push(ch);
                        }
                        _ if ch == c => break,
                        _ => out.push(ch),
                    }
                }
                match self.s.get(self.i) {
                    None | Some(b' ' | b'\t' | b'\r' | b'\n' | b';' | b'{' | b'}') => {}
                    Some(&o) => {
                        return Err(self.err(
                            self.line,
                            format!(
                                "unexpected \"{}\" right after a closing quote (put a space or \";\" after it)",
                                o as char
                            ),
                        ));
                    }
                }
                Ok(Some((
                    Tok::Word(Arg {
                        text: String::from_utf8_lossy(&out).into_owned(),
                        quoted: true,
                    }),
                    line,
                )))
            }
            _ => {
                let mut out = Vec::new();
                let mut brace = false;
                while let Some(&ch) = self.s.get(self.i) {
                    match ch {
                        b' ' | b'\t' | b'\r' | b'\n' | b';' => break,
                        b'{' if out.last() == Some(&b'$') => brace = true,
                        b'}' if brace => brace = false,
                        b'{' | b'}' => break,
                        b'\\' => {
                            // As nginx: the next character is not special; `\"`, `\'`,
                            // `\\`, `\t`, `\r`, `\n` are unescaped, other pairs kept.
                            self.i += 1;
                            match self.s.get(self.i) {
                                None => break,
                                Some(&n) => {
                                    match n {
                                        b'"' | b'\'' | b'\\' => out.push(n),
                                        b't' => out.push(b'\t'),
                                        b'r' => out.push(b'\r'),
                                        b'n' => out.push(b'\n'),
                                        b'\n' => {
                                            self.line += 1;
                                            out.extend_from_slice(b"\\\n");
                                        }
                                        _ => {
                                            out.push(b'\\');
                                            out.push(n);
                                        }
                                    }
                                    self.i += 1;
                                }
                            }
                            continue;
                        }
                        _ => {}
                    }
                    out.push(ch);
                    self.i += 1;
                }
                Ok(Some((
                    Tok::Word(Arg {
                        text: String::from_utf8_lossy(&out).into_owned(),
                        quoted: false,
                    }),
                    line,
                )))
            }
        }
    }
}

/// How deep includes may nest (a loop is caught by this).
const MAX_INCLUDE_DEPTH: usize = 32;

/// Reads `path` into a directive tree, expanding `include` (globs; relative paths are
/// taken from the including file's directory).
pub fn parse_file(path: &Path) -> Result<Vec<Directive>, ConfError> {
    parse_path(path, 0)
}

fn parse_path(path: &Path, depth: usize) -> Result<Vec<Directive>, ConfError> {
    let bytes = std::fs::read(path).map_err(|e| ConfError {
        file: path.to_path_buf(),
        line: 0,
        message: format!("cannot read: {e}"),
    })?;
    parse_text(&bytes, path, depth)
}

/// Parses configuration text as if read from `file` (includes are resolved from its
/// directory).
pub fn parse_str(text: &str, file: &Path) -> Result<Vec<Directive>, ConfError> {
    parse_text(text.as_bytes(), file, 0)
}

fn parse_text(bytes: &[u8], file: &Path, depth: usize) -> Result<Vec<Directive>, ConfError> {
    let mut lx = Lexer {
        s: bytes,
        i: 0,
        line: 1,
        file,
    };
    let name = Arc::new(file.to_path_buf());
    let (list, end) = parse_block(&mut lx, &name, depth, None)?;
    debug_assert!(end.is_none());
    Ok(list)
}

/// Parses directives until `}` (when `open` is the line of the `{`) or the end.
fn parse_block(
    lx: &mut Lexer<'_>,
    file: &Arc<PathBuf>,
    depth: usize,
    open: Option<u32>,
) -> Result<(Vec<Directive>, Option<u32>), ConfError> {
    let mut out = Vec::new();
    let mut words: Vec<Arg> = Vec::new();
    let mut first_line = 0u32;
    loop {
        let Some((tok, line)) = lx.next()? else {
            if !words.is_empty() {
                return Err(lx.err(
                    lx.line,
                    format!(
                        "unexpected end of file after \"{}\", expecting \";\" or \"}}\"",
                        words[0].text
                    ),
                ));
            }
            if let Some(l) = open {
                return Err(lx.err(
                    lx.line,
                    format!("unexpected end of file, expecting \"}}\" (the block opened on line {l} is not closed)"),
                ));
            }
            return Ok((out, None));
        };
        match tok {
            Tok::Word(a) => {
                if words.is_empty() {
                    first_line = line;
                }
                words.push(a);
            }
            Tok::Semi => {
                if words.is_empty() {
                    return Err(lx.err(line, "unexpected \";\""));
                }
                let name = words.remove(0).text;
                let d = Directive {
                    name,
                    args: std::mem::take(&mut words),
                    block: None,
                    file: file.clone(),
                    line: first_line,
                };
                if d.name == "include" {
                    out.extend(include(&d, depth)?);
                } else {
                    out.push(d);
                }
            }
            Tok::Open => {
                if words.is_empty() {
                    return Err(lx.err(line, "unexpected \"{\""));
                }
                let name = words.remove(0).text;
                let (block, _) = parse_block(lx, file, depth, Some(line))?;
                out.push(Directive {
                    name,
                    args: std::mem::take(&mut words),
                    block: Some(block),
                    file: file.clone(),
                    line: first_line,
                });
            }
            Tok::Close => {
                if !words.is_empty() {
                    return Err(lx.err(
                        line,
                        format!(
                            "unexpected \"}}\" after \"{}\" (missing \";\"?)",
                            words[0].text
                        ),
                    ));
                }
                if open.is_none() {
                    return Err(lx.err(line, "unexpected \"}\""));
                }
                return Ok((out, Some(line)));
            }
        }
    }
}

fn include(d: &Directive, depth: usize) -> Result<Vec<Directive>, ConfError> {
    if d.args.len() != 1 {
        return Err(d.error("\"include\" takes one file name or glob"));
    }
    if depth >= MAX_INCLUDE_DEPTH {
        return Err(d.error(format!(
            "includes nest deeper than {MAX_INCLUDE_DEPTH} (an include loop?)"
        )));
    }
    let pat = &d.args[0].text;
    let base = d.file.parent().unwrap_or(Path::new(""));
    let full = if Path::new(pat).is_absolute() {
        PathBuf::from(pat)
    } else {
        base.join(pat)
    };
    let mut out = Vec::new();
    if has_glob(pat) {
        let files = glob(&full).map_err(|m| d.error(m))?;
        for f in files {
            out.extend(parse_path(&f, depth + 1)?);
        }
    } else {
        if !full.is_file() {
            return Err(d.error(format!(
                "include {}: no such file (relative paths are read from the including file's directory)",
                full.display()
            )));
        }
        out.extend(parse_path(&full, depth + 1)?);
    }
    Ok(out)
}

fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Expands a glob (`*`, `?`, `[…]` in any component), sorted like glob(3); no match is
/// an empty list (nginx accepts that too).
fn glob(pattern: &Path) -> Result<Vec<PathBuf>, String> {
    let mut current: Vec<PathBuf> = vec![PathBuf::new()];
    let comps: Vec<_> = pattern.components().collect();
    for (i, c) in comps.iter().enumerate() {
        let last = i + 1 == comps.len();
        let text = c.as_os_str().to_string_lossy();
        let mut next = Vec::new();
        if has_glob(&text) {
            for dir in &current {
                let d = if dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    dir
                };
                let Ok(rd) = std::fs::read_dir(d) else {
                    continue;
                };
                let mut names: Vec<String> = rd
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| !n.starts_with('.') && wild_match(text.as_bytes(), n.as_bytes()))
                    .collect();
                names.sort();
                for n in names {
                    let p = dir.join(n);
                    if (last && p.is_file()) || (!last && p.is_dir()) {
                        next.push(p);
                    }
                }
            }
        } else {
            for dir in &current {
                next.push(dir.join(c.as_os_str()));
            }
        }
        current = next;
    }
    Ok(current)
}

/// Shell-style matching of one name against one pattern component.
fn wild_match(p: &[u8], s: &[u8]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some(b'*') => (0..=s.len()).any(|k| wild_match(&p[1..], &s[k..])),
        Some(b'?') => !s.is_empty() && wild_match(&p[1..], &s[1..]),
        Some(b'[') => {
            let Some(end) = p.iter().skip(1).position(|&c| c == b']').map(|e| e + 1) else {
                return s.first() == Some(&b'[') && wild_match(&p[1..], &s[1..]);
            };
            let Some(&c) = s.first() else { return false };
            let set = &p[1..end];
            let (neg, set) = match set.first() {
                Some(b'!' | b'^') => (true, &set[1..]),
                _ => (false, set),
            };
            let mut hit = false;
            let mut k = 0;
            while k < set.len() {
                if k + 2 < set.len() && set[k + 1] == b'-' {
                    hit |= set[k] <= c && c <= set[k + 2];
                    k += 3;
                } else {
                    hit |= set[k] == c;
                    k += 1;
                }
            }
            hit != neg && wild_match(&p[end + 1..], &s[1..])
        }
        Some(&c) => s.first() == Some(&c) && wild_match(&p[1..], &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<Vec<Directive>, ConfError> {
        parse_str(t, Path::new("t.conf"))
    }

    #[test]
    fn tokens_follow_nginx_quoting() {
        let d = parse(
            "a \"x y\" 'q\\'s' b\\;c \\d; # comment ; {\nmap $a ${b}c { \"~^(?<n>\\d+)$\" $n; default \"\"; }\n",
        )
        .unwrap();
        assert_eq!(d[0].name, "a");
        assert_eq!(d[0].texts(), vec!["x y", "q's", "b\\;c", "\\d"]);
        let m = &d[1];
        assert_eq!(m.line, 2);
        assert_eq!(m.texts(), vec!["$a", "${b}c"]);
        let b = m.block.as_ref().unwrap();
        assert_eq!(b[0].name, "~^(?<n>\\d+)$");
        assert_eq!(b[1].args[0].text, "");
        assert!(b[1].args[0].quoted);
        // `#` inside a word is not a comment.
        let d = parse("x a#b;").unwrap();
        assert_eq!(d[0].texts(), vec!["a#b"]);
    }

    #[test]
    fn syntax_errors_have_file_and_line() {
        for (t, line, want) in [
            ("a b", 1, "unexpected end of file"),
            ("a {\n b;\n", 3, "not closed"),
            ("a;\n}\n", 2, "unexpected \"}\""),
            ("a \"b\n\nc", 1, "unterminated"),
            ("a \"b\"c;", 1, "closing quote"),
            ("\n\n;", 3, "unexpected \";\""),
            ("a { b }", 1, "missing \";\""),
        ] {
            let e = parse(t).unwrap_err();
            assert_eq!(e.line, line, "{t:?}: {e}");
            assert!(e.to_string().contains(want), "{t:?}: {e}");
            assert!(e.to_string().starts_with("t.conf:"), "{e}");
        }
    }

    #[test]
    fn includes_expand_globs_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir(p.join("conf.d")).unwrap();
        std::fs::write(p.join("conf.d/b.conf"), "b 2;\n").unwrap();
        std::fs::write(p.join("conf.d/a.conf"), "a 1;\n").unwrap();
        std::fs::write(p.join("conf.d/c.txt"), "c 3;\n").unwrap();
        std::fs::write(p.join("one.inc"), "\none x;\n").unwrap();
        std::fs::write(
            p.join("main.conf"),
            "http {\n include conf.d/*.conf;\n include one.inc;\n include none/*.conf;\n}\n",
        )
        .unwrap();
        let d = parse_file(&p.join("main.conf")).unwrap();
        let b = d[0].block.as_ref().unwrap();
        let names: Vec<&str> = b.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, vec!["a", "b", "one"]);
        assert!(b[2].file.ends_with("one.inc"));
        assert_eq!(b[2].line, 2);
        std::fs::write(p.join("bad.conf"), "include missing.conf;\n").unwrap();
        let e = parse_file(&p.join("bad.conf")).unwrap_err();
        assert!(e.to_string().contains("bad.conf:1: include"), "{e}");
        std::fs::write(p.join("loop.conf"), "include loop.conf;\n").unwrap();
        let e = parse_file(&p.join("loop.conf")).unwrap_err();
        assert!(e.to_string().contains("nest deeper"), "{e}");
    }
}
