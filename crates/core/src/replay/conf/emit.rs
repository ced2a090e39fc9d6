//! `--emit nginx`: candidates written as nginx configuration to paste inside
//! `http { … }`: `limit_req_zone` lines, the `map`/`geo` blocks that build keys and
//! exemptions (an empty key is not limited), and a `server` with one `location` per
//! rule carrying its `limit_req` lines. What nginx cannot say (a matcher on agents, a
//! first-match order nginx's location search would not keep, a non-nginx algorithm) is
//! written as a comment, never silently changed.

use std::fmt::Write as _;

use crate::escape;

use crate::replay::key::KeySpec;
use crate::replay::matcher::{Exempt, Matcher};
use crate::replay::nginx::NODELAY_MILLI;
use crate::replay::policy::{Dialect, Policy};
use crate::replay::spec::Algorithm;

/// What the replay did, for the comment at the top; one entry per candidate.
#[derive(Clone, Debug, Default)]
pub struct EmitSummary {
    /// What was replayed: input, selection, request count, period (one line each).
    pub replayed: Vec<String>,
    /// Per candidate, in order: what it would have done (one line each).
    pub outcomes: Vec<Vec<String>>,
}

/// The candidates as nginx configuration (see the module documentation).
pub fn emit_nginx(policies: &[&Policy], summary: &EmitSummary) -> String {
    let mut out = String::new();
    out.push_str("# Written by logscope replay --emit nginx. Paste inside http { ... }.\n");
    for l in &summary.replayed {
        let _ = writeln!(out, "# {}", escape::comment(l));
    }
    for (pi, p) in policies.iter().enumerate() {
        let suffix = if pi == 0 {
            String::new()
        } else {
            format!("_c{}", pi + 1)
        };
        out.push('\n');
        let _ = writeln!(out, "# ---- candidate {} ----", escape::comment(p.name()));
        if let Some(o) = summary.outcomes.get(pi) {
            for l in o {
                let _ = writeln!(out, "# {}", escape::comment(l));
            }
        }
        emit_one(&mut out, p, &suffix);
    }
    out
}

/// A double-quoted nginx string: `\` and `"` escaped.
fn quote(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '\\' | '"' => {
                o.push('\\');
                o.push(c);
            }
            c if c.is_control() => o.push('?'),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn ident(s: &str) -> String {
    let mut o: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    while o.contains("__") {
        o = o.replace("__", "_");
    }
    let o = o.trim_matches('_').to_string();
    if o.is_empty() { "z".into() } else { o }
}

/// `Nr/s` or `Nr/m` for a rate, and whether it is exact.
fn nginx_rate(count: u64, window_ms: u64) -> (String, bool) {
    let c = count as u128;
    let w = window_ms as u128;
    if (c * 1000).is_multiple_of(w) {
        return (format!("{}r/s", c * 1000 / w), true);
    }
    if (c * 60_000).is_multiple_of(w) {
        return (format!("{}r/m", c * 60_000 / w), true);
    }
    let per_min = ((c * 60_000 + w / 2) / w).max(1);
    (format!("{per_min}r/m"), false)
}

/// A key nginx cannot be given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unwritable {
    /// A network length other than /8, /16, /24 and /32.
    Prefix(u8),
    /// The status is known only after nginx decided.
    Status,
    /// A field whose name is not an nginx variable name.
    Field,
    /// An autonomous system.
    Asn,
}

impl std::fmt::Display for Unwritable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unwritable::Prefix(v4) => write!(
                f,
                "a /{v4} network key cannot be written in nginx (only /8, /16, /24)"
            ),
            Unwritable::Status => f.write_str(
                "a per-status key cannot be written: nginx decides before the status is known",
            ),
            Unwritable::Field => f.write_str(
                "a per-field key whose name is not an nginx variable name ([A-Za-z0-9_]) cannot be written",
            ),
            Unwritable::Asn => f.write_str(
                "a per-AS key needs nginx's third-party geoip2 module and an ASN database: not written",
            ),
        }
    }
}

fn key_var(out: &mut String, k: &KeySpec, zone: &str) -> Result<String, Unwritable> {
    Ok(match k {
        KeySpec::Site => quote("site"),
        KeySpec::Ip => "$binary_remote_addr".into(),
        KeySpec::Prefix { v4, .. } if matches!(v4, 8 | 16 | 24) => {
            let octets = (*v4 / 8) as usize;
            let re = vec!["[0-9]+"; octets].join("\\.");
            let var = format!("lsk_{zone}_net");
            let _ = writeln!(
                out,
                "# {zone}: per /{v4} network (IPv4; IPv6 clients are not limited by this zone)\nmap $remote_addr ${var} {{\n    {} $lsknet{v4};\n    default \"\";\n}}",
                quote(&format!("~^(?<lsknet{v4}>{re})(\\.[0-9]+)+$"))
            );
            format!("${var}")
        }
        KeySpec::Prefix { v4: 32, .. } => "$binary_remote_addr".into(),
        KeySpec::Prefix { v4, .. } => return Err(Unwritable::Prefix(*v4)),
        KeySpec::Agent => "$http_user_agent".into(),
        KeySpec::Host => "$host".into(),
        KeySpec::User => "$remote_user".into(),
        KeySpec::Method => "$request_method".into(),
        KeySpec::Path => "$uri".into(),
        KeySpec::Uri => "$request_uri".into(),
        KeySpec::Query => "$args".into(),
        KeySpec::Referer => "$http_referer".into(),
        KeySpec::Status => return Err(Unwritable::Status),
        // The variable the log format logged: `$http_x_api_key`, `$api_key`.
        KeySpec::Field(f) => f.nginx_variable().ok_or(Unwritable::Field)?,
        KeySpec::Asn(_) => return Err(Unwritable::Asn),
    })
}

/// Writes the variables that make `exempt` requests' key empty; returns the key var.
fn exempt_vars(out: &mut String, e: &Exempt, zone: &str, key: &str) -> String {
    let mut prev = "0".to_string();
    if !e.cidr.is_empty() {
        let v = format!("lsk_{zone}_ex_net");
        let _ = writeln!(out, "geo ${v} {{\n    default 0;");
        for n in &e.cidr {
            let _ = writeln!(out, "    {n} 1;");
        }
        out.push_str("}\n");
        prev = format!("${v}");
    }
    if let Some(re) = &e.ua_regex {
        let v = format!("lsk_{zone}_ex_ua");
        let (pat, ci) = split_caseless(re.as_str());
        let tilde = if ci { "~*" } else { "~" };
        let _ = writeln!(
            out,
            "map $http_user_agent ${v} {{\n    {} 1;\n    default {prev};\n}}",
            quote(&format!("{tilde}{pat}"))
        );
        prev = format!("${v}");
    }
    if !e.users.is_empty() || e.identified {
        let v = format!("lsk_{zone}_ex_user");
        let _ = writeln!(out, "map $remote_user ${v} {{");
        if e.identified {
            let _ = writeln!(out, "    \"\" {prev};\n    default 1;");
        } else {
            for u in &e.users {
                let _ = writeln!(out, "    {} 1;", quote(&String::from_utf8_lossy(u)));
            }
            let _ = writeln!(out, "    default {prev};");
        }
        out.push_str("}\n");
        prev = format!("${v}");
    }
    let v = format!("lsk_{zone}_key");
    let _ = writeln!(
        out,
        "map {prev} ${v} {{\n    1 \"\";\n    default {key};\n}}"
    );
    format!("${v}")
}

fn split_caseless(re: &str) -> (&str, bool) {
    match re.strip_prefix("(?i)") {
        Some(r) => (r, true),
        None => (re, false),
    }
}

enum LocSpec {
    Prefix(String),
    Exact(String),
    Regex(String, bool),
}

/// The locations a matcher is, if it is only paths.
fn locations(m: &Matcher) -> Option<Vec<LocSpec>> {
    let only_paths = Matcher {
        path_prefix: Vec::new(),
        path: Vec::new(),
        path_regex: None,
        ..m.clone()
    }
    .is_empty();
    if !only_paths {
        return None;
    }
    let set = [
        !m.path_prefix.is_empty(),
        !m.path.is_empty(),
        m.path_regex.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match set {
        0 => Some(vec![LocSpec::Prefix("/".into())]),
        1 if !m.path_prefix.is_empty() => Some(
            m.path_prefix
                .iter()
                .map(|p| LocSpec::Prefix(s(p)))
                .collect(),
        ),
        1 if !m.path.is_empty() => Some(m.path.iter().map(|p| LocSpec::Exact(s(p))).collect()),
        1 => {
            let (r, ci) = split_caseless(m.path_regex.as_ref().expect("set").as_str());
            Some(vec![LocSpec::Regex(r.to_string(), ci)])
        }
        _ => None,
    }
}

fn emit_one(out: &mut String, p: &Policy, suffix: &str) {
    if p.dialect() == Dialect::Caddy {
        out.push_str("# NOTE: a Caddy-dialect candidate (every matching rule applies); nginx applies only the location a request lands in, so decisions can differ.\n");
    }
    // Zone names, unique.
    let mut names: Vec<String> = Vec::new();
    for (zi, z) in p.zones().iter().enumerate() {
        // Short names: nginx's variable hash takes names up to about 50 bytes.
        let mut id = ident(z.name());
        if id.len() > 20 {
            id = format!("{}_{}", id[..16].trim_end_matches('_'), zi + 1);
        }
        let mut n = format!("{id}{suffix}");
        let base = n.clone();
        let mut k = 2;
        while names.contains(&n) {
            n = format!("{base}_{k}");
            k += 1;
        }
        names.push(n);
    }
    // Exemptions per zone: the policy's plus the rules' using it.
    let mut zone_ok = vec![true; p.zones().len()];
    for (zi, z) in p.zones().iter().enumerate() {
        let spec = z.spec();
        let name = &names[zi];
        let users: Vec<&crate::replay::policy::Rule> = p
            .rules()
            .iter()
            .filter(|r| r.limits.iter().any(|l| l.zone as usize == zi))
            .collect();
        let mut ex = p.exempt().clone();
        if let Some(first) = users.first() {
            let d = first.exempt.describe();
            if users.iter().any(|r| r.exempt.describe() != d) {
                let _ = writeln!(
                    out,
                    "# NOTE {name}: its rules exempt different requests; nginx keys a zone one way, so the exemptions of rule {} are used",
                    escape::comment(&first.name)
                );
            }
            ex.cidr.extend(first.exempt.cidr.iter().copied());
            ex.identified |= first.exempt.identified;
            ex.users.extend(first.exempt.users.iter().cloned());
            if ex.ua_regex.is_none() {
                ex.ua_regex = first.exempt.ua_regex.clone();
            }
        }
        let mut key = match key_var(out, &spec.key, name) {
            Ok(k) => k,
            Err(why) => {
                let _ = writeln!(out, "# NOTE zone {name} left out: {why}");
                zone_ok[zi] = false;
                continue;
            }
        };
        if let Some(f) = spec.key.field().filter(|f| f.header.is_none()) {
            let _ = writeln!(
                out,
                "# NOTE {name}: keyed on {key}, the variable the replayed log's field {} came from; nginx must have it (its own, or one set by map)",
                escape::comment(&f.name)
            );
        }
        if !ex.is_empty() {
            let _ = writeln!(
                out,
                "# {name}: not limited: {}",
                escape::comment(&ex.describe())
            );
            key = exempt_vars(out, &ex, name, &key);
        }
        let (rate, exact) = nginx_rate(spec.rate.count(), spec.rate.window_ms());
        if spec.algorithm != Algorithm::Nginx {
            let _ = writeln!(
                out,
                "# NOTE {name}: replayed as {}; nginx has only limit_req (a leaky bucket): rate {rate} with burst {} is the nearest",
                escape::comment(&spec.describe()),
                spec.burst()
            );
        } else if !exact {
            let _ = writeln!(
                out,
                "# NOTE {name}: rate {} rounded to {rate} (nginx takes whole r/s or r/m)",
                spec.rate
            );
        }
        let _ = writeln!(out, "limit_req_zone {key} zone={name}:10m rate={rate};");
    }
    // Locations, keeping first-match order where nginx's search would not.
    let mut seen: Vec<String> = Vec::new();
    let mut body = String::new();
    let mut earlier: Vec<&Matcher> = Vec::new();
    let mut catch_all = false;
    let rules = p.rules();
    for (ri, r) in rules.iter().enumerate() {
        let name = escape::comment(&r.name);
        if catch_all {
            let _ = writeln!(
                body,
                "    # rule {name}: unreachable (an earlier rule takes every request); left out"
            );
            continue;
        }
        let Some(locs) = locations(&r.matcher) else {
            let _ = writeln!(
                body,
                "    # rule {name} [{}]: not expressible as an nginx location; left out",
                escape::comment(&r.matcher.describe())
            );
            earlier.push(&r.matcher);
            continue;
        };
        catch_all |= r.matcher.is_empty();
        let later_regex = rules[ri + 1..]
            .iter()
            .any(|x| x.matcher.path_regex.is_some());
        let earlier_regex = earlier.iter().any(|m| m.path_regex.is_some());
        for l in locs {
            let (head, shadowed) = match &l {
                LocSpec::Prefix(pre) => {
                    let shadow = earlier
                        .iter()
                        .any(|m| m.path_prefix.iter().any(|q| pre.as_bytes().starts_with(q)));
                    let m = if later_regex && !earlier_regex && pre != "/" {
                        "^~ "
                    } else {
                        ""
                    };
                    if later_regex && earlier_regex {
                        let _ = writeln!(
                            body,
                            "    # NOTE {name}: regex rules before and after it: nginx tests regexes after prefixes, so the order may differ"
                        );
                    }
                    (format!("{m}{}", loc_arg(pre)), shadow)
                }
                LocSpec::Exact(e) => {
                    let shadow = earlier.iter().any(|m| {
                        m.path_prefix.iter().any(|q| e.as_bytes().starts_with(q))
                            || m.path_regex
                                .as_ref()
                                .is_some_and(|re| re.is_match(e.as_bytes()))
                            || m.path.iter().any(|x| x == e.as_bytes())
                    });
                    (format!("= {}", loc_arg(e)), shadow)
                }
                LocSpec::Regex(re, ci) => {
                    let t = if *ci { "~*" } else { "~" };
                    (format!("{t} {}", quote(re)), false)
                }
            };
            if shadowed {
                let _ = writeln!(
                    body,
                    "    # rule {name}: location {head} is shadowed by an earlier rule; left out"
                );
                continue;
            }
            if seen.contains(&head) {
                let _ = writeln!(
                    body,
                    "    # rule {name}: location {head} already written; left out"
                );
                continue;
            }
            seen.push(head.clone());
            let _ = writeln!(body, "    location {head} {{");
            if r.limits.is_empty() {
                let _ = writeln!(body, "        # not limited");
            }
            for lim in &r.limits {
                let zi = lim.zone as usize;
                if !zone_ok[zi] {
                    let _ = writeln!(body, "        # zone {} left out (see above)", names[zi]);
                    continue;
                }
                let zone = &p.zones()[zi];
                let (burst, delay) = if zone.is_nginx() {
                    let d = match lim.nginx.delay_milli {
                        NODELAY_MILLI => " nodelay".to_string(),
                        0 => String::new(),
                        d => format!(" delay={}", d / 1000),
                    };
                    (lim.nginx.burst_milli / 1000, d)
                } else {
                    (zone.spec().burst(), " nodelay".to_string())
                };
                let b = if burst > 0 {
                    format!(" burst={burst}")
                } else {
                    String::new()
                };
                let _ = writeln!(body, "        limit_req zone={}{b}{delay};", names[zi]);
            }
            body.push_str("    }\n");
        }
        earlier.push(&r.matcher);
    }
    // 429 with the Retry-After a static header can say (the longest of the zones').
    let retry = p
        .zones()
        .iter()
        .map(|z| z.spec().retry_hint_s())
        .max()
        .unwrap_or(1);
    let _ = write!(
        out,
        "server {{\n    listen 80;\n    server_name _;\n    limit_req_status 429;\n    error_page 429 @limited{suffix};\n"
    );
    out.push_str(&body);
    let _ = write!(
        out,
        "    location @limited{suffix} {{\n        add_header Retry-After {retry} always;\n        return 429;\n    }}\n}}\n"
    );
}

/// A location argument: bare when it has no specials, else quoted.
fn loc_arg(s: &str) -> String {
    if !s.is_empty()
        && s.chars().all(|c| {
            c.is_ascii_graphic() && !matches!(c, '"' | '\'' | ';' | '{' | '}' | '\\' | '#' | '$')
        })
    {
        s.to_string()
    } else {
        quote(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_quotes() {
        assert_eq!(nginx_rate(5, 1000), ("5r/s".into(), true));
        assert_eq!(nginx_rate(30, 60_000), ("30r/m".into(), true));
        assert_eq!(nginx_rate(1600, 600_000), ("160r/m".into(), true));
        assert!(!nginx_rate(1, 7_000).1);
        assert_eq!(quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(ident("per ip/24"), "per_ip_24");
        assert_eq!(escape::comment("a\nb"), "a?b");
    }
}
