//! A Caddyfile as read: its files, `(snippets)` and `import`s expanded within a budget.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use regex::bytes::Regex;

use super::super::syntax::ConfError;
use super::lexer::{Env, EnvUse, Node, Tok, lex, parse_nodes, substitute_env};
use crate::conf_file::{self, Budget, BudgetError, CONFIG_CAP};

/// Reads a Caddyfile or an imported file (a regular file of at most
/// [`conf_file::CONFIG_CAP`]); `at` is the `import` naming it.
pub(super) fn read_text(path: &Path, at: Option<(&Path, u32)>) -> Result<String, ConfError> {
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

/// Parses `text` (env substituted) into nodes with snippets and imports expanded.
pub(super) struct Source {
    pub(super) nodes: Vec<Node>,
    pub(super) env: Vec<(PathBuf, EnvUse)>,
}

pub(super) fn parse_source(
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

pub(super) fn load(path: &Path, text: &str, env: Env<'_>) -> Result<Source, ConfError> {
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
        message: m.to_string(),
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
pub(super) fn size_of(nodes: &[Node]) -> (u64, u64) {
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
pub(super) fn expand(
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
            budget.spend(1, 0).map_err(|m| n.err(m.to_string()))?;
            let args: Vec<String> = n.args[1..].iter().map(|a| a.text.clone()).collect();
            let body = if let Some((_, b)) = snippets.iter().find(|(s, _)| *s == target.text) {
                let (count, bytes) = size_of(b);
                budget
                    .spend(count, bytes)
                    .map_err(|m| n.err(m.to_string()))?;
                b.clone()
            } else {
                let base = n.file.parent().map(Path::to_path_buf).unwrap_or_default();
                let pat = base.join(&target.text);
                let mut paths: Vec<PathBuf> = if target.text.contains('*') {
                    budget.load(0).map_err(|m| n.err(m.to_string()))?;
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
                    budget.load(0).map_err(|m| n.err(m.to_string()))?;
                    let text = read_text(&p, Some((n.file.as_path(), n.name.line)))?;
                    budget
                        .spend(0, text.len() as u64)
                        .map_err(|m| n.err(m.to_string()))?;
                    let nodes = parse_source(&text, &p, env, depth + 1, uses)?;
                    let (count, bytes) = size_of(&nodes);
                    budget
                        .spend(count, bytes)
                        .map_err(|m| n.err(m.to_string()))?;
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
                    .map_err(|m| n.err(m.to_string()))?
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
pub(super) fn with_args(
    mut n: Node,
    args: &[String],
    budget: &mut Budget,
) -> Result<Node, BudgetError> {
    let mut sub = |t: &mut Tok| -> Result<(), BudgetError> {
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
pub(super) fn glob_files(pat: &Path) -> Vec<PathBuf> {
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

pub(super) fn glob_regex(g: &str, caseless: bool) -> Regex {
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
