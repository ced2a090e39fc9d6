//! `--emit caddy`: candidates written as a Caddyfile `rate_limit` handler
//! (mholt/caddy-ratelimit) to paste inside a site block: one `zone` per zone with its
//! `key` (placeholders, `ipv4_prefix`/`ipv6_prefix`), `events`, `window` and one `match`
//! block per rule that feeds it (exemptions and, for an nginx-dialect candidate, the
//! earlier rules written as `not` blocks). What Caddy cannot say (a per-status key, the
//! heavy class, a token bucket, request-time cost, nginx's all-or-nothing limits) is
//! written as a comment, never silently changed. `--caddyfile` reads the output back.

use std::fmt::Write as _;

use crate::escape;

use super::emit::EmitSummary;
use crate::replay::key::KeySpec;
use crate::replay::matcher::{Exempt, Matcher};
use crate::replay::policy::{Dialect, Policy};
use crate::replay::spec::{Algorithm, CostKind};

/// The candidates as a Caddyfile `rate_limit` handler each (see the module documentation).
pub fn emit_caddy(policies: &[&Policy], summary: &EmitSummary) -> String {
    let mut out = String::new();
    out.push_str("# Written by logscope replay --emit caddy. Paste inside a site block of a Caddy\n# built with github.com/mholt/caddy-ratelimit (xcaddy build --with github.com/mholt/caddy-ratelimit).\n# The plugin answers 429 with a Retry-After of its own (the wait its ring buffer computes).\n");
    for l in &summary.replayed {
        let _ = writeln!(out, "# {}", escape::comment(l));
    }
    if policies.len() > 1 {
        out.push_str("# NOTE: one rate_limit handler per candidate; pasting several applies them all, one after another.\n");
    }
    for (pi, p) in policies.iter().enumerate() {
        out.push('\n');
        let _ = writeln!(out, "# ---- candidate {} ----", escape::comment(p.name()));
        if let Some(o) = summary.outcomes.get(pi) {
            for l in o {
                let _ = writeln!(out, "# {}", escape::comment(l));
            }
        }
        emit_one(&mut out, p);
    }
    out
}

/// One Caddyfile token: bare when it can be, else quoted (backticks when it has `"`).
fn tok(s: &str) -> String {
    let bare = !s.is_empty()
        && !s.starts_with('#')
        && s != "{"
        && s != "}"
        && !s.contains("{$")
        && s.chars()
            .all(|c| !c.is_whitespace() && c != '"' && c != '`' && !c.is_control());
    if bare {
        return s.to_string();
    }
    let clean: String = s
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if clean.contains('"') && !clean.contains('`') {
        format!("`{clean}`")
    } else {
        format!("\"{}\"", clean.replace('"', "\\\""))
    }
}

fn ident(s: &str) -> String {
    let o: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let o = o.trim_matches('_').to_string();
    if o.is_empty() { "zone".into() } else { o }
}

/// A window in Caddy's duration syntax.
fn duration(ms: u64) -> String {
    if ms.is_multiple_of(3_600_000) {
        format!("{}h", ms / 3_600_000)
    } else if ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The matcher lines of `m` at `indent`; what Caddy cannot test goes to `notes`.
fn lines(m: &Matcher, indent: &str, out: &mut String, notes: &mut Vec<String>) {
    let list = |v: &[Vec<u8>], suffix: &str| -> String {
        v.iter()
            .map(|p| tok(&format!("{}{suffix}", text(p))))
            .collect::<Vec<_>>()
            .join(" ")
    };
    if !m.path_prefix.is_empty() {
        let _ = writeln!(out, "{indent}path {}", list(&m.path_prefix, "*"));
        notes.push(
            "Caddy's path matcher ignores case; the replay compared prefixes case by case".into(),
        );
    }
    if !m.path.is_empty() {
        let _ = writeln!(out, "{indent}path {}", list(&m.path, ""));
    }
    if let Some(re) = &m.path_regex {
        let _ = writeln!(out, "{indent}path_regexp {}", tok(re.as_str()));
    }
    if let Some(re) = &m.query_regex {
        let _ = writeln!(out, "{indent}vars_regexp {{query}} {}", tok(re.as_str()));
    }
    if !m.method.is_empty() {
        let _ = writeln!(out, "{indent}method {}", list(&m.method, ""));
    }
    if !m.host.is_empty() {
        let _ = writeln!(out, "{indent}host {}", list(&m.host, ""));
    }
    if let Some(re) = &m.ua_regex {
        let _ = writeln!(out, "{indent}header_regexp User-Agent {}", tok(re.as_str()));
    }
    if let Some(re) = &m.referer_regex {
        let _ = writeln!(out, "{indent}header_regexp Referer {}", tok(re.as_str()));
    }
    if let Some(b) = m.has_referer {
        let _ = writeln!(
            out,
            "{indent}{}header Referer *",
            if b { "" } else { "not " }
        );
    }
    if let Some(b) = m.has_cookie {
        let _ = writeln!(
            out,
            "{indent}{}header Cookie *",
            if b { "" } else { "not " }
        );
    }
    if let Some(b) = m.anonymous {
        // Known anonymous = no Cookie header and not identified (logscope's identity,
        // where the log records cookies); the second line is implied in Caddy and says
        // "not identified" to a reader of this file.
        if b {
            let _ = writeln!(out, "{indent}not header Cookie *");
            if m.identified.is_none() {
                let _ = writeln!(out, "{indent}not header Cookie *session*");
                notes.push("anonymous clients: no Cookie header (logscope's identity); a client logged in by HTTP auth without a cookie is limited too".into());
            }
        } else {
            let _ = writeln!(out, "{indent}header Cookie *");
        }
    }
    if !m.user.is_empty() {
        let _ = writeln!(
            out,
            "{indent}vars {{http.auth.user.id}} {}",
            list(&m.user, "")
        );
        notes.push("user tiers match {http.auth.user.id}: put the rate_limit after the authentication that sets it (basic_auth, forward_auth with copy_headers)".into());
    }
    if let Some(re) = &m.user_regex {
        let _ = writeln!(
            out,
            "{indent}vars_regexp {{http.auth.user.id}} {}",
            tok(re.as_str())
        );
    }
    if let Some(b) = m.identified {
        let _ = writeln!(
            out,
            "{indent}{}header Cookie *session*",
            if b { "" } else { "not " }
        );
        notes.push("identified clients: logscope's identity; write your session cookie's name for `session` (Caddy logs cookie values as REDACTED)".into());
    }
    if !m.cidr.is_empty() {
        let n: Vec<String> = m.cidr.iter().map(|c| c.to_string()).collect();
        let _ = writeln!(out, "{indent}client_ip {}", n.join(" "));
    }
    if !m.status.is_empty() {
        notes.push(
            "a status condition cannot be written: Caddy decides before the response; left out"
                .into(),
        );
    }
    if m.heavy.is_some() {
        notes.push("the heavy class is logscope's classifier (MediaWiki search, diff, history…); left out: write it as path/vars_regexp matchers".into());
    }
    for n in &m.not {
        let _ = writeln!(out, "{indent}not {{");
        lines(n, &format!("{indent}\t"), out, notes);
        let _ = writeln!(out, "{indent}}}");
    }
}

/// An exemption as matcher lines (`not` blocks).
fn exempt_lines(e: &Exempt, indent: &str, out: &mut String, notes: &mut Vec<String>) {
    if !e.cidr.is_empty() {
        let n: Vec<String> = e.cidr.iter().map(|c| c.to_string()).collect();
        let _ = writeln!(out, "{indent}not client_ip {}", n.join(" "));
    }
    if let Some(re) = &e.ua_regex {
        let _ = writeln!(
            out,
            "{indent}not header_regexp User-Agent {}",
            tok(re.as_str())
        );
    }
    if e.identified {
        let _ = writeln!(out, "{indent}not header Cookie *session*");
        notes.push(
            "identified clients exempt: write your session cookie's name for `session`".into(),
        );
    }
    if !e.users.is_empty() {
        notes.push("exempt users cannot be matched before authentication runs; left out".into());
    }
}

/// A key Caddy cannot be given (the text of the NOTE that leaves its zone out).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Inexpressible {
    /// A per-status key: Caddy decides before the status is known.
    StatusKey,
    /// A field of the log that is not a request header: its name.
    FieldKey(String),
    /// A key per autonomous system.
    Asn,
}

impl std::fmt::Display for Inexpressible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Inexpressible::StatusKey => f.write_str(
                "a per-status key cannot be written: Caddy decides before the status is known",
            ),
            Inexpressible::FieldKey(name) => write!(
                f,
                "a key on field {name} cannot be written: Caddy has a placeholder for a request header, and this field is not one (a field named http_NAME, or an Apache %{{NAME}}i, is the header NAME)"
            ),
            Inexpressible::Asn => f.write_str(
                "a per-AS key cannot be written: Caddy has no placeholder for the client's autonomous system",
            ),
        }
    }
}

/// Whether a header name can stand in a placeholder as it is.
fn is_token(h: &str) -> bool {
    !h.is_empty()
        && h.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
}

fn key_lines(k: &KeySpec, zone: &str) -> Result<Vec<String>, Inexpressible> {
    Ok(match k {
        KeySpec::Site => vec![format!("key {}", tok(zone))],
        KeySpec::Ip => vec!["key {client_ip}".into()],
        KeySpec::Prefix { v4, v6 } => {
            let mut v = vec!["key {client_ip}".to_string()];
            if *v4 < 32 {
                v.push(format!("ipv4_prefix {v4}"));
            }
            if *v6 < 128 {
                v.push(format!("ipv6_prefix {v6}"));
            }
            v
        }
        KeySpec::Agent => vec!["key {http.request.header.User-Agent}".into()],
        KeySpec::Referer => vec!["key {http.request.header.Referer}".into()],
        KeySpec::Host => vec!["key {host}".into()],
        KeySpec::User => vec!["key {http.auth.user.id}".into()],
        KeySpec::Method => vec!["key {method}".into()],
        KeySpec::Path => vec!["key {path}".into()],
        KeySpec::Uri => vec!["key {uri}".into()],
        KeySpec::Query => vec!["key {query}".into()],
        KeySpec::Status => return Err(Inexpressible::StatusKey),
        KeySpec::Field(f) => match &f.header {
            Some(h) if is_token(h) => vec![format!("key {{http.request.header.{h}}}")],
            _ => return Err(Inexpressible::FieldKey(escape::comment(&f.name))),
        },
        KeySpec::Asn(_) => return Err(Inexpressible::Asn),
    })
}

fn emit_one(out: &mut String, p: &Policy) {
    if p.program().is_some() {
        out.push_str("# NOTE: a haproxy.cfg candidate (track-sc and deny rules) cannot be written as Caddy zones; left out.\n");
        return;
    }
    if p.dialect() == Dialect::Nginx && p.rules().len() > 1 {
        out.push_str("# NOTE: an nginx-dialect candidate: only the first matching rule applied, so each match block excludes the earlier rules (`not`); nginx's all-or-nothing charging of several limits is not Caddy's (a zone that admits keeps its slot).\n");
    }
    let mut names: Vec<String> = Vec::new();
    for z in p.zones() {
        let base = ident(z.name());
        let mut n = base.clone();
        let mut k = 2;
        while names.contains(&n) {
            n = format!("{base}_{k}");
            k += 1;
        }
        names.push(n);
    }
    out.push_str("rate_limit {\n");
    let rules = p.rules();
    for (zi, z) in p.zones().iter().enumerate() {
        let spec = z.spec();
        let name = &names[zi];
        let users: Vec<usize> = rules
            .iter()
            .enumerate()
            .filter(|(_, r)| r.limits.iter().any(|l| l.zone as usize == zi))
            .map(|(i, _)| i)
            .collect();
        if users.is_empty() {
            let _ = writeln!(
                out,
                "\t# zone {name}: no rule sends requests to it; left out"
            );
            continue;
        }
        let keys = match key_lines(&spec.key, name) {
            Ok(k) => k,
            Err(why) => {
                let _ = writeln!(out, "\t# NOTE zone {name} left out: {why}");
                continue;
            }
        };
        let mut notes: Vec<String> = Vec::new();
        if spec.algorithm != Algorithm::Caddy {
            notes.push(format!(
                "replayed as {}; Caddy's rate_limit is a sliding log (at most `events` admitted in any `window`): the nearest is written",
                spec.describe()
            ));
        }
        if spec.cost != CostKind::Requests {
            notes.push("Caddy counts requests; the replay weighed them by cost".into());
        }
        if matches!(
            spec.key,
            KeySpec::Agent
                | KeySpec::Referer
                | KeySpec::User
                | KeySpec::Query
                | KeySpec::Host
                | KeySpec::Field(_)
        ) {
            notes.push("Caddy puts requests without the key's field in one shared bucket; the replay did not limit them".into());
        }
        let mut body = String::new();
        for &ri in &users {
            let r = &rules[ri];
            let mut block = String::new();
            lines(&r.matcher, "\t\t\t", &mut block, &mut notes);
            exempt_lines(&r.exempt, "\t\t\t", &mut block, &mut notes);
            exempt_lines(p.exempt(), "\t\t\t", &mut block, &mut notes);
            if p.dialect() == Dialect::Nginx {
                for e in &rules[..ri] {
                    block.push_str("\t\t\tnot {\n");
                    lines(&e.matcher, "\t\t\t\t", &mut block, &mut notes);
                    block.push_str("\t\t\t}\n");
                }
            }
            if block.is_empty() && users.len() == 1 {
                continue;
            }
            if block.is_empty() {
                block.push_str("\t\t\tpath *\n");
            }
            let _ = write!(body, "\t\tmatch {{\n{block}\t\t}}\n");
        }
        notes.dedup();
        let mut seen: Vec<&String> = Vec::new();
        for n in &notes {
            if !seen.contains(&n) {
                let _ = writeln!(out, "\t# NOTE {name}: {}", escape::comment(n));
                seen.push(n);
            }
        }
        let _ = writeln!(out, "\tzone {name} {{");
        out.push_str(&body);
        for k in keys {
            let _ = writeln!(out, "\t\t{k}");
        }
        let _ = writeln!(out, "\t\tevents {}", spec.rate.count());
        let _ = writeln!(out, "\t\twindow {}", duration(spec.rate.window_ms()));
        out.push_str("\t}\n");
    }
    out.push_str("}\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_durations() {
        assert_eq!(tok("(^|&)search="), "(^|&)search=");
        assert_eq!(tok("a b"), "\"a b\"");
        assert_eq!(tok("say \"x\""), "`say \"x\"`");
        assert_eq!(tok("#x"), "\"#x\"");
        assert_eq!(duration(600_000), "10m");
        assert_eq!(duration(3_600_000), "1h");
        assert_eq!(duration(1500), "1500ms");
        assert_eq!(ident("per ip/24"), "per_ip_24");
    }
}
