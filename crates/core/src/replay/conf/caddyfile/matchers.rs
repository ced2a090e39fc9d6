//! Caddy's request matchers (`path`, `header`, `remote_ip`, …) as conditions.

use ipnet::IpNet;
use regex::bytes::Regex;

use super::super::syntax::ConfError;
use super::cond::{Cond, Leaf, and, not, or};
use super::lexer::Node;
use super::reader::Reader;

pub(super) struct Unsupported {
    pub(super) at: String,
    pub(super) message: String,
}

pub(super) type Named = Vec<(String, Node)>;

/// Translates a matcher set (the lines of a `match { }` / `@name { }` block, all must hold).
pub(super) fn matcher_set(
    lines: &[Node],
    r: &mut Reader,
) -> Result<Result<Cond, Unsupported>, ConfError> {
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
pub(super) fn path_cond(pats: &[&str]) -> Cond {
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

pub(super) fn header_glob(v: &str) -> String {
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

pub(super) fn regex_of(n: &Node, pat: &str) -> Result<Regex, ConfError> {
    Regex::new(pat).map_err(|e| n.err(format!("bad regular expression {pat:?}: {e}")))
}

pub(super) fn unsupported(
    n: &Node,
    message: impl Into<String>,
) -> Result<Result<Cond, Unsupported>, ConfError> {
    Ok(Err(Unsupported {
        at: n.at(),
        message: message.into(),
    }))
}

pub(super) fn one_matcher(
    n: &Node,
    r: &mut Reader,
) -> Result<Result<Cond, Unsupported>, ConfError> {
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
