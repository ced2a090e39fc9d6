//! nginx configuration syntax: a tokenizer that follows nginx's own rules
//! (`ngx_conf_read_token`: `#` comments at the start of a word, `"`/`'` quoting with
//! backslash escapes, `{ } ;` as the only specials, `${var}` inside a word), and a tree
//! of directives with `include` expanded (globs, paths relative to the including file's
//! directory). Every directive keeps its file and line for messages.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::conf_file::{self, Budget, CONFIG_CAP};

/// A syntax or include error: where, and one message. Shown as `file:line: message`
/// (`file: message` for the file as a whole), the file name escaped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ConfError {
    /// The file.
    pub file: PathBuf,
    /// The line (1-based; 0 when the file could not be read at all).
    pub line: u32,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for ConfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let file = crate::escape::path(&self.file);
        match (file.is_empty(), self.line) {
            (true, _) => f.write_str(&self.message),
            (false, 0) => write!(f, "{file}: {}", self.message),
            (false, line) => write!(f, "{file}:{line}: {}", self.message),
        }
    }
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

/// How deep blocks may nest, counted across includes (nginx has no bound of its own;
/// real configurations nest a handful of levels).
pub const MAX_NESTING: usize = 100;

/// What one configuration has spent: files loaded, bytes read, directives produced.
#[derive(Default)]
struct Cx {
    budget: Budget,
}

impl Cx {
    /// Spends one directive of `d`'s size; an error at `d` past the bound.
    fn directive(&mut self, d: &Directive) -> Result<(), ConfError> {
        let bytes = d.name.len() + d.args.iter().map(|a| a.text.len()).sum::<usize>();
        self.budget
            .spend(1, bytes as u64)
            .map_err(|m| d.error(m.to_string()))
    }
}

/// Reads `path` into a directive tree, expanding `include` (globs; relative paths are
/// taken from the including file's directory). Bounded: each file at most
/// [`conf_file::CONFIG_CAP`], blocks `MAX_NESTING` deep, includes 32 deep, and the
/// whole at most [`conf_file::MAX_FILE_LOADS`] file loads, [`conf_file::MAX_EXPANSIONS`]
/// directives and [`conf_file::MAX_EXPANDED_BYTES`] read or produced.
pub fn parse_file(path: &Path) -> Result<Vec<Directive>, ConfError> {
    parse_path(path, 0, 0, &mut Cx::default(), None)
}

/// Reads and parses one file; `by` is the `include` that names it (errors reading it
/// are given at the include).
fn parse_path(
    path: &Path,
    depth: usize,
    nest: usize,
    cx: &mut Cx,
    by: Option<&Directive>,
) -> Result<Vec<Directive>, ConfError> {
    let at = |message: String| match by {
        Some(d) => d.error(format!("include {}: {message}", crate::escape::path(path))),
        None => ConfError {
            file: path.to_path_buf(),
            line: 0,
            message,
        },
    };
    if by.is_some() {
        // Counted before the file is read: a bomb of empty files is bounded too.
        cx.budget.load(0).map_err(|m| at(m.to_string()))?;
    }
    let bytes = conf_file::read(path, CONFIG_CAP).map_err(|e| at(e.problem()))?;
    cx.budget
        .spend(0, bytes.len() as u64)
        .map_err(|m| at(m.to_string()))?;
    parse_text(&bytes, path, depth, nest, cx)
}

/// Parses configuration text as if read from `file` (includes are resolved from its
/// directory).
pub fn parse_str(text: &str, file: &Path) -> Result<Vec<Directive>, ConfError> {
    parse_text(text.as_bytes(), file, 0, 0, &mut Cx::default())
}

fn parse_text(
    bytes: &[u8],
    file: &Path,
    depth: usize,
    nest: usize,
    cx: &mut Cx,
) -> Result<Vec<Directive>, ConfError> {
    let mut lx = Lexer {
        s: bytes,
        i: 0,
        line: 1,
        file,
    };
    let name = Arc::new(file.to_path_buf());
    let mut p = Parse {
        lx: &mut lx,
        file: &name,
        depth,
        cx,
    };
    let (list, end) = p.block(nest, None)?;
    debug_assert!(end.is_none());
    Ok(list)
}

/// One file being parsed.
struct Parse<'a, 'b> {
    lx: &'a mut Lexer<'b>,
    file: &'a Arc<PathBuf>,
    /// Include depth of this file.
    depth: usize,
    cx: &'a mut Cx,
}

impl Parse<'_, '_> {
    /// Parses directives until `}` (when `open` is the line of the `{`) or the end;
    /// `nest` blocks are open around it (the including files' too).
    fn block(
        &mut self,
        nest: usize,
        open: Option<u32>,
    ) -> Result<(Vec<Directive>, Option<u32>), ConfError> {
        let mut out = Vec::new();
        let mut words: Vec<Arg> = Vec::new();
        let mut first_line = 0u32;
        loop {
            let lx = &mut *self.lx;
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
                        file: self.file.clone(),
                        line: first_line,
                    };
                    if d.name == "include" {
                        out.extend(include(&d, self.depth, nest, self.cx)?);
                    } else {
                        self.cx.directive(&d)?;
                        out.push(d);
                    }
                }
                Tok::Open => {
                    if words.is_empty() {
                        return Err(lx.err(line, "unexpected \"{\""));
                    }
                    if nest >= MAX_NESTING {
                        return Err(lx.err(
                            line,
                            format!("blocks nest deeper than {MAX_NESTING} (includes together)"),
                        ));
                    }
                    let name = words.remove(0).text;
                    let (block, _) = self.block(nest + 1, Some(line))?;
                    let d = Directive {
                        name,
                        args: std::mem::take(&mut words),
                        block: Some(block),
                        file: self.file.clone(),
                        line: first_line,
                    };
                    self.cx.directive(&d)?;
                    out.push(d);
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
}

fn include(
    d: &Directive,
    depth: usize,
    nest: usize,
    cx: &mut Cx,
) -> Result<Vec<Directive>, ConfError> {
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
        // A directory read whatever it matches: counted as a load.
        cx.budget.load(0).map_err(|m| d.error(m.to_string()))?;
        let files = glob(&full).map_err(|m| d.error(m.to_string()))?;
        for f in files {
            out.extend(parse_path(&f, depth + 1, nest, cx, Some(d))?);
        }
    } else {
        if !full.exists() {
            return Err(d.error(format!(
                "include {}: no such file (relative paths are read from the including file's directory)",
                crate::escape::path(&full)
            )));
        }
        out.extend(parse_path(&full, depth + 1, nest, cx, Some(d))?);
    }
    Ok(out)
}

/// The longest glob component (a file name is at most 255 bytes).
const MAX_GLOB_COMPONENT: usize = 1024;

/// The most directory entries one include's glob may look at.
const MAX_GLOB_ENTRIES: usize = 100_000;

fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Why a glob was not expanded.
#[derive(Clone, Debug, PartialEq, Eq)]
enum GlobError {
    /// A pattern component longer than [`MAX_GLOB_COMPONENT`].
    LongComponent,
    /// More than [`MAX_GLOB_ENTRIES`] directory entries looked at (the pattern, shown).
    TooManyEntries(String),
}

impl std::fmt::Display for GlobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GlobError::LongComponent => write!(
                f,
                "include: a glob component longer than {MAX_GLOB_COMPONENT} bytes"
            ),
            GlobError::TooManyEntries(pattern) => write!(
                f,
                "include {pattern}: the glob looks at more than {MAX_GLOB_ENTRIES} directory entries"
            ),
        }
    }
}

impl std::error::Error for GlobError {}

/// Expands a glob (`*`, `?`, `[…]` in any component), sorted like glob(3); no match is
/// an empty list (nginx accepts that too).
/// Bounded: a pattern component of at most [`MAX_GLOB_COMPONENT`] bytes, and at most
/// [`MAX_GLOB_ENTRIES`] directory entries looked at (`/*/*/*/*.conf` walks the disk).
fn glob(pattern: &Path) -> Result<Vec<PathBuf>, GlobError> {
    let mut current: Vec<PathBuf> = vec![PathBuf::new()];
    let comps: Vec<_> = pattern.components().collect();
    let mut seen = 0usize;
    for (i, c) in comps.iter().enumerate() {
        let last = i + 1 == comps.len();
        let text = c.as_os_str().to_string_lossy();
        let mut next = Vec::new();
        if has_glob(&text) {
            if text.len() > MAX_GLOB_COMPONENT {
                return Err(GlobError::LongComponent);
            }
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
                    .take_while(|_| {
                        seen += 1;
                        seen <= MAX_GLOB_ENTRIES
                    })
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| !n.starts_with('.') && wild_match(text.as_bytes(), n.as_bytes()))
                    .collect();
                if seen > MAX_GLOB_ENTRIES {
                    return Err(GlobError::TooManyEntries(crate::escape::path(pattern)));
                }
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

/// Shell-style matching of one name against one pattern component: `*`, `?`, `[…]`
/// (`[!…]`/`[^…]`, ranges; a `[` without `]` is itself). Iterative, in time bounded by
/// the product of the lengths (a `*` is retried from one place only).
fn wild_match(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0usize, 0usize);
    // After the last `*`: where the pattern resumes and the name position it took.
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if let Some(&pc) = p.get(pi) {
            let step = match pc {
                b'*' => {
                    star = Some((pi + 1, si));
                    pi += 1;
                    continue;
                }
                b'?' => Some(1),
                b'[' => match class(&p[pi..], s[si]) {
                    Some((true, len)) => Some(len),
                    Some((false, _)) => None,
                    None => (s[si] == b'[').then_some(1),
                },
                c => (c == s[si]).then_some(1),
            };
            if let Some(len) = step {
                pi += len;
                si += 1;
                continue;
            }
        }
        match star {
            Some((sp, ss)) => {
                pi = sp;
                si = ss + 1;
                star = Some((sp, ss + 1));
            }
            None => return false,
        }
    }
    p[pi.min(p.len())..].iter().all(|&c| c == b'*')
}

/// A `[…]` class at the start of `p` against `c`: whether it matches and the class's
/// length; `None` when there is no closing `]`.
fn class(p: &[u8], c: u8) -> Option<(bool, usize)> {
    let end = p.iter().skip(1).position(|&x| x == b']')? + 1;
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
    Some((hit != neg, end + 1))
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
        std::fs::write(
            p.join("long.conf"),
            format!("include conf.d/{}.conf;\n", "*a".repeat(600)),
        )
        .unwrap();
        let e = parse_file(&p.join("long.conf")).unwrap_err();
        assert!(
            e.to_string()
                .contains("long.conf:1: include: a glob component longer than 1024 bytes"),
            "{e}"
        );
    }

    #[test]
    fn blocks_nest_at_most_max_nesting() {
        let deep = |n: usize| format!("{}{}", "a {\n".repeat(n), "}\n".repeat(n));
        assert!(parse(&deep(MAX_NESTING)).is_ok());
        let e = parse(&deep(MAX_NESTING + 1)).unwrap_err();
        assert_eq!(e.line, MAX_NESTING as u32 + 1, "{e}");
        assert!(e.message.contains("nest deeper than 100"), "{e}");
        // 10,000 deep is refused at once (it overflowed the stack).
        assert!(parse(&deep(10_000)).is_err());
    }

    #[test]
    fn globs_match_in_bounded_time() {
        for (p, s, want) in [
            ("*.conf", "a.conf", true),
            ("*.conf", "a.confx", false),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("[a-c]x", "bx", true),
            ("[!a-c]x", "bx", false),
            ("[^a]*", "b", true),
            ("[x", "[x", true),
            ("*", "", true),
            ("**a**", "bab", true),
            ("*a*b", "aaab", true),
            ("*a*b", "aaa", false),
        ] {
            assert_eq!(wild_match(p.as_bytes(), s.as_bytes()), want, "{p} {s}");
        }
        // Exponential for a backtracking matcher; a star per byte of a long pattern
        // overflowed the stack of a recursive one.
        let name = "a".repeat(200);
        let p = format!("{}b", "*a".repeat(40));
        assert!(!wild_match(p.as_bytes(), name.as_bytes()));
        let stars = "*".repeat(1_000_000);
        assert!(wild_match(stars.as_bytes(), name.as_bytes()));
    }
}
