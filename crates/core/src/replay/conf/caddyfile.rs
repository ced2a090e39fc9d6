//! A real Caddyfile's `rate_limit` handlers (mholt/caddy-ratelimit) as a replay candidate:
//! Caddy's own syntax (one directive per line, `{ }` blocks, `"…"`/`` `…` `` quotes,
//! `{$ENV:default}` substituted first, `(snippets)` and `import`, `@named` matchers), the
//! handler order Caddy runs a site in (its default directive order, changed by global
//! `order` options; rewrites and `handle` blocks mutually exclusive), and each zone's
//! `match` sets, `key` (`{remote_host}`, `{client_ip}` with `ipv4_prefix`/`ipv6_prefix`,
//! header placeholders, static keys), `events` and `window`. Matchers become rules of the
//! Caddy dialect: a zone's matcher, expanded over the rewrites before it and minus what
//! terminal handlers before it answer, is written as disjoint first-order [`Matcher`]s.
//! What a log line cannot evaluate (CEL expressions, headers the log does not carry, an
//! unknown placeholder) is a [`Note`] with file:line: the zone is left out, never guessed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ipnet::IpNet;
use regex::bytes::Regex;

use super::nginx::Note;
use super::syntax::ConfError;
use crate::conf_file::{self, Budget, CONFIG_CAP};
use crate::rate::Rate;
use crate::replay::key::KeySpec;
use crate::replay::matcher::{Exempt, Matcher};
use crate::replay::policy::{Dialect, LimitRef, Policy};
use crate::replay::spec::{Algorithm, LimitSpec};
use crate::replay::zone::Zone;

/// A Caddyfile read: the candidate and the notes on what was not replayed as Caddy would.
pub struct CaddyConf {
    /// The candidate (Caddy dialect).
    pub policy: Policy,
    /// Approximations, things not evaluated, zones left out; each with file:line.
    pub notes: Vec<Note>,
}

/// Environment lookup for `{$NAME}` (Caddy reads the process environment).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

impl CaddyConf {
    /// Reads the Caddyfile at `path` (and the files it imports). Syntax errors and invalid
    /// `rate_limit` zones are errors with file:line. The policy is named after the file's
    /// stem (`Caddyfile` for `/etc/caddy/Caddyfile`).
    pub fn read(path: &Path, env: Env<'_>) -> Result<CaddyConf, ConfError> {
        let text = read_text(path, None)?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "Caddyfile".into());
        build(&text, path, name, env)
    }

    /// Reads Caddyfile text as if it were the file `path`.
    pub fn from_str(text: &str, path: &Path, env: Env<'_>) -> Result<CaddyConf, ConfError> {
        build(text, path, "Caddyfile".into(), env)
    }
}

/// Reads a Caddyfile or an imported file (a regular file of at most
/// [`conf_file::CONFIG_CAP`]); `at` is the `import` naming it.
fn read_text(path: &Path, at: Option<(&Path, u32)>) -> Result<String, ConfError> {
    conf_file::read_text(path, CONFIG_CAP).map_err(|e| match at {
        Some((f, l)) => ConfError {
            file: f.to_path_buf(),
            line: l,
            message: e.to_string(),
        },
        None => ConfError {
            file: path.to_path_buf(),
            line: 0,
            message: e.problem(),
        },
    })
}

// ---------------------------------------------------------------- syntax

#[derive(Clone, Debug)]
struct Tok {
    text: String,
    quoted: bool,
    line: u32,
    end: u32,
}

impl Tok {
    fn is(&self, s: &str) -> bool {
        !self.quoted && self.text == s
    }
}

/// One Caddyfile line: a directive and its arguments, with its block.
#[derive(Clone, Debug)]
struct Node {
    name: Tok,
    args: Vec<Tok>,
    block: Option<Vec<Node>>,
    file: Arc<PathBuf>,
}

impl Node {
    fn at(&self) -> String {
        format!("{}:{}", self.file.display(), self.name.line)
    }
    fn err(&self, message: impl Into<String>) -> ConfError {
        ConfError {
            file: self.file.as_ref().clone(),
            line: self.name.line,
            message: message.into(),
        }
    }
    fn arg_texts(&self) -> Vec<&str> {
        self.args.iter().map(|a| a.text.as_str()).collect()
    }
    fn note(&self, message: impl Into<String>) -> Note {
        Note {
            at: self.at(),
            message: message.into(),
        }
    }
}

/// What `{$NAME}` substitution did, for notes.
struct EnvUse {
    line: u32,
    name: String,
    value: Option<String>,
    default: Option<String>,
}

/// Substitutes `{$NAME}` and `{$NAME:default}` line by line, as Caddy does before
/// lexing (the default runs to the first `}`).
fn substitute_env(text: &str, env: Env<'_>, uses: &mut Vec<EnvUse>) -> String {
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

fn lex(text: &str, file: &Path) -> Result<Vec<Tok>, ConfError> {
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

fn parse_nodes(toks: &[Tok], file: &Arc<PathBuf>) -> Result<Vec<Node>, ConfError> {
    let mut i = 0;
    let nodes = parse_block(toks, &mut i, 0, file)?;
    Ok(nodes)
}

/// How deep `{ }` blocks may nest in one file.
const MAX_NESTING: usize = 32;

fn parse_block(
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

/// Parses `text` (env substituted) into nodes with snippets and imports expanded.
struct Source {
    nodes: Vec<Node>,
    env: Vec<(PathBuf, EnvUse)>,
}

fn parse_source(
    text: &str,
    path: &Path,
    env: Env<'_>,
    depth: usize,
    src: &mut Vec<(PathBuf, EnvUse)>,
) -> Result<Vec<Node>, ConfError> {
    let mut uses = Vec::new();
    let text = substitute_env(text, env, &mut uses);
    src.extend(uses.into_iter().map(|u| (path.to_path_buf(), u)));
    let toks = lex(&text, path)?;
    let file = Arc::new(path.to_path_buf());
    let nodes = parse_nodes(&toks, &file)?;
    let _ = depth;
    Ok(nodes)
}

fn load(path: &Path, text: &str, env: Env<'_>) -> Result<Source, ConfError> {
    let mut uses = Vec::new();
    let nodes = parse_source(text, path, env, 0, &mut uses)?;
    // Snippets: `(name) { … }` at the top level.
    let mut snippets: Vec<(String, Vec<Node>)> = Vec::new();
    let mut rest = Vec::new();
    for n in nodes {
        let t = &n.name.text;
        if !n.name.quoted && t.len() > 2 && t.starts_with('(') && t.ends_with(')') {
            let Some(block) = n.block.clone() else {
                return Err(n.err("a snippet needs a block: (name) { … }"));
            };
            snippets.push((t[1..t.len() - 1].to_string(), block));
        } else {
            rest.push(n);
        }
    }
    let mut files_seen = 0usize;
    let mut budget = Budget::default();
    budget.spend(0, text.len() as u64).map_err(|m| ConfError {
        file: path.to_path_buf(),
        line: 0,
        message: m,
    })?;
    let nodes = expand(
        rest,
        &snippets,
        env,
        0,
        &mut uses,
        &mut files_seen,
        &mut budget,
    )?;
    Ok(Source { nodes, env: uses })
}

/// Nodes and text bytes in `nodes`, blocks included.
fn size_of(nodes: &[Node]) -> (u64, u64) {
    let (mut count, mut bytes) = (0u64, 0u64);
    let mut todo: Vec<&[Node]> = vec![nodes];
    while let Some(list) = todo.pop() {
        for n in list {
            count += 1;
            bytes +=
                (n.name.text.len() + n.args.iter().map(|a| a.text.len()).sum::<usize>()) as u64;
            if let Some(b) = &n.block {
                todo.push(b);
            }
        }
    }
    (count, bytes)
}

/// Expands `import`s (snippets and files), each import's nodes spent from `budget`
/// before they are copied.
fn expand(
    nodes: Vec<Node>,
    snippets: &[(String, Vec<Node>)],
    env: Env<'_>,
    depth: usize,
    uses: &mut Vec<(PathBuf, EnvUse)>,
    files: &mut usize,
    budget: &mut Budget,
) -> Result<Vec<Node>, ConfError> {
    let mut out = Vec::with_capacity(nodes.len());
    for mut n in nodes {
        if n.name.is("import") {
            if depth > 16 {
                return Err(n.err("imports nested too deeply (an import cycle?)"));
            }
            let Some(target) = n.args.first() else {
                return Err(n.err("import needs a snippet name or a file"));
            };
            budget.spend(1, 0).map_err(|m| n.err(m))?;
            let args: Vec<String> = n.args[1..].iter().map(|a| a.text.clone()).collect();
            let body = if let Some((_, b)) = snippets.iter().find(|(s, _)| *s == target.text) {
                let (count, bytes) = size_of(b);
                budget.spend(count, bytes).map_err(|m| n.err(m))?;
                b.clone()
            } else {
                let base = n.file.parent().map(Path::to_path_buf).unwrap_or_default();
                let pat = base.join(&target.text);
                let mut paths: Vec<PathBuf> = if target.text.contains('*') {
                    budget.load(0).map_err(|m| n.err(m))?;
                    glob_files(&pat)
                } else {
                    vec![pat.clone()]
                };
                paths.sort();
                let mut body = Vec::new();
                for p in paths {
                    *files += 1;
                    if *files > 256 {
                        return Err(n.err("more than 256 imported files"));
                    }
                    budget.load(0).map_err(|m| n.err(m))?;
                    let text = read_text(&p, Some((n.file.as_path(), n.name.line)))?;
                    budget.spend(0, text.len() as u64).map_err(|m| n.err(m))?;
                    let nodes = parse_source(&text, &p, env, depth + 1, uses)?;
                    let (count, bytes) = size_of(&nodes);
                    budget.spend(count, bytes).map_err(|m| n.err(m))?;
                    body.extend(nodes);
                }
                body
            };
            let body = if args.is_empty() {
                body
            } else {
                body.into_iter()
                    .map(|b| with_args(b, &args, budget))
                    .collect::<Result<_, _>>()
                    .map_err(|m| n.err(m))?
            };
            out.extend(expand(body, snippets, env, depth + 1, uses, files, budget)?);
            continue;
        }
        if let Some(b) = n.block.take() {
            n.block = Some(expand(b, snippets, env, depth, uses, files, budget)?);
        }
        out.push(n);
    }
    Ok(out)
}

/// `{args[N]}` / `{args.N}` replaced by the import's arguments; the text added is
/// spent from `budget` before it is made.
fn with_args(mut n: Node, args: &[String], budget: &mut Budget) -> Result<Node, String> {
    let mut sub = |t: &mut Tok| -> Result<(), String> {
        if !t.text.contains("{args") {
            return Ok(());
        }
        for (i, a) in args.iter().enumerate() {
            for pat in [format!("{{args[{i}]}}"), format!("{{args.{i}}}")] {
                let hits = t.text.matches(pat.as_str()).count() as u64;
                if hits == 0 {
                    continue;
                }
                let added = hits.saturating_mul(a.len() as u64);
                budget.spend(hits, added)?;
                t.text = t.text.replace(pat.as_str(), a);
            }
        }
        Ok(())
    };
    sub(&mut n.name)?;
    for a in &mut n.args {
        sub(a)?;
    }
    if let Some(b) = n.block.take() {
        n.block = Some(
            b.into_iter()
                .map(|c| with_args(c, args, budget))
                .collect::<Result<_, _>>()?,
        );
    }
    Ok(n)
}

/// Files matching a glob whose `*` are in the last component only.
fn glob_files(pat: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (pat.parent(), pat.file_name()) else {
        return Vec::new();
    };
    let name = name.to_string_lossy();
    let re = glob_regex(&name, false);
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(Result::ok)
        .filter(|e| re.is_match(e.file_name().to_string_lossy().as_bytes()))
        .map(|e| e.path())
        .collect()
}

fn glob_regex(g: &str, caseless: bool) -> Regex {
    let mut s = String::from(if caseless { "(?i)^" } else { "^" });
    for part in g.split('*').enumerate() {
        if part.0 > 0 {
            s.push_str(".*");
        }
        s.push_str(&regex::escape(part.1));
    }
    s.push('$');
    Regex::new(&s).expect("escaped glob")
}

// ---------------------------------------------------------------- conditions

/// A condition on a request, before it is cut into [`Matcher`]s.
#[derive(Clone, Debug)]
enum Cond {
    True,
    False,
    And(Vec<Cond>),
    Or(Vec<Cond>),
    Not(Box<Cond>),
    Leaf(Leaf),
}

#[derive(Clone, Debug)]
enum Leaf {
    /// On the path as the handler sees it (after rewrites).
    Path(Regex),
    Query(Regex),
    Method(Vec<String>),
    Host(Vec<String>),
    Agent(Regex),
    Referer(Regex),
    HasReferer(bool),
    HasCookie(bool),
    Identified(bool),
    Cidr(Vec<IpNet>),
}

fn and(v: Vec<Cond>) -> Cond {
    let mut out = Vec::new();
    for c in v {
        match c {
            Cond::True => {}
            Cond::False => return Cond::False,
            Cond::And(x) => out.extend(x),
            c => out.push(c),
        }
    }
    match out.len() {
        0 => Cond::True,
        1 => out.pop().expect("one"),
        _ => Cond::And(out),
    }
}

fn or(v: Vec<Cond>) -> Cond {
    let mut out = Vec::new();
    for c in v {
        match c {
            Cond::False => {}
            Cond::True => return Cond::True,
            Cond::Or(x) => out.extend(x),
            c => out.push(c),
        }
    }
    match out.len() {
        0 => Cond::False,
        1 => out.pop().expect("one"),
        _ => Cond::Or(out),
    }
}

fn not(c: Cond) -> Cond {
    match c {
        Cond::True => Cond::False,
        Cond::False => Cond::True,
        Cond::Not(x) => *x,
        c => Cond::Not(Box::new(c)),
    }
}

/// `c` with its path conditions decided for the static path `p` (a rewrite target).
fn at_path(c: &Cond, p: Option<&str>) -> Cond {
    let Some(p) = p else { return c.clone() };
    match c {
        Cond::Leaf(Leaf::Path(re)) => {
            if re.is_match(p.as_bytes()) {
                Cond::True
            } else {
                Cond::False
            }
        }
        Cond::And(v) => and(v.iter().map(|x| at_path(x, Some(p))).collect()),
        Cond::Or(v) => or(v.iter().map(|x| at_path(x, Some(p))).collect()),
        Cond::Not(x) => not(at_path(x, Some(p))),
        c => c.clone(),
    }
}

/// A literal of a conjunction: a leaf or its negation.
type Lit = (bool, Leaf);

const MAX_TERMS: usize = 512;

/// Disjunctive normal form; `None` when it would exceed [`MAX_TERMS`].
fn dnf(c: &Cond, neg: bool) -> Option<Vec<Vec<Lit>>> {
    Some(match (c, neg) {
        (Cond::True, false) | (Cond::False, true) => vec![Vec::new()],
        (Cond::False, false) | (Cond::True, true) => Vec::new(),
        (Cond::Leaf(l), n) => vec![vec![(!n, l.clone())]],
        (Cond::Not(x), n) => dnf(x, !n)?,
        (Cond::Or(v), false) | (Cond::And(v), true) => {
            let mut out = Vec::new();
            for x in v {
                out.extend(dnf(x, neg)?);
                if out.len() > MAX_TERMS {
                    return None;
                }
            }
            out
        }
        (Cond::And(v), false) | (Cond::Or(v), true) => {
            let mut acc: Vec<Vec<Lit>> = vec![Vec::new()];
            for x in v {
                let d = dnf(x, neg)?;
                let mut next = Vec::new();
                for a in &acc {
                    for t in &d {
                        let mut m = a.clone();
                        m.extend(t.iter().cloned());
                        next.push(m);
                    }
                }
                if next.len() > MAX_TERMS {
                    return None;
                }
                acc = next;
            }
            acc
        }
    })
}

fn leaf_matcher(l: &Leaf) -> Matcher {
    let mut m = Matcher::default();
    put(&mut m, l);
    m
}

/// Adds a positive leaf to `m`; a field already set is combined with a double negation.
fn put(m: &mut Matcher, l: &Leaf) -> bool {
    let must = |m: &mut Matcher, l: &Leaf| {
        m.not.push(Matcher {
            not: vec![leaf_matcher(l)],
            ..Matcher::default()
        });
    };
    let b = |v: &[String]| -> Vec<Vec<u8>> { v.iter().map(|s| s.as_bytes().to_vec()).collect() };
    match l {
        Leaf::Path(re) if m.path_regex.is_none() => m.path_regex = Some(re.clone()),
        Leaf::Query(re) if m.query_regex.is_none() => m.query_regex = Some(re.clone()),
        Leaf::Agent(re) if m.ua_regex.is_none() => m.ua_regex = Some(re.clone()),
        Leaf::Referer(re) if m.referer_regex.is_none() => m.referer_regex = Some(re.clone()),
        Leaf::Cidr(n) if m.cidr.is_empty() => m.cidr = n.clone(),
        Leaf::Method(v) if m.method.is_empty() => m.method = b(v),
        Leaf::Host(v) if m.host.is_empty() => m.host = b(v),
        Leaf::Method(v) => {
            m.method
                .retain(|x| v.iter().any(|y| y.as_bytes().eq_ignore_ascii_case(x)));
            return !m.method.is_empty();
        }
        Leaf::Host(v) => {
            m.host
                .retain(|x| v.iter().any(|y| y.as_bytes().eq_ignore_ascii_case(x)));
            return !m.host.is_empty();
        }
        Leaf::HasReferer(w) => return *m.has_referer.get_or_insert(*w) == *w,
        Leaf::HasCookie(w) => return *m.has_cookie.get_or_insert(*w) == *w,
        Leaf::Identified(w) => return *m.identified.get_or_insert(*w) == *w,
        l => must(m, l),
    }
    true
}

/// A conjunction as one matcher; `None` if it cannot hold.
fn term_matcher(t: &[Lit]) -> Option<Matcher> {
    let mut m = Matcher::default();
    for (pos, l) in t {
        if *pos {
            if !put(&mut m, l) {
                return None;
            }
        } else {
            m.not.push(leaf_matcher(l));
        }
    }
    Some(m)
}

// ---------------------------------------------------------------- matchers

struct Unsupported {
    at: String,
    message: String,
}

type Named = Vec<(String, Node)>;

/// Translates a matcher set (the lines of a `match { }` / `@name { }` block, all must hold).
fn matcher_set(lines: &[Node], r: &mut Reader) -> Result<Result<Cond, Unsupported>, ConfError> {
    let mut all = Vec::new();
    // Caddy merges repeated `path`/`method` lines (any of their values) and repeated
    // `header` lines of the same field.
    let mut paths: Vec<Cond> = Vec::new();
    let mut methods: Vec<String> = Vec::new();
    for n in lines {
        let name = n.name.text.as_str();
        match name {
            "path" => paths.push(path_cond(&n.arg_texts())),
            "method" => methods.extend(n.args.iter().map(|a| a.text.to_ascii_uppercase())),
            "not" => {
                let inner = match (&n.block, n.args.is_empty()) {
                    (Some(b), _) => matcher_set(b, r)?,
                    (None, false) => {
                        let one = Node {
                            name: n.args[0].clone(),
                            args: n.args[1..].to_vec(),
                            block: None,
                            file: n.file.clone(),
                        };
                        matcher_set(std::slice::from_ref(&one), r)?
                    }
                    (None, true) => return Err(n.err("not needs a matcher or a block")),
                };
                match inner {
                    Ok(c) => all.push(not(c)),
                    Err(u) => return Ok(Err(u)),
                }
            }
            _ => match one_matcher(n, r)? {
                Ok(c) => all.push(c),
                Err(u) => return Ok(Err(u)),
            },
        }
    }
    if !paths.is_empty() {
        all.push(or(paths));
    }
    if !methods.is_empty() {
        all.push(Cond::Leaf(Leaf::Method(methods)));
    }
    Ok(Ok(and(all)))
}

/// Caddy's `path` matcher: case-insensitive; `*` alone is every path, a leading or
/// trailing `*` a suffix or prefix, `*x*` a substring, other `*` one path segment.
fn path_cond(pats: &[&str]) -> Cond {
    let mut alts = Vec::new();
    for p in pats {
        if *p == "*" {
            return Cond::True;
        }
        let inner = p.trim_start_matches('*').trim_end_matches('*');
        let lead = p.starts_with('*');
        let trail = p.ends_with('*') && p.len() > 1;
        let mut s = String::new();
        s.push_str(if lead { ".*" } else { "" });
        for (i, part) in inner.split('*').enumerate() {
            if i > 0 {
                s.push_str("[^/]*");
            }
            s.push_str(&regex::escape(part));
        }
        if trail {
            s.push_str(".*");
        }
        alts.push(s);
    }
    let re = format!("(?is)^(?:{})$", alts.join("|"));
    Cond::Leaf(Leaf::Path(Regex::new(&re).expect("escaped path patterns")))
}

fn header_glob(v: &str) -> String {
    // Caddy's header matcher: `*` any, `x*` prefix, `*x` suffix, `*x*` substring.
    let lead = v.starts_with('*');
    let trail = v.ends_with('*') && v.len() > 1;
    let inner = v.trim_start_matches('*').trim_end_matches('*');
    format!(
        "{}{}{}",
        if lead { "" } else { "^" },
        regex::escape(inner),
        if trail { "" } else { "$" }
    )
}

fn regex_of(n: &Node, pat: &str) -> Result<Regex, ConfError> {
    Regex::new(pat).map_err(|e| n.err(format!("bad regular expression {pat:?}: {e}")))
}

fn unsupported(
    n: &Node,
    message: impl Into<String>,
) -> Result<Result<Cond, Unsupported>, ConfError> {
    Ok(Err(Unsupported {
        at: n.at(),
        message: message.into(),
    }))
}

fn one_matcher(n: &Node, r: &mut Reader) -> Result<Result<Cond, Unsupported>, ConfError> {
    let a = n.arg_texts();
    let name = n.name.text.as_str();
    let c = match name {
        "header" | "header_regexp" => {
            let regexp = name == "header_regexp";
            let (field, vals): (&str, &[&str]) = match a.as_slice() {
                [] => return Err(n.err(format!("{name} needs a header field"))),
                [f, rest @ ..] => (f, rest),
            };
            // header_regexp [name] field regex
            let (field, vals) = if regexp && vals.len() == 2 {
                (vals[0], &vals[1..])
            } else {
                (field, vals)
            };
            let (field, absent) = match field.strip_prefix('!') {
                Some(f) => (f, true),
                None => (field, false),
            };
            if regexp && vals.len() != 1 {
                return Err(n.err("header_regexp needs a field and one regular expression"));
            }
            let lower = field.to_ascii_lowercase();
            let any = vals.is_empty() || vals.contains(&"*");
            if absent || (any && !regexp) {
                let present = !absent;
                return Ok(Ok(match lower.as_str() {
                    "referer" => Cond::Leaf(Leaf::HasReferer(present)),
                    "cookie" => Cond::Leaf(Leaf::HasCookie(present)),
                    "user-agent" => {
                        let c = Cond::Leaf(Leaf::Agent(Regex::new("(?s).").expect("static")));
                        if present { c } else { not(c) }
                    }
                    _ => {
                        return unsupported(
                            n,
                            format!("header {field}: the log does not carry this header"),
                        );
                    }
                }));
            }
            let pat = if regexp {
                regex_of(n, vals[0])?;
                vals[0].to_string()
            } else {
                vals.iter()
                    .map(|v| header_glob(v))
                    .collect::<Vec<_>>()
                    .join("|")
            };
            match lower.as_str() {
                "user-agent" => Cond::Leaf(Leaf::Agent(regex_of(n, &pat)?)),
                "referer" => Cond::Leaf(Leaf::Referer(regex_of(n, &pat)?)),
                "host" if !regexp => {
                    Cond::Leaf(Leaf::Host(a[1..].iter().map(|s| s.to_string()).collect()))
                }
                "cookie" => {
                    r.note_once(
                        "cookie",
                        n.note(format!(
                            "{name} Cookie {}: Caddy logs cookie values as REDACTED, so a cookie matcher is read as logscope's identity (identified = a user, or the session cookie the classifier is given)",
                            vals.join(" ")
                        )),
                    );
                    Cond::Leaf(Leaf::Identified(true))
                }
                _ => {
                    return unsupported(
                        n,
                        format!("{name} {field}: the log does not carry this header"),
                    );
                }
            }
        }
        "host" => {
            if a.iter().any(|h| h.contains('*')) {
                return unsupported(
                    n,
                    "host with a wildcard cannot be replayed (exact host names only)",
                );
            }
            Cond::Leaf(Leaf::Host(a.iter().map(|s| s.to_string()).collect()))
        }
        "path_regexp" => {
            let re = match a.as_slice() {
                [re] | [_, re] => *re,
                _ => return Err(n.err("path_regexp needs [name] regexp")),
            };
            Cond::Leaf(Leaf::Path(regex_of(n, re)?))
        }
        "vars_regexp" | "vars" => {
            let regexp = name == "vars_regexp";
            let (var, pat) = match a.as_slice() {
                [v, p] => (*v, p.to_string()),
                [_, v, p] if regexp => (*v, p.to_string()),
                [v, rest @ ..] if !regexp && !rest.is_empty() => (
                    *v,
                    rest.iter()
                        .map(|x| format!("^{}$", regex::escape(x)))
                        .collect::<Vec<_>>()
                        .join("|"),
                ),
                _ => return Err(n.err(format!("{name} needs a placeholder and a value"))),
            };
            let re = regex_of(n, &pat)?;
            match var {
                "{query}" | "{http.request.uri.query}" => Cond::Leaf(Leaf::Query(re)),
                "{path}" | "{http.request.uri.path}" => Cond::Leaf(Leaf::Path(re)),
                "{method}" | "{http.request.method}" => {
                    return unsupported(n, format!("{name} {var}: use the method matcher"));
                }
                "{http.request.header.User-Agent}" => Cond::Leaf(Leaf::Agent(re)),
                "{http.request.header.Referer}" => Cond::Leaf(Leaf::Referer(re)),
                _ => {
                    return unsupported(
                        n,
                        format!("{name} {var}: a placeholder the log cannot supply"),
                    );
                }
            }
        }
        "query" => {
            let mut alts = Vec::new();
            for kv in &a {
                let (k, v) = kv.split_once('=').unwrap_or((kv, "*"));
                let v = if v == "*" {
                    "[^&]*".to_string()
                } else {
                    regex::escape(v)
                };
                alts.push(format!("(?:^|&){}={v}(?:&|$)", regex::escape(k)));
            }
            if alts.is_empty() {
                return Err(n.err("query needs key=value"));
            }
            r.note_once(
                "query",
                n.note("query matcher: compared with the query as logged (Caddy decodes it first)"),
            );
            Cond::Leaf(Leaf::Query(regex_of(n, &alts.join("|"))?))
        }
        "remote_ip" | "client_ip" => {
            let mut nets = Vec::new();
            for s in &a {
                match *s {
                    "forwarded" => {
                        return unsupported(n, "remote_ip forwarded is not replayed");
                    }
                    "private_ranges" => {
                        for p in [
                            "192.168.0.0/16",
                            "172.16.0.0/12",
                            "10.0.0.0/8",
                            "127.0.0.1/8",
                            "fd00::/8",
                            "::1/128",
                        ] {
                            nets.push(p.parse::<IpNet>().expect("static"));
                        }
                    }
                    s => nets.push(
                        s.parse::<IpNet>()
                            .or_else(|_| s.parse::<std::net::IpAddr>().map(IpNet::from))
                            .map_err(|_| {
                                n.err(format!("{name}: `{s}` is not an address or CIDR"))
                            })?,
                    ),
                }
            }
            if nets.is_empty() {
                // Caddy matches nothing when the list is empty (an unset {$VAR}).
                Cond::False
            } else {
                if name == "remote_ip" {
                    r.note_once(
                        "remote_ip",
                        n.note("remote_ip: the log's client address stands for the TCP peer (they differ behind trusted proxies)"),
                    );
                }
                Cond::Leaf(Leaf::Cidr(nets))
            }
        }
        "expression" => {
            return unsupported(
                n,
                format!(
                    "expression {}: CEL is not evaluated from a log line",
                    a.join(" ")
                ),
            );
        }
        other => {
            return unsupported(n, format!("matcher `{other}` is not replayed"));
        }
    };
    Ok(Ok(c))
}

// ---------------------------------------------------------------- handler order

/// Caddy's default directive order (httpcaddyfile directives.go, v2.8 and later), with
/// `rate_limit` where the module registers it (before `basic_auth`).
const ORDER: &[&str] = &[
    "tracing",
    "map",
    "vars",
    "fs",
    "root",
    "log_append",
    "skip_log",
    "log_skip",
    "log_name",
    "header",
    "copy_response_headers",
    "request_body",
    "redir",
    "method",
    "rewrite",
    "uri",
    "try_files",
    "rate_limit",
    "basicauth",
    "basic_auth",
    "forward_auth",
    "request_header",
    "encode",
    "push",
    "intercept",
    "templates",
    "invoke",
    "handle",
    "handle_path",
    "route",
    "abort",
    "error",
    "copy_response",
    "respond",
    "metrics",
    "reverse_proxy",
    "php_fastcgi",
    "file_server",
    "acme_server",
];

/// Directives that end the request for what they match.
const TERMINAL: &[&str] = &[
    "redir",
    "abort",
    "error",
    "copy_response",
    "respond",
    "metrics",
    "reverse_proxy",
    "php_fastcgi",
    "file_server",
    "acme_server",
    "static_response",
];

/// Directives that neither end a request nor change what a zone matches.
const NEUTRAL: &[&str] = &[
    "tracing",
    "fs",
    "root",
    "log_append",
    "skip_log",
    "log_skip",
    "log_name",
    "header",
    "copy_response_headers",
    "request_body",
    "encode",
    "push",
    "intercept",
    "templates",
    "tls",
    "log",
    "bind",
    "handle_errors",
];

/// Site-level items that are not handlers.
const NOT_HANDLERS: &[&str] = &["tls", "log", "bind", "handle_errors"];

struct Reader {
    notes: Vec<Note>,
    once: Vec<&'static str>,
    order: Vec<String>,
    pending: Vec<Note>,
    zones: Vec<ZoneOut>,
    handlers: usize,
    distributed: Vec<String>,
}

struct ZoneOut {
    name: String,
    rate: Rate,
    key: KeySpec,
    cond: Cond,
    at: String,
}

impl Reader {
    fn note_once(&mut self, what: &'static str, n: Note) {
        if !self.once.contains(&what) {
            self.once.push(what);
            self.notes.push(n);
        }
    }

    fn rank(&self, d: &str) -> usize {
        self.order
            .iter()
            .position(|o| o == d)
            .unwrap_or(self.order.len())
    }
}

/// The path after the rewrites so far, per case: `None` = the path as logged.
type Cases = Vec<(Cond, Option<String>)>;

/// `c` (on the path as the handler sees it) as a condition on the logged request.
fn now(c: &Cond, cases: &Cases) -> Cond {
    or(cases
        .iter()
        .map(|(k, p)| and(vec![k.clone(), at_path(c, p.as_deref())]))
        .collect())
}

/// The matcher token of a handler directive: `*`, `/path…`, `@name`; `None` if absent.
fn matcher_token(
    n: &Node,
    named: &Named,
    r: &mut Reader,
) -> Result<Option<Result<Cond, Unsupported>>, ConfError> {
    let Some(t) = n.args.first() else {
        return Ok(None);
    };
    if t.quoted {
        return Ok(None);
    }
    if t.text == "*" {
        return Ok(Some(Ok(Cond::True)));
    }
    if t.text.starts_with('/') {
        return Ok(Some(Ok(path_cond(&[t.text.as_str()]))));
    }
    if let Some(name) = t.text.strip_prefix('@') {
        let Some((_, def)) = named.iter().find(|(k, _)| k == name) else {
            return Err(n.err(format!("no matcher named @{name} in this site")));
        };
        let def = def.clone();
        return Ok(Some(named_cond(&def, r)?));
    }
    Ok(None)
}

fn named_cond(def: &Node, r: &mut Reader) -> Result<Result<Cond, Unsupported>, ConfError> {
    match &def.block {
        Some(b) => matcher_set(b, r),
        None => {
            if def.args.is_empty() {
                return Err(def.err("a named matcher needs a matcher or a block"));
            }
            let one = Node {
                name: def.args[0].clone(),
                args: def.args[1..].to_vec(),
                block: None,
                file: def.file.clone(),
            };
            matcher_set(std::slice::from_ref(&one), r)
        }
    }
}

fn collect_named(nodes: &[Node], out: &mut Named) {
    for n in nodes {
        if let Some(name) = n.name.text.strip_prefix('@')
            && !n.name.quoted
        {
            out.push((name.to_string(), n.clone()));
        }
    }
}

/// Sorts the handlers of one block as Caddy does: by directive order; the same
/// directive with a single path matcher each, longer path first; one with a matcher
/// before one without; else as written.
fn sorted<'a>(nodes: &'a [Node], r: &Reader) -> Vec<&'a Node> {
    let mut v: Vec<&Node> = nodes
        .iter()
        .filter(|n| !n.name.text.starts_with('@') && !NOT_HANDLERS.contains(&n.name.text.as_str()))
        .collect();
    let path_len = |n: &Node| -> Option<usize> {
        n.args
            .first()
            .filter(|t| !t.quoted && t.text.starts_with('/'))
            .map(|t| t.text.len())
    };
    let has_matcher = |n: &Node| {
        n.args.first().is_some_and(|t| {
            !t.quoted && (t.text.starts_with('/') || t.text.starts_with('@') || t.text == "*")
        })
    };
    v.sort_by(|a, b| {
        let (ra, rb) = (r.rank(&a.name.text), r.rank(&b.name.text));
        ra.cmp(&rb).then_with(|| {
            if a.name.text != b.name.text {
                return std::cmp::Ordering::Equal;
            }
            match (path_len(a), path_len(b)) {
                (Some(x), Some(y)) => y.cmp(&x),
                _ => has_matcher(b).cmp(&has_matcher(a)),
            }
        })
    });
    v
}

/// Walks one block's handlers in Caddy's order; `guard` is how a request gets here.
fn walk(
    nodes: &[Node],
    sort: bool,
    mut guard: Cond,
    mut cases: Cases,
    named: &Named,
    r: &mut Reader,
) -> Result<(), ConfError> {
    let list: Vec<&Node> = if sort {
        sorted(nodes, r)
    } else {
        nodes
            .iter()
            .filter(|n| !n.name.text.starts_with('@'))
            .collect()
    };
    let mut i = 0;
    while i < list.len() {
        let n = list[i];
        let d = n.name.text.as_str();
        // Mutually exclusive groups of the same directive: rewrite, handle, handle_path.
        if sort && matches!(d, "rewrite" | "handle" | "handle_path") {
            let mut j = i;
            while j < list.len() && list[j].name.text == d {
                j += 1;
            }
            let group = &list[i..j];
            if d == "rewrite" {
                cases = rewrite_group(group, &cases, named, r)?;
            } else {
                let mut earlier: Vec<Cond> = Vec::new();
                for h in group {
                    let m = match matcher_token(h, named, r)? {
                        None => Cond::True,
                        Some(Ok(c)) => now(&c, &cases),
                        Some(Err(u)) => {
                            r.pending.push(Note {
                                at: u.at,
                                message: format!(
                                    "{} matcher not evaluated ({}): handle blocks after it are replayed as if it matched nothing",
                                    d, u.message
                                ),
                            });
                            Cond::False
                        }
                    };
                    if d == "handle_path" && body_has_rate_limit(h) {
                        r.notes.push(h.note(
                            "handle_path strips a path prefix: zones inside it are matched on the path as logged",
                        ));
                    }
                    let g = and(vec![guard.clone(), m.clone(), not(or(earlier.clone()))]);
                    if let Some(b) = &h.block {
                        walk(b, true, g, cases.clone(), named, r)?;
                    }
                    earlier.push(m);
                }
            }
            i = j;
            continue;
        }
        i += 1;
        match d {
            "rate_limit" => {
                let m = match matcher_token(n, named, r)? {
                    None => Cond::True,
                    Some(Ok(c)) => now(&c, &cases),
                    Some(Err(u)) => {
                        r.notes.push(Note {
                            at: u.at,
                            message: format!(
                                "rate_limit handler left out: its matcher cannot be evaluated ({})",
                                u.message
                            ),
                        });
                        continue;
                    }
                };
                let notes = std::mem::take(&mut r.pending);
                for p in notes {
                    if !r.notes.contains(&p) {
                        r.notes.push(p);
                    }
                }
                let g = and(vec![guard.clone(), m]);
                rate_limit(n, g, &cases, r)?;
            }
            "route" => {
                let m = match matcher_token(n, named, r)? {
                    None => Cond::True,
                    Some(Ok(c)) => now(&c, &cases),
                    Some(Err(u)) => {
                        r.pending.push(Note {
                            at: u.at,
                            message: format!(
                                "route matcher not evaluated ({}): the route is replayed as if it matched nothing",
                                u.message
                            ),
                        });
                        Cond::False
                    }
                };
                if let Some(b) = &n.block {
                    walk(b, false, and(vec![guard.clone(), m]), cases.clone(), named, r)?;
                }
            }
            d if TERMINAL.contains(&d) => {
                let m = match matcher_token(n, named, r)? {
                    None => Cond::True,
                    Some(Ok(c)) => now(&c, &cases),
                    Some(Err(u)) => {
                        r.pending.push(n.note(format!(
                            "{d} runs before rate_limit but its matcher cannot be evaluated ({}: {}): the requests it answers are replayed as reaching the limiter",
                            u.at, u.message
                        )));
                        continue;
                    }
                };
                guard = and(vec![guard, not(m)]);
                if matches!(guard, Cond::False) {
                    r.pending.push(n.note(format!(
                        "{d} without a matcher answers every request before any later rate_limit"
                    )));
                }
            }
            "uri" => r.pending.push(n.note(format!(
                "uri {} changes the request before rate_limit and is not applied: zones match the URI as logged",
                n.arg_texts().join(" ")
            ))),
            d if NEUTRAL.contains(&d) => {}
            d => r.pending.push(n.note(format!(
                "{d} runs before rate_limit and is not evaluated (what it answers or changes is not in the log)"
            ))),
        }
    }
    Ok(())
}

fn body_has_rate_limit(n: &Node) -> bool {
    n.block.as_ref().is_some_and(|b| {
        b.iter()
            .any(|c| c.name.text == "rate_limit" || body_has_rate_limit(c))
    })
}

/// One group of mutually exclusive `rewrite`s: the first that matches applies.
fn rewrite_group(
    group: &[&Node],
    cases: &Cases,
    named: &Named,
    r: &mut Reader,
) -> Result<Cases, ConfError> {
    let mut rules: Vec<(Cond, Option<String>)> = Vec::new();
    for n in group {
        let (m, to) = match n.args.as_slice() {
            [to] => (Cond::True, to),
            [_, to] => match matcher_token(n, named, r)? {
                Some(Ok(c)) => (c, to),
                Some(Err(u)) => {
                    r.pending.push(Note {
                        at: u.at,
                        message: format!(
                            "rewrite matcher not evaluated ({}): the rewrite is not applied",
                            u.message
                        ),
                    });
                    continue;
                }
                None => return Err(n.err("rewrite: the first of two arguments must be a matcher")),
            },
            _ => return Err(n.err("rewrite needs [matcher] <to>")),
        };
        let to = to.text.as_str();
        let target = if to.contains('{') || to.contains('?') || !to.starts_with('/') {
            r.pending.push(n.note(format!(
                "rewrite to {to}: a target with placeholders or a query is not evaluated; zones see the path as logged"
            )));
            None
        } else {
            Some(to.to_string())
        };
        rules.push((m, target));
    }
    let mut out = Cases::new();
    for (k, p) in cases {
        let mut earlier: Vec<Cond> = Vec::new();
        for (m, to) in &rules {
            let here = at_path(m, p.as_deref());
            let c = and(vec![k.clone(), here.clone(), not(or(earlier.clone()))]);
            if !matches!(c, Cond::False) {
                out.push((c, to.clone().or_else(|| p.clone())));
            }
            earlier.push(here);
        }
        let rest = and(vec![k.clone(), not(or(earlier))]);
        if !matches!(rest, Cond::False) {
            out.push((rest, p.clone()));
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------- rate_limit

fn rate_limit(n: &Node, guard: Cond, cases: &Cases, r: &mut Reader) -> Result<(), ConfError> {
    let Some(block) = &n.block else {
        return Err(n.err("rate_limit needs a block with at least one zone"));
    };
    r.handlers += 1;
    for d in block {
        match d.name.text.as_str() {
            "zone" => zone(d, &guard, cases, r)?,
            "distributed" => r.distributed.push(d.at()),
            "log_key" | "disable_metrics" | "jitter" | "sweep_interval" | "storage" => {}
            other => {
                return Err(d.err(format!(
                    "unrecognized rate_limit subdirective `{other}` (zone, distributed, log_key, disable_metrics, storage, jitter, sweep_interval)"
                )));
            }
        }
    }
    Ok(())
}

fn zone(d: &Node, guard: &Cond, cases: &Cases, r: &mut Reader) -> Result<(), ConfError> {
    let [name] = d.arg_texts()[..] else {
        return Err(d.err("zone needs one name: zone <name> { … }"));
    };
    let Some(body) = &d.block else {
        return Err(d.err(format!(
            "zone {name} needs a block with key, events and window"
        )));
    };
    let (mut key, mut window, mut events) = (None::<&Node>, None::<(&Node, String)>, None::<u64>);
    let (mut v4, mut v6) = (0u8, 0u8);
    let mut sets: Vec<Cond> = Vec::new();
    let mut bad: Option<Unsupported> = None;
    for s in body {
        let one = |s: &Node| -> Result<String, ConfError> {
            match s.arg_texts()[..] {
                [v] => Ok(v.to_string()),
                _ => Err(s.err(format!("{} needs one value", s.name.text))),
            }
        };
        match s.name.text.as_str() {
            "key" => {
                if key.is_some() {
                    return Err(s.err("zone key already specified"));
                }
                one(s)?;
                key = Some(s);
            }
            "window" => {
                if window.is_some() {
                    return Err(s.err("zone window already specified"));
                }
                window = Some((s, one(s)?));
            }
            "events" => {
                if events.is_some() {
                    return Err(s.err("zone max events already specified"));
                }
                let v = one(s)?;
                let e: u64 = v
                    .parse()
                    .map_err(|_| s.err(format!("invalid max events integer '{v}'")))?;
                events = Some(e);
            }
            "ipv4_prefix" | "ipv6_prefix" => {
                let v = one(s)?;
                let max = if s.name.text == "ipv4_prefix" {
                    32
                } else {
                    128
                };
                let b: u8 = v
                    .parse()
                    .ok()
                    .filter(|b| *b <= max)
                    .ok_or_else(|| s.err(format!("invalid {} '{v}' (0–{max})", s.name.text)))?;
                if s.name.text == "ipv4_prefix" {
                    v4 = b;
                } else {
                    v6 = b;
                }
            }
            "match" => {
                let Some(b) = &s.block else {
                    return Err(s.err("match needs a block of matchers"));
                };
                match matcher_set(b, r)? {
                    Ok(c) => sets.push(c),
                    Err(u) => bad = bad.or(Some(u)),
                }
            }
            other => {
                return Err(s.err(format!(
                    "unrecognized zone subdirective `{other}` (key, window, events, ipv4_prefix, ipv6_prefix, match)"
                )));
            }
        }
    }
    let (Some((wnode, w)), Some(ev)) = (window, events) else {
        return Err(d.err(format!(
            "zone {name}: a rate limit zone requires both a window and maximum events"
        )));
    };
    if ev == 0 {
        return Err(d.err(format!("zone {name}: events must be above 0")));
    }
    let rate = Rate::parse(&format!("{ev}/{w}"))
        .map_err(|e| wnode.err(format!("invalid window duration '{w}': {e}")))?;
    if let Some(u) = bad {
        r.notes.push(Note {
            at: u.at,
            message: format!("zone {name} left out: {}", u.message),
        });
        return Ok(());
    }
    let key = match key {
        None => KeySpec::Site,
        Some(k) => match key_spec(&k.args[0].text, v4, v6) {
            Ok(ks) => ks,
            Err(why) => {
                r.notes.push(k.note(format!(
                    "zone {name} left out: key {}: {why}",
                    k.args[0].text
                )));
                return Ok(());
            }
        },
    };
    if (v4 != 0 || v6 != 0) && !matches!(key, KeySpec::Prefix { .. }) {
        r.notes.push(d.note(format!(
            "zone {name}: ipv4_prefix/ipv6_prefix apply only to a key that is an address"
        )));
    }
    let m = if sets.is_empty() {
        Cond::True
    } else {
        or(sets)
    };
    let cond = and(vec![guard.clone(), now(&m, cases)]);
    r.zones.push(ZoneOut {
        name: name.to_string(),
        rate,
        key,
        cond,
        at: d.at(),
    });
    Ok(())
}

/// A zone key: a static text (one bucket), or one placeholder the log supplies.
fn key_spec(k: &str, v4: u8, v6: u8) -> Result<KeySpec, String> {
    if !k.contains('{') {
        return Ok(KeySpec::Site);
    }
    let inner = k
        .strip_prefix('{')
        .and_then(|x| x.strip_suffix('}'))
        .filter(|x| !x.contains('{') && !x.contains('}'))
        .ok_or("a key of several placeholders or of text and placeholders is not replayed")?;
    let addr = |v4: u8, v6: u8| {
        if v4 == 0 && v6 == 0 {
            KeySpec::Ip
        } else {
            KeySpec::Prefix {
                v4: if v4 == 0 { 32 } else { v4 },
                v6: if v6 == 0 { 128 } else { v6 },
            }
        }
    };
    let lower = inner.to_ascii_lowercase();
    Ok(match lower.as_str() {
        "remote_host" | "http.request.remote.host" | "client_ip" | "http.vars.client_ip" => {
            addr(v4, v6)
        }
        "http.request.header.user-agent" => KeySpec::Agent,
        "http.request.header.referer" => KeySpec::Referer,
        "host" | "http.request.host" | "http.request.header.host" => KeySpec::Host,
        "method" | "http.request.method" => KeySpec::Method,
        "path" | "http.request.uri.path" => KeySpec::Path,
        "uri" | "http.request.uri" => KeySpec::Uri,
        "query" | "http.request.uri.query" => KeySpec::Query,
        "http.auth.user.id" => KeySpec::User,
        l if l.starts_with("http.request.remote.host/") || l.starts_with("remote_host/") => {
            return Err(
                "Caddy has no prefix placeholder; use ipv4_prefix / ipv6_prefix in the zone".into(),
            );
        }
        l if l.starts_with("http.request.header.") => {
            return Err("a header the log does not carry".into());
        }
        _ => return Err("a placeholder the log cannot supply".into()),
    })
}

// ---------------------------------------------------------------- build

fn build(text: &str, path: &Path, name: String, env: Env<'_>) -> Result<CaddyConf, ConfError> {
    let src = load(path, text, env)?;
    let mut r = Reader {
        notes: Vec::new(),
        once: Vec::new(),
        order: ORDER.iter().map(|s| s.to_string()).collect(),
        pending: Vec::new(),
        zones: Vec::new(),
        handlers: 0,
        distributed: Vec::new(),
    };
    let mut nodes = src.nodes.as_slice();
    // Global options.
    if let Some(g) = nodes.first()
        && g.name.is("{")
    {
        for o in g.block.as_deref().unwrap_or(&[]) {
            match o.name.text.as_str() {
                "order" => order(o, &mut r)?,
                "servers"
                    if o.block
                        .as_deref()
                        .unwrap_or(&[])
                        .iter()
                        .any(|s| s.name.text == "trusted_proxies") =>
                {
                    r.note_once(
                        "trusted",
                        o.note("servers trusted_proxies: {client_ip} is the client the log records; {remote_host} is the TCP peer, which the log's client address stands for"),
                    );
                }
                _ => {}
            }
        }
        nodes = &nodes[1..];
    }
    // Sites: `addr… { … }`, or the whole rest when the first address has no block.
    let sites: Vec<(String, Vec<Node>, String)> = match nodes.first() {
        None => Vec::new(),
        // Handlers pasted bare (what --emit caddy writes): one site of every request.
        Some(f)
            if !f.name.quoted
                && (ORDER.contains(&f.name.text.as_str())
                    || NOT_HANDLERS.contains(&f.name.text.as_str())
                    || f.name.text.starts_with('@')) =>
        {
            vec![(
                "(handlers without a site)".to_string(),
                nodes.to_vec(),
                f.at(),
            )]
        }
        Some(f) if f.block.is_none() => vec![(
            std::iter::once(f.name.text.clone())
                .chain(f.args.iter().map(|a| a.text.clone()))
                .collect::<Vec<_>>()
                .join(" "),
            nodes[1..].to_vec(),
            f.at(),
        )],
        Some(_) => {
            let mut v = Vec::new();
            for s in nodes {
                let Some(b) = &s.block else {
                    return Err(s.err(format!(
                        "`{}` outside a site block (give each site a {{ }} block)",
                        s.name.text
                    )));
                };
                v.push((
                    std::iter::once(s.name.text.clone())
                        .chain(s.args.iter().map(|a| a.text.clone()))
                        .collect::<Vec<_>>()
                        .join(" "),
                    b.clone(),
                    s.at(),
                ));
            }
            v
        }
    };
    let with_limits: Vec<&(String, Vec<Node>, String)> = sites
        .iter()
        .filter(|(_, b, _)| {
            b.iter()
                .any(|n| n.name.text == "rate_limit" || body_has_rate_limit(n))
        })
        .collect();
    for (addrs, body, at) in &with_limits {
        let mut named = Named::new();
        collect_named(body, &mut named);
        let guard = if with_limits.len() > 1 {
            let hosts: Vec<String> = addrs
                .split_whitespace()
                .filter_map(|a| {
                    let a = a
                        .trim_start_matches("https://")
                        .trim_start_matches("http://");
                    let h = a.split(':').next().unwrap_or("");
                    (!h.is_empty() && !h.contains('*')).then(|| h.to_string())
                })
                .collect();
            r.notes.push(Note {
                at: at.clone(),
                message: format!(
                    "several sites have rate_limit: this one's zones apply to requests for {} (by Host; wildcard addresses are not matched)",
                    if hosts.is_empty() { "no host".to_string() } else { hosts.join(", ") }
                ),
            });
            Cond::Leaf(Leaf::Host(hosts))
        } else {
            Cond::True
        };
        let cases: Cases = vec![(Cond::True, None)];
        walk(body, true, guard, cases, &named, &mut r)?;
    }
    if r.zones.is_empty() && r.handlers == 0 {
        return Err(ConfError {
            file: path.to_path_buf(),
            line: 1,
            message: "no rate_limit handler in any site: nothing to replay".into(),
        });
    }
    for at in &r.distributed {
        r.notes.push(Note {
            at: at.clone(),
            message: "distributed: other instances' counts (read from storage) are not simulated; replayed as one instance".into(),
        });
    }
    if r.handlers > 1 {
        r.notes.push(Note {
            at: String::new(),
            message: format!(
                "{} rate_limit handlers: their zones are tried in one order, most permissive first; Caddy tries each handler's zones in turn",
                r.handlers
            ),
        });
    }
    for (file, u) in &src.env {
        let at = format!("{}:{}", file.display(), u.line);
        let msg = match (&u.value, &u.default) {
            (Some(v), Some(d)) if v != d => {
                format!("{{${}}} = {v} from the environment (default {d})", u.name)
            }
            (None, None) => format!("{{${}}} is not set: read as empty", u.name),
            _ => continue,
        };
        r.notes.push(Note { at, message: msg });
    }
    // Zones with equal rates: Caddy's order among them is not fixed.
    let mut ties: Vec<String> = Vec::new();
    for (i, a) in r.zones.iter().enumerate() {
        let same: Vec<&str> = r.zones[i + 1..]
            .iter()
            .filter(|b| b.rate.cmp_permissive(&a.rate).is_eq())
            .map(|b| b.name.as_str())
            .collect();
        let seen = r.zones[..i]
            .iter()
            .any(|b| b.rate.cmp_permissive(&a.rate).is_eq());
        if !same.is_empty() && !seen {
            ties.push(format!("{} and {}", a.name, same.join(", ")));
        }
    }
    if !ties.is_empty() {
        r.notes.push(Note {
            at: String::new(),
            message: format!(
                "zones with equal events/window have no fixed order in Caddy (sort.Slice over a map); replayed in file order: {}",
                ties.join("; ")
            ),
        });
    }
    let mut p = Policy::new(name, Dialect::Caddy);
    p.set_description(format!(
        "{}: {} rate_limit zones",
        path.display(),
        r.zones.len()
    ));
    for z in &r.zones {
        let mut spec = LimitSpec::new(Algorithm::Caddy, z.rate);
        spec.key = z.key.clone();
        spec.name = Some(z.name.clone());
        let zone = Zone::new(z.name.clone(), spec).map_err(|e| ConfError {
            file: path.to_path_buf(),
            line: 0,
            message: format!("{}: zone {}: {e}", z.at, z.name),
        })?;
        let zid = p.add_zone(zone).map_err(|e| ConfError {
            file: path.to_path_buf(),
            line: 0,
            message: e.to_string(),
        })?;
        let Some(terms) = dnf(&z.cond, false) else {
            r.notes.push(Note {
                at: z.at.clone(),
                message: format!(
                    "zone {} left out: its matchers, rewrites and exclusions expand to more than {MAX_TERMS} cases",
                    z.name
                ),
            });
            continue;
        };
        let matchers: Vec<Matcher> = terms.iter().filter_map(|t| term_matcher(t)).collect();
        if matchers.is_empty() {
            r.notes.push(Note {
                at: z.at.clone(),
                message: format!("zone {} matches no request", z.name),
            });
        }
        let lim = [LimitRef {
            zone: zid,
            burst: None,
            delay: None,
        }];
        for (i, m) in matchers.iter().enumerate() {
            let mut m = m.clone();
            // Disjoint: a request that an earlier case of this zone took is not counted twice.
            m.not.extend(matchers[..i].iter().cloned());
            p.add_rule(z.name.clone(), m, Exempt::default(), &lim)
                .map_err(|e| ConfError {
                    file: path.to_path_buf(),
                    line: 0,
                    message: e.to_string(),
                })?;
        }
    }
    Ok(CaddyConf {
        policy: p,
        notes: r.notes,
    })
}

/// Global `order A before|after B`, `order A first|last`.
fn order(o: &Node, r: &mut Reader) -> Result<(), ConfError> {
    let a = o.arg_texts();
    let (dir, pos, other) = match a.as_slice() {
        [d, p @ ("first" | "last")] => (*d, *p, None),
        [d, p @ ("before" | "after"), x] => (*d, *p, Some(*x)),
        _ => return Err(o.err("order needs <directive> before|after <directive>, or first|last")),
    };
    r.order.retain(|x| x != dir);
    match (pos, other) {
        ("first", _) => r.order.insert(0, dir.to_string()),
        ("last", _) => r.order.push(dir.to_string()),
        (p, Some(x)) => {
            let Some(i) = r.order.iter().position(|y| y == x) else {
                return Err(o.err(format!("order: `{x}` is not an ordered directive")));
            };
            r.order
                .insert(if p == "before" { i } else { i + 1 }, dir.to_string());
        }
        _ => unreachable!("matched above"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::{Decision, Replay, Request};

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn conf(text: &str) -> CaddyConf {
        CaddyConf::from_str(text, Path::new("Caddyfile"), &no_env).unwrap_or_else(|e| panic!("{e}"))
    }

    fn req<'a>(t: i64, ip: &str, path: &'a [u8], query: Option<&'a [u8]>) -> Request<'a> {
        Request {
            arrival_ms: t,
            ip: Some(ip.parse().unwrap()),
            method: Some(b"GET"),
            path: Some(path),
            query,
            ..Request::default()
        }
    }

    #[test]
    fn zones_keys_and_rewrites() {
        let c = conf(
            "{\n\torder respond before rewrite\n}\n:80 {\n\trewrite /w/* /index.php\n\trespond /health 200\n\trate_limit {\n\t\tzone dyn {\n\t\t\tmatch {\n\t\t\t\tpath /index.php*\n\t\t\t}\n\t\t\tkey {remote_host}\n\t\t\tipv4_prefix 24\n\t\t\tevents {$EV:2}\n\t\t\twindow 1m\n\t\t}\n\t\tdistributed\n\t}\n}\n",
        );
        let p = &c.policy;
        assert_eq!(p.zones().len(), 1);
        assert_eq!(p.zones()[0].spec().key, KeySpec::Prefix { v4: 24, v6: 128 });
        assert!(
            c.notes.iter().any(|n| n.message.contains("distributed")),
            "{:?}",
            c.notes
        );
        let mut r = Replay::new(vec![c.policy]);
        // /w/Foo is rewritten to /index.php: counted; the third from the /24 is refused.
        let d: Vec<Decision> = (0..3)
            .map(|i| r.decide(&req(i, &format!("198.51.100.{i}"), b"/w/Foo", None))[0].decision)
            .collect();
        assert_eq!(d, [Decision::Admit, Decision::Admit, Decision::Refuse]);
        assert_eq!(
            r.decide(&req(5, "198.51.100.9", b"/other", None))[0].decision,
            Decision::OutOfScope
        );
    }

    #[test]
    fn errors_have_lines() {
        let bad = [
            (
                ":80 {\n\trate_limit {\n\t\tzone a {\n\t\t\tevents 3\n\t\t}\n\t}\n}\n",
                3,
                "both a window",
            ),
            (
                ":80 {\n\trate_limit {\n\t\tzone a {\n\t\t\tevents x\n\t\t}\n\t}\n}\n",
                4,
                "invalid max events",
            ),
            (
                ":80 {\n\trate_limit {\n\t\tfoo\n\t}\n}\n",
                3,
                "unrecognized",
            ),
            (":80 {\n\trespond 200\n}\n", 1, "no rate_limit"),
            (":80 {\n\trate_limit {\n", 2, "not closed"),
        ];
        for (text, line, want) in bad {
            let e = CaddyConf::from_str(text, Path::new("C"), &no_env)
                .err()
                .expect(text);
            assert!(e.message.contains(want), "{text:?}: {e}");
            assert_eq!(e.line, line, "{text:?}: {e}");
        }
    }
}

#[cfg(test)]
mod femiwiki {
    use super::*;

    #[test]
    fn femiwiki_caddyfile_reads() {
        let path = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/limits/caddy/femiwiki-caddy.Caddyfile"
        ));
        let c = CaddyConf::read(path, &|_| None).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = c.policy.zones().iter().map(|z| z.name()).collect();
        assert_eq!(names.len(), 9, "{names:?}");
        assert!(!names.contains(&"botlike_expensive"));
        let msgs: Vec<String> = c
            .notes
            .iter()
            .map(|n| format!("{}: {}", n.at, n.message))
            .collect();
        let all = msgs.join("\n");
        for want in [
            "zone botlike_expensive left out",
            "CEL is not evaluated",
            "mwcache runs before rate_limit",
            "uri @special_title query -oldid",
            "respond runs before rate_limit but its matcher cannot be evaluated",
            "REDACTED",
            "{$BLOCKED_CIDR} is not set",
        ] {
            assert!(all.contains(want), "missing {want:?} in\n{all}");
        }
        let _ = c.policy.describe();
    }
}
