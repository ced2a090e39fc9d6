//! A site's handlers walked in Caddy's order: rewrites, `handle` groups, routes and the
//! terminal handlers before each `rate_limit`.

use super::super::nginx::Note;
use super::super::syntax::ConfError;
use super::cond::{Cases, Cond, and, at_path, not, now, or};
use super::lexer::Node;
use super::matchers::{Named, Unsupported, matcher_set, path_cond};
use super::reader::{NEUTRAL, NOT_HANDLERS, Reader, TERMINAL};
use super::zone::rate_limit;

/// The matcher token of a handler directive: `*`, `/path…`, `@name`; `None` if absent.
pub(super) fn matcher_token(
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

pub(super) fn named_cond(
    def: &Node,
    r: &mut Reader,
) -> Result<Result<Cond, Unsupported>, ConfError> {
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

pub(super) fn collect_named(nodes: &[Node], out: &mut Named) {
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
pub(super) fn sorted<'a>(nodes: &'a [Node], r: &Reader) -> Vec<&'a Node> {
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
pub(super) fn walk(
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

pub(super) fn body_has_rate_limit(n: &Node) -> bool {
    n.block.as_ref().is_some_and(|b| {
        b.iter()
            .any(|c| c.name.text == "rate_limit" || body_has_rate_limit(c))
    })
}

/// One group of mutually exclusive `rewrite`s: the first that matches applies.
pub(super) fn rewrite_group(
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
