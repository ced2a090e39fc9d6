//! A Caddyfile read into a candidate ([`CaddyConf`]): global options, sites, and the
//! zones' rules.

use std::path::Path;

use super::super::nginx::Note;
use super::super::syntax::ConfError;
use super::cond::{Cases, Cond, Leaf, MAX_TERMS, dnf, term_matcher};
use super::lexer::{Env, Node};
use super::matchers::Named;
use super::reader::{NOT_HANDLERS, ORDER, Reader};
use super::source::{load, read_text};
use super::walk::{body_has_rate_limit, collect_named, walk};
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
