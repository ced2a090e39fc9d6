//! `--emit haproxy`: candidates written as HAProxy configuration to paste into
//! haproxy.cfg: per candidate a `frontend` whose `http-request track-scN` / `deny` rules
//! carry the limits (scopes and exemptions as named ACLs, first-match order as negated
//! ACLs of the earlier rules), and one `backend` per zone holding its `stick-table`.
//! `algo=haproxy` zones and haproxy.cfg candidates are written exactly (read back with
//! `--haproxy-cfg` they decide the same); other algorithms get the nearest
//! `http_req_rate` rule with a NOTE saying so; what HAProxy cannot say (a per-user key,
//! logscope's heavy class, a cost other than requests) is a NOTE and left out, never
//! silently changed. Every value from a config or a log is quoted or turned into an
//! escaped regex, so no value can start a directive or a comment.

use std::fmt::Write as _;

use crate::escape;

use super::emit::EmitSummary;
use crate::replay::key::KeySpec;
use crate::replay::matcher::{Exempt, Matcher};
use crate::replay::policy::{Dialect, Policy};
use crate::replay::spec::{Algorithm, CostKind};
use crate::replay::zone::Zone;
use crate::replay::{Action, Cond, Program, Test, TrackKey};

/// HAProxy 2.6 tracks at most three sticky counters (sc0–sc2) per stream.
const SLOTS: usize = 3;
/// The placeholder backend every emitted frontend sends to.
const APP: &str = "app";
/// Most alternatives (`||`) one condition may have before a rule is left out.
const MAX_ALTERNATIVES: usize = 16;

/// The candidates as HAProxy configuration (see the module documentation).
pub fn emit_haproxy(policies: &[&Policy], summary: &EmitSummary) -> String {
    let mut out = String::new();
    out.push_str(
        "# Written by logscope replay --emit haproxy (HAProxy 2.6 or later). Paste into haproxy.cfg.\n\
         # ADJUST before use: each frontend's `bind` address, its `default_backend` (`app` is a\n\
         # placeholder for your servers' backend), and the stick tables' `size` (entries held).\n",
    );
    for l in &summary.replayed {
        let _ = writeln!(out, "# {}", escape::comment(l));
    }
    let mut taken: Vec<String> = vec![APP.to_string()];
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
        let port = 8080 + 100 * pi;
        match p.program() {
            Some(prog) => emit_program(&mut out, p, prog, &suffix, port, &mut taken),
            None => emit_rules(&mut out, p, &suffix, port, &mut taken),
        }
    }
    out
}

/// One word of haproxy.cfg: bare when it has no specials, else in single quotes (no
/// escapes and no `${VAR}` expansion inside them; a `'` is written `'\''`). The text
/// must hold no control character (see [`literal_regex`]).
fn word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-~:%+=@".contains(c))
    {
        return s.to_string();
    }
    let mut o = String::with_capacity(s.len() + 2);
    o.push('\'');
    for c in s.chars() {
        if c == '\'' {
            o.push_str("'\\''");
        } else {
            o.push(c);
        }
    }
    o.push('\'');
    o
}

/// A section (proxy) name: letters, digits, `-`, `_`, `.`, `:` only.
fn ident(s: &str) -> String {
    let mut o: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.:".contains(c) {
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
    if o.is_empty() {
        "z".into()
    } else if o.len() > 40 {
        o[..40].trim_end_matches('_').to_string()
    } else {
        o
    }
}

/// A name not yet in `taken` (`name`, `name_2`, …), recorded there.
fn unique(name: String, taken: &mut Vec<String>) -> String {
    let mut n = name.clone();
    let mut k = 2;
    while taken.contains(&n) {
        n = format!("{name}_{k}");
        k += 1;
    }
    taken.push(n.clone());
    n
}

/// An HAProxy time: `10s` or `1500ms`.
fn time(ms: u64) -> String {
    if ms > 0 && ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// Whether text can be written as a quoted word as it is.
fn plain(s: &str) -> bool {
    !s.chars().any(char::is_control)
}

/// A regex with control characters written as `\x{HH}` (same meaning for Rust's regex
/// and PCRE2), so that it fits on one config line.
fn regex_text(re: &str) -> String {
    let mut o = String::with_capacity(re.len());
    for c in re.chars() {
        if c.is_control() {
            let _ = write!(o, "\\x{{{:02X}}}", c as u32);
        } else {
            o.push(c);
        }
    }
    o
}

/// A regex matching exactly `s` (escaped), for values that hold control characters.
fn literal_regex(s: &str) -> String {
    regex_text(&regex::escape(s))
}

/// Why a part of a candidate is not written as HAProxy configuration (the text of a
/// NOTE that leaves it out).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Inexpressible {
    /// A value that is not UTF-8 (shown lossily).
    NotUtf8(String),
    /// A value with a control character: what it is and the value.
    ControlCharacter { what: &'static str, value: String },
    /// A matcher on the status.
    StatusMatcher,
    /// logscope's heavy class.
    HeavyClass,
    /// logscope's identity class.
    IdentityClass,
    /// A `not` inside a `not`.
    NestedNot,
    /// A key per user.
    UserKey,
    /// A condition on the user name (a tier list).
    UserMatcher,
    /// A key per status.
    StatusKey,
    /// A key on a field of the log that is not a request header: its name.
    FieldKey(String),
    /// A key per autonomous system.
    AsnKey,
    /// A cost other than requests: its unit and its name.
    Cost {
        unit: &'static str,
        name: &'static str,
    },
    /// A window longer than HAProxy's 32-bit periods.
    LongWindow,
    /// A test of several conditions (the matcher, described).
    SeveralConditions(String),
}

impl std::fmt::Display for Inexpressible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Inexpressible::NotUtf8(v) => write!(f, "the value {v:?} is not UTF-8"),
            Inexpressible::ControlCharacter { what, value } => {
                write!(f, "the {what} {value:?} holds a control character")
            }
            Inexpressible::StatusMatcher => {
                f.write_str("a status matcher: HAProxy decides before the response exists")
            }
            Inexpressible::HeavyClass => f.write_str(
                "logscope's heavy class (its rules are not an HAProxy ACL; write your own for the heavy paths)",
            ),
            Inexpressible::IdentityClass => f.write_str(
                "identified/anonymous clients (logscope's identity class is not an HAProxy ACL; write your own, e.g. on a session cookie)",
            ),
            Inexpressible::NestedNot => f.write_str("a `not` inside a `not`"),
            Inexpressible::UserMatcher => f.write_str(
                "a user-name condition: HAProxy does not see logscope's user (write your own ACL, e.g. on http_auth_group or a header your auth layer sets)",
            ),
            Inexpressible::UserKey => f.write_str(
                "a per-user key: HAProxy does not see logscope's user (write your own key, e.g. req.hdr(authorization))",
            ),
            Inexpressible::StatusKey => {
                f.write_str("a per-status key: HAProxy decides before the status is known")
            }
            Inexpressible::FieldKey(name) => write!(
                f,
                "a key on field {name}: HAProxy fetches request headers, and this field is not one (a field named http_NAME, or an Apache %{{NAME}}i, is the header NAME)"
            ),
            Inexpressible::AsnKey => f.write_str(
                "a per-AS key: HAProxy would need a map of every prefix to its AS (src,map_ip(FILE)); not written",
            ),
            Inexpressible::Cost { unit, name } => write!(
                f,
                "it counts {unit} (cost={name}); HAProxy's http_req_rate counts requests"
            ),
            Inexpressible::LongWindow => {
                f.write_str("a window longer than 49 days (HAProxy periods are 32-bit ms)")
            }
            Inexpressible::SeveralConditions(m) => {
                write!(f, "a test of several conditions ({m})")
            }
        }
    }
}

impl std::error::Error for Inexpressible {}

fn utf8(b: &[u8]) -> Result<&str, Inexpressible> {
    std::str::from_utf8(b)
        .map_err(|_| Inexpressible::NotUtf8(String::from_utf8_lossy(b).into_owned()))
}

/// `-i` and the regex without its leading `(?i)`.
fn caseless(re: &str) -> (&'static str, &str) {
    match re.strip_prefix("(?i)") {
        Some(r) => (" -i", r),
        None => ("", re),
    }
}

/// An ACL criterion line: `fetch [flags] [--] values…` (`--` when a value starts with `-`).
fn criterion(fetch_flags: &str, values: &[String]) -> String {
    let mut s = fetch_flags.to_string();
    if values.iter().any(|v| v.starts_with('-')) {
        s.push_str(" --");
    }
    for v in values {
        s.push(' ');
        s.push_str(&word(v));
    }
    s
}

/// A regex criterion: `fetch -m reg [-i] PATTERN` (or `path_reg`).
fn regex_criterion(fetch: &str, re: &str) -> String {
    let (i, r) = caseless(re);
    let r = regex_text(r);
    if fetch == "path" {
        criterion(&format!("path_reg{i}"), &[r])
    } else {
        criterion(&format!("{fetch} -m reg{i}"), &[r])
    }
}

/// A list of literal values (path, prefix) as a criterion: as is when every value is
/// plain text, else as one anchored regex.
fn list_criterion(fetch: &str, vals: &[Vec<u8>], exact: bool) -> Result<String, Inexpressible> {
    let mut text = Vec::with_capacity(vals.len());
    for v in vals {
        text.push(utf8(v)?.to_string());
    }
    if text.iter().all(|t| plain(t)) {
        return Ok(criterion(fetch, &text));
    }
    let alt: Vec<String> = text.iter().map(|t| literal_regex(t)).collect();
    let end = if exact { "$" } else { "" };
    Ok(criterion(
        "path_reg",
        &[format!("^(?:{}){end}", alt.join("|"))],
    ))
}

/// One literal of a condition: (negated, ACL name).
type Lit = (bool, String);
/// Alternatives (`||`) of literals that must all hold. `[]` = never, `[[]]` = always.
type Dnf = Vec<Vec<Lit>>;

fn product(a: &Dnf, b: &Dnf) -> Dnf {
    let mut out = Vec::with_capacity(a.len() * b.len());
    for x in a {
        for y in b {
            let mut v = x.clone();
            for l in y {
                if !v.contains(l) {
                    v.push(l.clone());
                }
            }
            // `A !A` never holds.
            if !v.iter().any(|(n, name)| v.contains(&(!n, name.clone()))) {
                out.push(v);
            }
        }
    }
    out
}

/// The frontend being written: its named ACLs and its rules.
#[derive(Default)]
struct Fe {
    acls: Vec<(String, String)>,
    next: usize,
    lines: Vec<String>,
}

impl Fe {
    /// The name of an ACL with these criterion lines (OR-ed), declared once.
    fn acl(&mut self, hint: &str, lines: &[String]) -> String {
        let joined = lines.join("\n");
        let mut have: Vec<(String, String)> = Vec::new();
        for (n, c) in &self.acls {
            match have.iter_mut().find(|(h, _)| h == n) {
                Some((_, t)) => {
                    t.push('\n');
                    t.push_str(c);
                }
                None => have.push((n.clone(), c.clone())),
            }
        }
        if let Some((n, _)) = have.iter().find(|(_, t)| *t == joined) {
            return n.clone();
        }
        self.next += 1;
        let name = format!("{hint}_{}", self.next);
        for l in lines {
            self.acls.push((name.clone(), l.clone()));
        }
        name
    }

    fn note(&mut self, s: impl AsRef<str>) {
        self.lines
            .push(format!("    # NOTE: {}", escape::comment(s.as_ref())));
    }

    fn write(&self, out: &mut String, name: &str, port: usize) {
        let _ = writeln!(out, "frontend {name}");
        let _ = writeln!(
            out,
            "    bind 127.0.0.1:{port}    # ADJUST: the address and port you serve on"
        );
        out.push_str("    mode http\n");
        for (n, c) in &self.acls {
            let _ = writeln!(out, "    acl {n} {c}");
        }
        for l in &self.lines {
            out.push_str(l);
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "    default_backend {APP}    # ADJUST: your servers' backend"
        );
    }
}

/// `if A !B || C` (empty for "always"); `extra` is appended to every alternative.
fn condition(d: &Dnf, extra: &str) -> String {
    if d.iter().all(Vec::is_empty) && extra.is_empty() {
        return String::new();
    }
    let alts: Vec<String> = d
        .iter()
        .map(|alt| {
            let mut t: Vec<String> = alt
                .iter()
                .map(|(neg, n)| format!("{}{n}", if *neg { "!" } else { "" }))
                .collect();
            if !extra.is_empty() {
                t.push(extra.to_string());
            }
            t.join(" ")
        })
        .collect();
    format!(" if {}", alts.join(" || "))
}

/// The criteria of a matcher's own conditions (AND-ed): each one ACL line with its name
/// hint, negated or not; `Err` when HAProxy cannot test one of them.
fn criteria(m: &Matcher) -> Result<Vec<(bool, &'static str, String)>, Inexpressible> {
    let mut out = Vec::new();
    if !m.path_prefix.is_empty() {
        out.push((
            false,
            "path",
            list_criterion("path_beg", &m.path_prefix, false)?,
        ));
    }
    if !m.path.is_empty() {
        out.push((false, "path", list_criterion("path", &m.path, true)?));
    }
    if let Some(re) = &m.path_regex {
        out.push((false, "path", regex_criterion("path", re.as_str())));
    }
    if let Some(re) = &m.query_regex {
        out.push((false, "query", regex_criterion("query", re.as_str())));
    }
    let texts = |what: &'static str, v: &[Vec<u8>]| -> Result<Vec<String>, Inexpressible> {
        let mut o = Vec::new();
        for x in v {
            let t = utf8(x)?;
            if !plain(t) {
                return Err(Inexpressible::ControlCharacter {
                    what,
                    value: t.to_string(),
                });
            }
            o.push(t.to_string());
        }
        Ok(o)
    };
    if !m.method.is_empty() {
        out.push((
            false,
            "method",
            criterion("method -i", &texts("method", &m.method)?),
        ));
    }
    if !m.status.is_empty() {
        return Err(Inexpressible::StatusMatcher);
    }
    if !m.host.is_empty() {
        out.push((
            false,
            "host",
            criterion("req.hdr(host) -i", &texts("host", &m.host)?),
        ));
    }
    if let Some(re) = &m.ua_regex {
        out.push((
            false,
            "agent",
            regex_criterion("req.fhdr(user-agent)", re.as_str()),
        ));
    }
    if let Some(re) = &m.referer_regex {
        out.push((
            false,
            "referer",
            regex_criterion("req.fhdr(referer)", re.as_str()),
        ));
    }
    if let Some(b) = m.has_referer {
        out.push((!b, "referer", "req.fhdr(referer) -m len 1:".to_string()));
    }
    if let Some(b) = m.has_cookie {
        out.push((!b, "cookie", "req.hdr(cookie) -m found".to_string()));
    }
    if m.heavy.is_some() {
        return Err(Inexpressible::HeavyClass);
    }
    if m.identified.is_some() {
        return Err(Inexpressible::IdentityClass);
    }
    if !m.user.is_empty() || m.user_regex.is_some() {
        return Err(Inexpressible::UserMatcher);
    }
    if let Some(b) = m.anonymous {
        // Known anonymous = no Cookie header (logscope's identity, where the log records it).
        out.push((b, "cookie", "req.hdr(cookie) -m found".to_string()));
    }
    if !m.cidr.is_empty() {
        let v: Vec<String> = m.cidr.iter().map(|n| n.to_string()).collect();
        out.push((false, "src", criterion("src", &v)));
    }
    Ok(out)
}

/// Requests `m` matches, as a condition.
fn matches(fe: &mut Fe, m: &Matcher) -> Result<Dnf, Inexpressible> {
    let own: Vec<Lit> = criteria(m)?
        .into_iter()
        .map(|(neg, h, c)| (neg, fe.acl(h, &[c])))
        .collect();
    let mut d: Dnf = vec![own];
    for n in &m.not {
        if !n.not.is_empty() {
            return Err(Inexpressible::NestedNot);
        }
        let sub = criteria(n)?;
        if sub.is_empty() {
            return Ok(Vec::new());
        }
        let neg: Dnf = sub
            .into_iter()
            .map(|(neg, h, c)| vec![(!neg, fe.acl(h, &[c]))])
            .collect();
        d = product(&d, &neg);
    }
    Ok(d)
}

/// Requests `m` does not match, as a condition.
fn not_matches(fe: &mut Fe, m: &Matcher) -> Result<Dnf, Inexpressible> {
    let mut d: Dnf = Vec::new();
    for (neg, h, c) in criteria(m)? {
        d.push(vec![(!neg, fe.acl(h, &[c]))]);
    }
    for n in &m.not {
        if !n.not.is_empty() {
            return Err(Inexpressible::NestedNot);
        }
        let sub: Vec<Lit> = criteria(n)?
            .into_iter()
            .map(|(neg, h, c)| (neg, fe.acl(h, &[c])))
            .collect();
        d.push(sub);
    }
    Ok(d)
}

/// Requests `e` does not exempt, as a condition; the parts HAProxy cannot test are
/// returned as words for a NOTE.
fn not_exempt(fe: &mut Fe, e: &Exempt) -> (Vec<Lit>, Vec<String>) {
    let mut lits = Vec::new();
    let mut left = Vec::new();
    if !e.cidr.is_empty() {
        let v: Vec<String> = e.cidr.iter().map(|n| n.to_string()).collect();
        lits.push((true, fe.acl("exempt_src", &[criterion("src", &v)])));
    }
    if let Some(re) = &e.ua_regex {
        let c = regex_criterion("req.fhdr(user-agent)", re.as_str());
        lits.push((true, fe.acl("exempt_agent", &[c])));
    }
    if e.identified {
        left.push("identified clients".to_string());
    }
    if !e.users.is_empty() {
        let u: Vec<String> = e
            .users
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect();
        left.push(format!("users {}", u.join(", ")));
    }
    (lits, left)
}

/// What a stick table is keyed by: `(type, key expression)`.
fn key_expr(k: &KeySpec) -> Result<(&'static str, String), Inexpressible> {
    Ok(match k {
        KeySpec::Site => ("string len 32", "str(site)".into()),
        KeySpec::Ip => ("ipv6", "src".into()),
        KeySpec::Prefix { v4, v6 } => ("ipv6", format!("src,ipmask({v4},{v6})")),
        KeySpec::Agent => ("string len 200", "req.fhdr(user-agent)".into()),
        KeySpec::Referer => ("string len 200", "req.fhdr(referer)".into()),
        KeySpec::Host => ("string len 64", "req.hdr(host)".into()),
        KeySpec::Method => ("string len 16", "method".into()),
        KeySpec::Path => ("string len 200", "path".into()),
        KeySpec::Uri => ("string len 200", "url".into()),
        KeySpec::Query => ("string len 200", "query".into()),
        KeySpec::User => {
            return Err(Inexpressible::UserKey);
        }
        KeySpec::Status => {
            return Err(Inexpressible::StatusKey);
        }
        KeySpec::Field(f) => match &f.header {
            Some(h)
                if !h.is_empty()
                    && h.bytes()
                        .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_') =>
            {
                (
                    "string len 64",
                    format!("req.hdr({})", h.to_ascii_lowercase()),
                )
            }
            _ => return Err(Inexpressible::FieldKey(f.name.to_string())),
        },
        KeySpec::Asn(_) => return Err(Inexpressible::AsnKey),
    })
}

/// One zone as a stick table and the deny threshold each rule uses with it.
struct Table {
    name: String,
    ty: &'static str,
    key: String,
    period: u64,
    expire: u64,
    /// The deny threshold when the zone's own (nginx: per rule, from the burst).
    limit: u64,
    notes: Vec<String>,
}

/// The nearest `http_req_rate` table of a zone, with NOTEs where it is not exact.
fn table(z: &Zone, name: String) -> Result<Table, Inexpressible> {
    let spec = z.spec();
    if spec.cost != CostKind::Requests {
        return Err(Inexpressible::Cost {
            unit: spec.cost.unit(),
            name: spec.cost.name(),
        });
    }
    let (ty, key) = key_expr(&spec.key)?;
    let (n, w) = (spec.rate.count(), spec.rate.window_ms());
    if w > u64::from(u32::MAX) {
        return Err(Inexpressible::LongWindow);
    }
    let mut notes = Vec::new();
    let mut expire = w;
    let limit = match spec.algorithm {
        Algorithm::Haproxy => {
            expire = spec.expire_ms();
            if expire == 0 {
                notes.push("expire=0 (every request starts afresh in the replay) is written as the period; HAProxy's `expire 0` never expires".into());
                expire = w;
            }
            n
        }
        Algorithm::Nginx => n + spec.burst(),
        Algorithm::TokenBucket | Algorithm::Gcra => spec.burst().max(1),
        Algorithm::LeakyQueue => n + spec.burst(),
        Algorithm::SlidingLog
        | Algorithm::Caddy
        | Algorithm::FixedWindow
        | Algorithm::SlidingWindow
        | Algorithm::Ban => n,
    };
    if spec.algorithm != Algorithm::Haproxy {
        let how = match spec.algorithm {
            Algorithm::Nginx => format!("the rate plus the burst ({n} + burst) per {}", time(w)),
            Algorithm::TokenBucket | Algorithm::Gcra => {
                format!("the bucket size per {}", time(w))
            }
            Algorithm::LeakyQueue => {
                "the rate plus the queue per window (HAProxy refuses, it does not queue)"
                    .to_string()
            }
            Algorithm::Haproxy
            | Algorithm::SlidingLog
            | Algorithm::Caddy
            | Algorithm::FixedWindow
            | Algorithm::SlidingWindow
            | Algorithm::Ban => format!("{n} per {}", time(w)),
        };
        notes.push(format!(
            "APPROXIMATE: replayed as {}; HAProxy has no such limiter: the nearest is {how}, counting every request, refused or not (a client that keeps sending stays refused), so its decisions differ",
            spec.describe()
        ));
    }
    if ty.starts_with("string len") && !matches!(spec.key, KeySpec::Site | KeySpec::Method) {
        notes.push(format!(
            "keys longer than the table's {ty} are cut by HAProxy (raise `len` if they differ only at the end)"
        ));
    }
    Ok(Table {
        name,
        ty,
        key,
        period: w,
        expire,
        limit,
        notes,
    })
}

/// The deny threshold of one rule's limit on a zone (nginx zones: per-rule burst).
fn rule_limit(z: &Zone, t: &Table, burst_milli: u64) -> u64 {
    if z.spec().algorithm == Algorithm::Nginx {
        z.spec().rate.count() + burst_milli / 1000
    } else {
        t.limit
    }
}

fn write_table(out: &mut String, t: &Table, store_extra: &str) {
    let _ = writeln!(out, "backend {}", t.name);
    for n in &t.notes {
        let _ = writeln!(out, "    # NOTE: {}", escape::comment(n));
    }
    let store = if t.period > 0 {
        format!(" store http_req_rate({}){store_extra}", time(t.period))
    } else if let Some(s) = store_extra.strip_prefix(',') {
        format!(" store {s}")
    } else {
        String::new()
    };
    let expire = if t.expire > 0 {
        format!(" expire {}", time(t.expire))
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "    stick-table type {} size 100k{expire}{store}    # ADJUST size: entries held",
        t.ty
    );
}

/// A candidate of zones and rules (spec, TOML, nginx.conf).
fn emit_rules(out: &mut String, p: &Policy, suffix: &str, port: usize, taken: &mut Vec<String>) {
    let mut fe = Fe::default();
    let mut head: Vec<String> = Vec::new();
    if p.dialect() == Dialect::Caddy && p.rules().len() > 1 {
        head.push("APPROXIMATE: a Caddy-dialect candidate (every matching rule applies, zones tried most permissive first, later zones not charged after a refusal); here every matching rule's table is tracked and each deny follows in rule order".into());
    }
    // Tables.
    let mut tables: Vec<Result<Table, Inexpressible>> = Vec::new();
    for z in p.zones() {
        let name = unique(format!("{}{suffix}", ident(z.name())), taken);
        tables.push(table(z, name));
    }
    for (zi, t) in tables.iter().enumerate() {
        if let Err(why) = t {
            head.push(format!("zone {} left out: {why}", p.zones()[zi].name()));
        }
    }
    // Policy-wide exemptions.
    let (ex_lits, ex_left) = not_exempt(&mut fe, p.exempt());
    if !ex_left.is_empty() {
        head.push(format!(
            "not written: the exemption of {}: HAProxy cannot tell them apart (add `!ACL` of your own to the track lines), so it limits them",
            ex_left.join("; ")
        ));
    }
    let nginx = p.dialect() == Dialect::Nginx;
    let mut before: Dnf = vec![Vec::new()];
    let mut broken: Option<String> = None;
    let mut slot = 0usize;
    for r in p.rules() {
        let name = escape::comment(&r.name);
        let scope = escape::comment(&r.matcher.describe());
        if nginx && before.is_empty() {
            fe.note(format!(
                "rule {name}: unreachable (an earlier rule takes every request); left out"
            ));
            continue;
        }
        let sel = match matches(&mut fe, &r.matcher) {
            Ok(d) => d,
            Err(why) => {
                fe.note(format!("rule {name} [{scope}] left out: {why}"));
                for l in &r.limits {
                    if let Some(Ok(t)) = tables.get(l.zone as usize) {
                        fe.lines.push(format!(
                            "    # http-request track-sc0 {} table {} if <ACL for: {scope}>",
                            t.key, t.name
                        ));
                    }
                }
                if nginx {
                    broken.get_or_insert(name);
                }
                continue;
            }
        };
        let mut cond = if nginx { product(&sel, &before) } else { sel };
        if nginx {
            match not_matches(&mut fe, &r.matcher) {
                Ok(n) => before = product(&before, &n),
                Err(why) => {
                    fe.note(format!("rule {name}: {why}"));
                    broken.get_or_insert(name.clone());
                }
            }
        }
        let (rex, rleft) = not_exempt(&mut fe, &r.exempt);
        if !rleft.is_empty() {
            fe.note(format!(
                "rule {name}: not written: the exemption of {}: HAProxy cannot tell them apart, so it limits them",
                rleft.join("; ")
            ));
        }
        let lits: Vec<Lit> = ex_lits.iter().chain(&rex).cloned().collect();
        cond = product(&cond, &vec![lits]);
        if cond.len() > MAX_ALTERNATIVES {
            fe.note(format!(
                "rule {name} [{scope}] left out: excluding the earlier rules' requests takes more than {MAX_ALTERNATIVES} alternatives"
            ));
            continue;
        }
        if cond.is_empty() {
            fe.note(format!("rule {name}: no request can reach it; left out"));
            continue;
        }
        if let Some(b) = &broken {
            fe.note(format!(
                "APPROXIMATE: rule {name}: the requests of rule {b} (left out above) reach it too"
            ));
        }
        if r.limits.is_empty() {
            fe.note(format!("rule {name} [{scope}]: not limited"));
            continue;
        }
        if r.limits.len() > 1 && nginx {
            fe.note(format!(
                "APPROXIMATE: rule {name} has {} limits; logscope replays them all-or-nothing (a refusal charges none), HAProxy counts the request in every table it tracks",
                r.limits.len()
            ));
        }
        if nginx {
            slot = 0;
        }
        let mut denies = Vec::new();
        for lim in &r.limits {
            let zi = lim.zone as usize;
            let Some(Ok(t)) = tables.get(zi) else {
                fe.note(format!(
                    "rule {name}: zone {} left out (see above)",
                    p.zones()[zi].name()
                ));
                continue;
            };
            if slot >= SLOTS {
                fe.note(format!(
                    "rule {name}: zone {} left out: HAProxy 2.6 tracks at most {SLOTS} counters (sc0-sc2) per request",
                    t.name
                ));
                continue;
            }
            fe.lines.push(format!(
                "    http-request track-sc{slot} {} table {}{}",
                t.key,
                t.name,
                condition(&cond, "")
            ));
            let n = rule_limit(&p.zones()[zi], t, lim.nginx.burst_milli);
            denies.push(format!(
                "    http-request deny deny_status 429 hdr Retry-After {}{}",
                p.zones()[zi].spec().retry_hint_s(),
                condition(&cond, &format!("{{ sc_http_req_rate({slot}) gt {n} }}"))
            ));
            slot += 1;
        }
        fe.lines.extend(denies);
    }
    let fname = unique(format!("ls_limits{suffix}"), taken);
    for h in &head {
        let _ = writeln!(out, "# NOTE: {}", escape::comment(h));
    }
    fe.write(out, &fname, port);
    for t in tables.iter().flatten() {
        out.push('\n');
        write_table(out, t, "");
    }
}

/// A haproxy.cfg candidate (`--haproxy-cfg`): its tables and frontends as read.
fn emit_program(
    out: &mut String,
    p: &Policy,
    prog: &Program,
    suffix: &str,
    port: usize,
    taken: &mut Vec<String>,
) {
    let names: Vec<String> = p
        .zones()
        .iter()
        .map(|z| unique(format!("{}{suffix}", ident(z.name())), taken))
        .collect();
    let mut gpc0 = vec![false; p.zones().len()];
    for (fi, f) in prog.frontends.iter().enumerate() {
        let mut fe = Fe::default();
        let mut slots: [Option<usize>; crate::replay::HAPROXY_SLOTS] =
            [None; crate::replay::HAPROXY_SLOTS];
        if !p.exempt().is_empty() {
            let (lits, left) = not_exempt(&mut fe, p.exempt());
            if !left.is_empty() {
                fe.note(format!(
                    "not written: the exemption of {}: HAProxy cannot tell them apart",
                    left.join("; ")
                ));
            }
            if !lits.is_empty() {
                let any: Vec<String> = lits.iter().map(|(_, n)| n.clone()).collect();
                fe.lines.push(format!(
                    "    http-request allow if {}    # exempt: not counted",
                    any.join(" || ")
                ));
            }
        }
        for a in &f.actions {
            let line = match a {
                Action::Track {
                    slot,
                    key,
                    table,
                    cond,
                } => {
                    let si = *slot as usize;
                    if si < slots.len() {
                        slots[si] = Some(*table as usize);
                    }
                    let k = match key {
                        TrackKey::Const(c) => {
                            let c = String::from_utf8_lossy(c).into_owned();
                            if c.chars()
                                .all(|x| x.is_ascii_alphanumeric() || "-_.".contains(x))
                                && !c.is_empty()
                            {
                                format!("str({c})")
                            } else {
                                "str(site)".to_string()
                            }
                        }
                        TrackKey::Field(k) => match key_expr(k) {
                            Ok((_, e)) => e,
                            Err(why) => {
                                fe.note(format!("a track-sc{slot} left out: {why}"));
                                continue;
                            }
                        },
                    };
                    let Some(tn) = names.get(*table as usize) else {
                        continue;
                    };
                    match program_cond(&mut fe, cond) {
                        Ok(c) => format!("    http-request track-sc{slot} {k} table {tn}{c}"),
                        Err(why) => {
                            fe.note(format!("a track-sc{slot} left out: {why}"));
                            continue;
                        }
                    }
                }
                Action::IncGpc0 { slot, cond } => {
                    if let Some(Some(t)) = slots.get(*slot as usize) {
                        gpc0[*t] = true;
                    }
                    match program_cond(&mut fe, cond) {
                        Ok(c) => format!("    http-request sc-inc-gpc0({slot}){c}"),
                        Err(why) => {
                            fe.note(format!("a sc-inc-gpc0({slot}) left out: {why}"));
                            continue;
                        }
                    }
                }
                Action::Deny { cond, .. } => {
                    for t in cond.or.iter().flatten().flat_map(|t| &t.any) {
                        if let Test::Gpc0 { slot, .. } = t
                            && let Some(Some(z)) = slots.get(*slot as usize)
                        {
                            gpc0[*z] = true;
                        }
                    }
                    match program_cond(&mut fe, cond) {
                        Ok(c) => format!("    http-request deny deny_status 429{c}"),
                        Err(why) => {
                            fe.note(format!("a deny left out: {why}"));
                            continue;
                        }
                    }
                }
                Action::Allow { cond } => match program_cond(&mut fe, cond) {
                    Ok(c) => format!("    http-request allow{c}"),
                    Err(why) => {
                        fe.note(format!("an allow left out: {why}"));
                        continue;
                    }
                },
            };
            fe.lines.push(line);
        }
        let fname = ident(&f.name);
        let fname = if taken.contains(&fname) || !suffix.is_empty() {
            unique(format!("{fname}{suffix}"), taken)
        } else {
            taken.push(fname.clone());
            fname
        };
        if fi > 0 {
            out.push('\n');
        }
        fe.write(out, &fname, port + fi * 100);
    }
    for (zi, z) in p.zones().iter().enumerate() {
        let Some(st) = z.table() else { continue };
        let ty = key_expr(&z.spec().key).map_or("ipv6", |(t, _)| t);
        let mut extra = String::new();
        if st.counts {
            extra.push_str(",http_req_cnt");
        }
        if gpc0[zi] {
            extra.push_str(",gpc0");
        }
        let t = Table {
            name: names[zi].clone(),
            ty,
            key: String::new(),
            period: st.period.map_or(0, u64::from),
            expire: st.expire.max(0) as u64,
            limit: 0,
            notes: Vec::new(),
        };
        out.push('\n');
        write_table(out, &t, &extra);
    }
}

/// A program condition as `if …`/`unless …` over named ACLs (counter tests inline).
fn program_cond(fe: &mut Fe, c: &Cond) -> Result<String, Inexpressible> {
    if c.or.is_empty() {
        return Ok(if c.unless {
            " if FALSE".into()
        } else {
            String::new()
        });
    }
    let mut alts = Vec::new();
    for and in &c.or {
        let mut terms = Vec::new();
        for t in and {
            let bang = if t.neg { "!" } else { "" };
            let inline = match t.any.as_slice() {
                [Test::Const(b)] => Some(if *b { "TRUE" } else { "FALSE" }.to_string()),
                [Test::Rate { slot, cmp, value }] => Some(format!(
                    "{{ sc_http_req_rate({slot}) {} {value} }}",
                    cmp.word()
                )),
                [Test::Gpc0 { slot, cmp, value }] => {
                    Some(format!("{{ sc_get_gpc0({slot}) {} {value} }}", cmp.word()))
                }
                _ => None,
            };
            if let Some(i) = inline {
                terms.push(format!("{bang}{i}"));
                continue;
            }
            let mut lines = Vec::new();
            let mut hint = "acl";
            for x in &t.any {
                match x {
                    Test::Req(m) => {
                        let cs = criteria(m)?;
                        match cs.as_slice() {
                            [] => lines.push("always_true".to_string()),
                            [(false, h, c)] => {
                                hint = h;
                                lines.push(c.clone());
                            }
                            _ => {
                                return Err(Inexpressible::SeveralConditions(m.describe()));
                            }
                        }
                    }
                    Test::Rate { slot, cmp, value } => {
                        lines.push(format!("sc_http_req_rate({slot}) {} {value}", cmp.word()))
                    }
                    Test::Gpc0 { slot, cmp, value } => {
                        lines.push(format!("sc_get_gpc0({slot}) {} {value}", cmp.word()))
                    }
                    Test::Const(b) => {
                        lines.push(if *b { "always_true" } else { "always_false" }.to_string())
                    }
                }
            }
            let n = fe.acl(hint, &lines);
            terms.push(format!("{bang}{n}"));
        }
        alts.push(terms.join(" "));
    }
    let kw = if c.unless { "unless" } else { "if" };
    Ok(format!(" {kw} {}", alts.join(" || ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::conf::haproxy_cfg;

    #[test]
    fn words_names_and_times() {
        assert_eq!(word("/api/"), "/api/");
        assert_eq!(word("a b"), "'a b'");
        assert_eq!(word("it's"), "'it'\\''s'");
        assert_eq!(word("#x"), "'#x'");
        assert_eq!(ident("20/10s,algo=haproxy"), "20_10s_algo_haproxy");
        assert_eq!(ident("st.ip:1-a"), "st.ip:1-a");
        assert_eq!(time(10_000), "10s");
        assert_eq!(time(1500), "1500ms");
        assert_eq!(regex_text("a\nb"), "a\\x{0A}b");
        assert_eq!(
            criterion("path_beg", &["-x".into(), "/a".into()]),
            "path_beg -- -x /a"
        );
    }

    fn emit(p: &Policy) -> String {
        emit_haproxy(&[p], &EmitSummary::default())
    }

    #[test]
    fn a_haproxy_spec_is_written_exactly_and_reads_back() {
        let p = Policy::from_spec("20/10s,algo=haproxy,key=prefix/24,expire=30s,name=net").unwrap();
        let text = emit(&p);
        assert!(
            text.contains("http-request track-sc0 src,ipmask(24,48) table net\n"),
            "{text}"
        );
        assert!(
            text.contains("http-request deny deny_status 429 hdr Retry-After 10 if { sc_http_req_rate(0) gt 20 }"),
            "{text}"
        );
        assert!(
            text.contains("stick-table type ipv6 size 100k expire 30s store http_req_rate(10s)"),
            "{text}"
        );
        assert!(!text.contains("APPROXIMATE"), "{text}");
        let back = haproxy_cfg::parse(&text, "e.cfg", "e").unwrap();
        assert!(back.unsupported.is_empty(), "{:?}", back.unsupported);
        let z = &back.policy.zones()[0];
        assert_eq!(z.name(), "net");
        assert_eq!(z.spec().key, KeySpec::Prefix { v4: 24, v6: 48 });
    }

    #[test]
    fn other_algorithms_are_marked_approximate_and_the_inexpressible_left_out() {
        let p = Policy::from_spec("5r/s,algo=nginx,burst=10,nodelay,key=ip").unwrap();
        let text = emit(&p);
        assert!(text.contains("APPROXIMATE"), "{text}");
        assert!(text.contains("gt 15 }"), "{text}");
        let p = Policy::from_spec("100/1m,key=user").unwrap();
        let text = emit(&p);
        assert!(text.contains("left out: a per-user key"), "{text}");
        assert!(!text.contains("http-request track"), "{text}");
        let p = Policy::from_spec("100/1m,scope=heavy").unwrap();
        let text = emit(&p);
        assert!(text.contains("heavy class"), "{text}");
        assert!(
            text.contains("# http-request track-sc0 str(site)"),
            "{text}"
        );
    }
}
