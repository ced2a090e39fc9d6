//! A real nginx configuration as a replay candidate: `limit_req_zone`s become zones,
//! `limit_req` (inherited http → server → location; a level with its own `limit_req`
//! replaces all inherited ones) becomes the limits of rules, and nginx's location
//! search (`=` exact, longest prefix, `^~`, regexes `~`/`~*` in file order, nested
//! locations) and server choice by Host become an ordered list of first-match rules
//! with the same answer for every path. `map`/`geo` keys become cases (conditions →
//! key, or empty: not limited) through [`super::vars`].

use std::path::Path;

use regex::bytes::Regex;

use super::syntax::{ConfError, Directive, parse_file};
use super::vars::{Case, Lit, Val, Vars, matcher_of, nginx_regex};
use crate::rate::Rate;
use crate::replay::key::KeySpec;
use crate::replay::matcher::Exempt;
use crate::replay::policy::{Dialect, LimitRef, Policy};
use crate::replay::spec::{Algorithm, LimitSpec, NginxDelay};
use crate::replay::zone::{Zone, ZoneId};

/// Something in the configuration the replay does not do as nginx would, or could not
/// evaluate: where, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// `file:line`.
    pub at: String,
    /// What.
    pub message: String,
}

/// A configuration read: the candidate and the notes on what was not replayed.
pub struct NginxConf {
    /// The candidate.
    pub policy: Policy,
    /// Unsupported directives, variables the log cannot supply, approximations.
    pub notes: Vec<Note>,
}

/// At most this many rules come out of one configuration.
const MAX_RULES: usize = 20_000;

/// Tests and the limits that apply under them.
type Combo = (Vec<Lit>, Vec<LimitRef>);

#[derive(Clone, Debug)]
struct LimitReq {
    zone: String,
    burst: u64,
    delay: NginxDelay,
    at: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Exact,
    Prefix { noregex: bool },
    Regex,
    Named,
}

struct Loc {
    kind: Kind,
    pattern: String,
    regex: Option<Regex>,
    label: String,
    own: Option<Vec<LimitReq>>,
    ret: bool,
    children: Vec<usize>,
    effective: Vec<LimitReq>,
}

struct Server {
    label: String,
    names: Vec<String>,
    default: bool,
    own: Option<Vec<LimitReq>>,
    ret: bool,
    children: Vec<usize>,
    effective: Vec<LimitReq>,
}

struct ZoneDef {
    key: String,
    rate: Rate,
    at: String,
    cases: Vec<Case>,
    instances: Vec<(Val, ZoneId)>,
    distinct: usize,
    warned: bool,
}

struct Reader {
    notes: Vec<Note>,
    vars: Vars,
    zones: Vec<(String, ZoneDef)>,
    http_limits: Option<Vec<LimitReq>>,
    locs: Vec<Loc>,
    servers: Vec<Server>,
    listens: Vec<String>,
    statuses: Vec<String>,
    dry_run: Vec<String>,
    policy: Policy,
}

/// Directives inside `server`/`location` that change what reaches `limit_req` or how,
/// which the replay does not evaluate: listed with file:line.
const UNSUPPORTED: &[&str] = &[
    "if",
    "rewrite",
    "set",
    "limit_except",
    "limit_conn",
    "internal",
    "auth_request",
    "mirror",
    "error_page",
    "perl_set",
    "js_set",
];

impl NginxConf {
    /// Reads `path` (with its includes). Syntax errors and invalid `limit_req*`
    /// directives are errors with file:line; what the replay cannot evaluate is a
    /// [`Note`]. The policy is named after the file's stem.
    pub fn read(path: &Path) -> Result<NginxConf, ConfError> {
        let tree = parse_file(path)?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "nginx".into());
        build(&tree, path, name)
    }

    /// Reads configuration text as if it were the file `path`.
    pub fn from_str(text: &str, path: &Path) -> Result<NginxConf, ConfError> {
        let tree = super::syntax::parse_str(text, path)?;
        build(&tree, path, "nginx".into())
    }
}

fn build(tree: &[Directive], path: &Path, name: String) -> Result<NginxConf, ConfError> {
    let http: Vec<&Directive> = tree.iter().filter(|d| d.name == "http").collect();
    let body: &[Directive] = match http.as_slice() {
        [] => {
            if !tree
                .iter()
                .any(|d| matches!(d.name.as_str(), "server" | "limit_req_zone" | "limit_req"))
            {
                return Err(ConfError {
                    file: path.to_path_buf(),
                    line: 1,
                    message: "no http block, server or limit_req_zone: nothing to replay".into(),
                });
            }
            tree
        }
        [h] => h
            .block
            .as_deref()
            .ok_or_else(|| h.error("\"http\" needs a block"))?,
        [_, h, ..] => return Err(h.error("\"http\" directive is duplicate")),
    };
    let mut r = Reader {
        notes: Vec::new(),
        vars: Vars::default(),
        zones: Vec::new(),
        http_limits: None,
        locs: Vec::new(),
        servers: Vec::new(),
        listens: Vec::new(),
        statuses: Vec::new(),
        dry_run: Vec::new(),
        policy: Policy::new(name, Dialect::Nginx),
    };
    // Variables and zones first: nginx lets a directive use them before they appear.
    for d in body {
        match d.name.as_str() {
            "map" => r.vars.add_map(d)?,
            "geo" => r.vars.add_geo(d)?,
            "limit_req_zone" => r.zone(d)?,
            _ => {}
        }
    }
    let mut http_status = None;
    let mut http_dry = None;
    for d in body {
        match d.name.as_str() {
            "limit_req" => {
                let lr = parse_limit_req(d)?;
                r.http_limits.get_or_insert_with(Vec::new).push(lr);
            }
            "server" => r.server(d)?,
            "limit_req_status" => http_status = Some(status(d)?),
            "limit_req_dry_run" => http_dry = Some(on_off(d)?),
            _ => {}
        }
    }
    r.notes.extend(
        r.vars
            .notes
            .drain(..)
            .map(|(at, message)| Note { at, message }),
    );
    r.check_zones_used()?;
    r.rules()?;
    let mut desc = format!(
        "nginx configuration {}: {} zones, {} servers, {} locations; requests routed as nginx does (exact, longest prefix, ^~, regexes in order, nested), by Host when there are several servers",
        path.display(),
        r.zones.len(),
        r.servers.len(),
        r.locs.len()
    );
    if let Some(s) = http_status {
        desc.push_str(&format!("; refused requests get status {s}"));
    }
    if http_dry == Some(true) || !r.dry_run.is_empty() {
        desc.push_str(
            "; limit_req_dry_run is on: nginx only logged these decisions, the replay shows them as if enforced",
        );
    }
    if !r.statuses.is_empty() {
        desc.push_str(&format!(
            "; limit_req_status set at {}",
            r.statuses.join(", ")
        ));
    }
    let mut policy = r.policy;
    policy.set_description(desc);
    Ok(NginxConf {
        policy,
        notes: r.notes,
    })
}

fn status(d: &Directive) -> Result<u16, ConfError> {
    match d.texts().as_slice() {
        [s] => s
            .parse::<u16>()
            .ok()
            .filter(|c| (400..=599).contains(c))
            .ok_or_else(|| d.error(format!("limit_req_status {s}: give a code from 400 to 599"))),
        _ => Err(d.error("limit_req_status takes one status code, e.g. limit_req_status 429;")),
    }
}

fn on_off(d: &Directive) -> Result<bool, ConfError> {
    match d.texts().as_slice() {
        ["on"] => Ok(true),
        ["off"] => Ok(false),
        _ => Err(d.error(format!("{} takes on or off", d.name))),
    }
}

impl Reader {
    fn note(&mut self, at: String, message: impl Into<String>) {
        self.notes.push(Note {
            at,
            message: message.into(),
        });
    }

    fn zone(&mut self, d: &Directive) -> Result<(), ConfError> {
        const EXAMPLE: &str = "limit_req_zone $binary_remote_addr zone=perip:10m rate=5r/s;";
        let t = d.texts();
        if t.is_empty() {
            return Err(d.error(format!(
                "limit_req_zone needs a key, zone= and rate=, e.g. {EXAMPLE}"
            )));
        }
        let key = t[0].to_string();
        let mut name = None;
        let mut rate = None;
        for a in &t[1..] {
            if let Some(z) = a.strip_prefix("zone=") {
                let (n, size) = z.split_once(':').ok_or_else(|| {
                    d.error(format!(
                        "invalid zone size \"{z}\": give zone=NAME:SIZE, e.g. {EXAMPLE}"
                    ))
                })?;
                if n.is_empty() || !valid_size(size) {
                    return Err(d.error(format!("invalid zone \"{z}\", e.g. {EXAMPLE}")));
                }
                name = Some(n.to_string());
            } else if let Some(rs) = a.strip_prefix("rate=") {
                rate = Some(nginx_rate(rs).ok_or_else(|| {
                    d.error(format!(
                        "invalid rate \"{rs}\": give Nr/s or Nr/m, e.g. {EXAMPLE}"
                    ))
                })?);
            } else if *a == "sync" {
                self.note(
                    d.at(),
                    "limit_req_zone sync (shared across a cluster): replayed as one local zone",
                );
            } else {
                return Err(d.error(format!(
                    "invalid parameter \"{a}\" of limit_req_zone, e.g. {EXAMPLE}"
                )));
            }
        }
        let name = name.ok_or_else(|| {
            d.error(format!(
                "limit_req_zone has no zone=NAME:SIZE, e.g. {EXAMPLE}"
            ))
        })?;
        let rate =
            rate.ok_or_else(|| d.error(format!("limit_req_zone has no rate=, e.g. {EXAMPLE}")))?;
        if self.zones.iter().any(|(n, _)| *n == name) {
            return Err(d.error(format!("duplicate zone \"{name}\"")));
        }
        let cases = self.vars.value(&key).map_err(|m| d.error(m.to_string()))?;
        let distinct = cases
            .iter()
            .filter(|c| matches!(c.val, Val::Const(_) | Val::Key(_)))
            .map(|c| &c.val)
            .collect::<std::collections::HashSet<_>>()
            .len();
        self.zones.push((
            name,
            ZoneDef {
                key,
                rate,
                at: d.at(),
                cases,
                instances: Vec::new(),
                distinct,
                warned: false,
            },
        ));
        Ok(())
    }

    fn server(&mut self, d: &Directive) -> Result<(), ConfError> {
        let block = d
            .block
            .as_deref()
            .ok_or_else(|| d.error("\"server\" needs a block"))?;
        let mut s = Server {
            label: String::new(),
            names: Vec::new(),
            default: false,
            own: None,
            ret: false,
            children: Vec::new(),
            effective: Vec::new(),
        };
        let mut listened = false;
        for x in block {
            match x.name.as_str() {
                "server_name" => {
                    for n in x.texts() {
                        if n.starts_with('~') || n.contains('*') || n.starts_with('.') {
                            self.note(
                                x.at(),
                                format!("server_name {n}: wildcard and regex names are not matched; those requests go to the default server"),
                            );
                        } else if !n.is_empty() && n != "_" {
                            s.names.push(n.to_ascii_lowercase());
                        }
                    }
                }
                "listen" => {
                    listened = true;
                    let t = x.texts();
                    if let Some(a) = t.first() {
                        let a = a.to_string();
                        if !self.listens.contains(&a) {
                            self.listens.push(a);
                        }
                    }
                    s.default |= t.iter().any(|a| *a == "default_server" || *a == "default");
                }
                "limit_req" => s.own.get_or_insert_with(Vec::new).push(parse_limit_req(x)?),
                "limit_req_status" => {
                    let code = status(x)?;
                    self.statuses.push(format!("{}: {code}", x.at()));
                }
                "limit_req_dry_run" => self.dry_run.extend(on_off(x)?.then(|| x.at())),
                "return" => s.ret = true,
                "location" => {
                    let i = self.location(x, 0)?;
                    s.children.push(i);
                }
                n if UNSUPPORTED.contains(&n) => self.unsupported(x),
                n if n.starts_with("limit_req") && n != "limit_req_log_level" => {
                    return Err(x.error(format!("unknown directive \"{n}\"")));
                }
                _ => {}
            }
        }
        if !listened && !self.listens.iter().any(|l| l == "80") {
            self.listens.push("80".into());
        }
        s.label = s
            .names
            .first()
            .cloned()
            .unwrap_or_else(|| format!("server at {}", d.at()));
        if s.ret {
            self.note(
                d.at(),
                "server-level return: its requests end before limit_req runs; not limited",
            );
        }
        self.servers.push(s);
        Ok(())
    }

    fn unsupported(&mut self, x: &Directive) {
        let what = match x.name.as_str() {
            "if" => {
                "if: its condition is not evaluated; the limits of the enclosing block are used"
            }
            "rewrite" => {
                "rewrite: the URI is not rewritten; locations are matched on the logged path"
            }
            "set" => "set: variables it sets are not evaluated",
            "limit_conn" => "limit_conn: connection limits are not replayed",
            "limit_except" => "limit_except: method restrictions are not replayed",
            _ => "not replayed",
        };
        self.note(x.at(), format!("{} {what}", x.name));
    }

    fn location(&mut self, d: &Directive, depth: usize) -> Result<usize, ConfError> {
        let t = d.texts();
        let (kind, pat, caseless) = match t.as_slice() {
            ["=", p] => (Kind::Exact, p.to_string(), false),
            ["^~", p] => (Kind::Prefix { noregex: true }, p.to_string(), false),
            ["~", p] => (Kind::Regex, p.to_string(), false),
            ["~*", p] => (Kind::Regex, p.to_string(), true),
            [p] if p.starts_with('@') => (Kind::Named, p.to_string(), false),
            [p] if p.starts_with("^~") => {
                (Kind::Prefix { noregex: true }, p[2..].to_string(), false)
            }
            [p] if p.starts_with("~*") => (Kind::Regex, p[2..].to_string(), true),
            [p] if p.starts_with('~') => (Kind::Regex, p[1..].to_string(), false),
            [p] if p.starts_with('=') => (Kind::Exact, p[1..].to_string(), false),
            [p] => (Kind::Prefix { noregex: false }, p.to_string(), false),
            _ => return Err(d.error("invalid number of arguments in \"location\"")),
        };
        let block = d
            .block
            .as_deref()
            .ok_or_else(|| d.error("\"location\" needs a block"))?;
        let mut regex = None;
        if kind == Kind::Regex {
            match nginx_regex(&pat, caseless) {
                Ok(r) => regex = Some(r),
                Err(m) => self.note(
                    d.at(),
                    format!("location: {m}; it never matches in the replay"),
                ),
            }
        }
        let label = match (kind, caseless) {
            (Kind::Exact, _) => format!("= {pat}"),
            (Kind::Prefix { noregex: true }, _) => format!("^~ {pat}"),
            (Kind::Regex, false) => format!("~ {pat}"),
            (Kind::Regex, true) => format!("~* {pat}"),
            _ => pat.clone(),
        };
        let idx = self.locs.len();
        self.locs.push(Loc {
            kind,
            pattern: pat,
            regex,
            label,
            own: None,
            ret: false,
            children: Vec::new(),
            effective: Vec::new(),
        });
        for x in block {
            match x.name.as_str() {
                "limit_req" => {
                    let lr = parse_limit_req(x)?;
                    self.locs[idx].own.get_or_insert_with(Vec::new).push(lr);
                }
                "limit_req_status" => {
                    let code = status(x)?;
                    self.statuses.push(format!("{}: {code}", x.at()));
                }
                "limit_req_dry_run" => self.dry_run.extend(on_off(x)?.then(|| x.at())),
                "return" => self.locs[idx].ret = true,
                "location" => {
                    if depth > 64 {
                        return Err(x.error("locations nest too deep"));
                    }
                    if kind == Kind::Exact || kind == Kind::Named {
                        return Err(x.error(format!(
                            "location \"{}\" cannot be inside the exact or named location \"{}\"",
                            x.texts().join(" "),
                            self.locs[idx].label
                        )));
                    }
                    let c = self.location(x, depth + 1)?;
                    if let (Kind::Prefix { .. }, Kind::Prefix { .. } | Kind::Exact) =
                        (kind, self.locs[c].kind)
                        && !self.locs[c].pattern.starts_with(&self.locs[idx].pattern)
                    {
                        return Err(x.error(format!(
                            "location \"{}\" is outside location \"{}\"",
                            self.locs[c].pattern, self.locs[idx].pattern
                        )));
                    }
                    self.locs[idx].children.push(c);
                }
                n if UNSUPPORTED.contains(&n) => self.unsupported(x),
                n if n.starts_with("limit_req") && n != "limit_req_log_level" => {
                    return Err(x.error(format!("unknown directive \"{n}\"")));
                }
                _ => {}
            }
        }
        if self.locs[idx].ret && self.locs[idx].own.is_some() {
            self.note(
                d.at(),
                "return runs before limit_req: this location's limit_req never applies",
            );
        }
        Ok(idx)
    }

    fn check_zones_used(&self) -> Result<(), ConfError> {
        let mut all: Vec<&LimitReq> = self.http_limits.iter().flatten().collect();
        for s in &self.servers {
            all.extend(s.own.iter().flatten());
        }
        for l in &self.locs {
            all.extend(l.own.iter().flatten());
        }
        for lr in all {
            if !self.zones.iter().any(|(n, _)| *n == lr.zone) {
                let (file, line) = lr.at.rsplit_once(':').unwrap_or((&lr.at, "0"));
                return Err(ConfError {
                    file: file.into(),
                    line: line.parse().unwrap_or(0),
                    message: format!(
                        "limit_req: zone \"{}\" is unknown (no limit_req_zone defines it)",
                        lr.zone
                    ),
                });
            }
        }
        Ok(())
    }

    /// The rules, in first-match order.
    fn rules(&mut self) -> Result<(), ConfError> {
        if self.servers.is_empty() {
            self.note(String::new(), "no server block: nothing is limited");
            return Ok(());
        }
        if self.listens.len() > 1 {
            self.note(
                String::new(),
                format!(
                    "servers listen on {} addresses ({}); the log does not say which one a request came to, so servers are chosen by Host alone",
                    self.listens.len(),
                    self.listens.join(", ")
                ),
            );
        }
        // Inheritance: a level with its own limit_req replaces all inherited ones.
        let http = self.http_limits.clone().unwrap_or_default();
        for si in 0..self.servers.len() {
            let eff = self.servers[si].own.clone().unwrap_or_else(|| http.clone());
            let ret = self.servers[si].ret;
            self.servers[si].effective = if ret { Vec::new() } else { eff.clone() };
            for c in self.servers[si].children.clone() {
                self.inherit(c, &eff, ret);
            }
        }
        let default = self.servers.iter().position(|s| s.default).unwrap_or(0);
        let several = self.servers.len() > 1;
        let mut order: Vec<usize> = (0..self.servers.len())
            .filter(|&i| i != default && !self.servers[i].names.is_empty())
            .collect();
        for i in 0..self.servers.len() {
            if i != default && self.servers[i].names.is_empty() {
                self.note(
                    String::new(),
                    format!(
                        "{}: no exact server_name, so no request reaches it",
                        self.servers[i].label
                    ),
                );
            }
        }
        order.push(default);
        let mut count = 0usize;
        for si in order {
            let host = if si == default || !several {
                vec![]
            } else {
                vec![Lit::Host(
                    self.servers[si]
                        .names
                        .iter()
                        .map(|n| n.clone().into_bytes())
                        .collect(),
                )]
            };
            let leaves = self.find(None, &self.servers[si].children.clone());
            for (lits, target) in leaves {
                let (label, limits) = match target {
                    None => (
                        "(no location)".to_string(),
                        self.servers[si].effective.clone(),
                    ),
                    Some(i) => (self.locs[i].label.clone(), self.locs[i].effective.clone()),
                };
                let name = if several {
                    format!("{} {label}", self.servers[si].label)
                } else {
                    label
                };
                let mut base = host.clone();
                base.extend(lits);
                for (lits, refs) in self.combos(&limits)? {
                    let mut all = base.clone();
                    all.extend(lits);
                    let Some(m) = matcher_of(&all) else { continue };
                    count += 1;
                    if count > MAX_RULES {
                        return Err(ConfError {
                            file: Default::default(),
                            line: 0,
                            message: format!(
                                "more than {MAX_RULES} rules: too many combinations of locations and map cases"
                            ),
                        });
                    }
                    self.policy
                        .add_rule(name.clone(), m, Exempt::default(), &refs)
                        .map_err(|e| ConfError {
                            file: Default::default(),
                            line: 0,
                            message: e.to_string(),
                        })?;
                }
            }
        }
        // Zones not used by any rule are still shown.
        for zi in 0..self.zones.len() {
            if self.zones[zi].1.instances.is_empty() {
                let cases = self.zones[zi].1.cases.clone();
                for c in cases {
                    if matches!(c.val, Val::Const(_) | Val::Key(_)) {
                        self.instance_id(zi, &c.val)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// A location's limits: its own, else its parent's; none when it (or the server)
    /// returns before limit_req runs.
    fn inherit(&mut self, i: usize, parent: &[LimitReq], server_ret: bool) {
        let own = self.locs[i].own.clone().unwrap_or_else(|| parent.to_vec());
        self.locs[i].effective = if self.locs[i].ret || server_ret {
            Vec::new()
        } else {
            own.clone()
        };
        for c in self.locs[i].children.clone() {
            self.inherit(c, &own, server_ret);
        }
    }

    /// nginx's location search under a parent (`None` = the server) with these
    /// children: leaves (tests, location) in the order that makes first-match right.
    /// `done` leaves are final; the others still face the parent's regexes.
    fn find(&self, parent: Option<usize>, children: &[usize]) -> Vec<(Vec<Lit>, Option<usize>)> {
        self.find_level(parent, children)
            .into_iter()
            .map(|(l, _, t)| (l, t))
            .collect()
    }

    fn find_level(
        &self,
        parent: Option<usize>,
        children: &[usize],
    ) -> Vec<(Vec<Lit>, bool, Option<usize>)> {
        let mut out = Vec::new();
        for &c in children {
            if self.locs[c].kind == Kind::Exact {
                out.push((
                    vec![Lit::Exact(self.locs[c].pattern.clone().into_bytes())],
                    true,
                    Some(c),
                ));
            }
        }
        let mut prefixes: Vec<usize> = children
            .iter()
            .copied()
            .filter(|&c| matches!(self.locs[c].kind, Kind::Prefix { .. }))
            .collect();
        // Longest first; a prefix given twice keeps the first (nginx refuses duplicates).
        prefixes.sort_by_key(|&c| std::cmp::Reverse(self.locs[c].pattern.len()));
        let regexes: Vec<usize> = children
            .iter()
            .copied()
            .filter(|&c| self.locs[c].kind == Kind::Regex && self.locs[c].regex.is_some())
            .collect();
        for &p in &prefixes {
            let noregex = matches!(self.locs[p].kind, Kind::Prefix { noregex: true });
            let lit = Lit::Prefix(self.locs[p].pattern.clone().into_bytes());
            for (mut lits, done, t) in self.find_level(Some(p), &self.locs[p].children.clone()) {
                lits.insert(0, lit.clone());
                if done || noregex {
                    out.push((lits, done, t));
                } else {
                    out.extend(self.regexes(&regexes, lits, t));
                }
            }
        }
        out.extend(self.regexes(&regexes, Vec::new(), parent));
        out
    }

    fn regexes(
        &self,
        regexes: &[usize],
        base: Vec<Lit>,
        cur: Option<usize>,
    ) -> Vec<(Vec<Lit>, bool, Option<usize>)> {
        let mut out = Vec::new();
        for &r in regexes {
            let re = self.locs[r].regex.clone().expect("compiled");
            for (lits, _, t) in self.find_level(Some(r), &self.locs[r].children.clone()) {
                let mut l = base.clone();
                l.push(Lit::PathRe(re.clone()));
                l.extend(lits);
                out.push((l, true, t));
            }
        }
        out.push((base, false, cur));
        out
    }

    /// The limit lists of one location under the zones' key cases (lexicographic, which
    /// keeps first-match right).
    fn combos(&mut self, limits: &[LimitReq]) -> Result<Vec<Combo>, ConfError> {
        let mut out: Vec<Combo> = vec![(Vec::new(), Vec::new())];
        for lr in limits {
            let zi = self
                .zones
                .iter()
                .position(|(n, _)| *n == lr.zone)
                .expect("checked");
            let cases = self.zones[zi].1.cases.clone();
            let mut next = Vec::new();
            for (lits, refs) in &out {
                for c in &cases {
                    let mut l = lits.clone();
                    l.extend(c.lits.iter().cloned());
                    let mut r = refs.clone();
                    match &c.val {
                        Val::Empty => {}
                        Val::Unsupported(why) => {
                            if !self.zones[zi].1.warned {
                                self.zones[zi].1.warned = true;
                                let at = self.zones[zi].1.at.clone();
                                let key = self.zones[zi].1.key.clone();
                                self.note(
                                    at,
                                    format!("zone {} key {key}: {why}; requests in this case are not limited by it", lr.zone),
                                );
                            }
                        }
                        v => {
                            let id = self.instance_id(zi, v)?;
                            r.push(LimitRef {
                                zone: id,
                                burst: Some(lr.burst),
                                delay: Some(lr.delay),
                            });
                        }
                    }
                    next.push((l, r));
                    // Checked as they are made: a zone's cases times the list so far.
                    if next.len() > MAX_RULES {
                        return Err(ConfError {
                            file: Default::default(),
                            line: 0,
                            message: format!("more than {MAX_RULES} combinations of map cases"),
                        });
                    }
                }
            }
            out = next;
        }
        Ok(out)
    }

    fn instance_id(&mut self, zi: usize, v: &Val) -> Result<ZoneId, ConfError> {
        if let Some((_, id)) = self.zones[zi].1.instances.iter().find(|(x, _)| x == v) {
            return Ok(*id);
        }
        let (name, def) = &self.zones[zi];
        let label = if def.distinct <= 1 {
            name.clone()
        } else {
            match v {
                Val::Const(c) => format!("{name}[{c}]"),
                Val::Key(k) => format!("{name}[{k}]"),
                _ => name.clone(),
            }
        };
        let key = match v {
            Val::Key(k) => k.clone(),
            _ => KeySpec::Site,
        };
        let mut spec = LimitSpec::new(Algorithm::Nginx, def.rate);
        spec.key = key;
        spec.name = Some(name.clone());
        let at = def.at.clone();
        let err = |m: String| {
            let (file, line) = at.rsplit_once(':').unwrap_or((&at, "0"));
            ConfError {
                file: file.into(),
                line: line.parse().unwrap_or(0),
                message: m,
            }
        };
        let zone = Zone::new(label, spec).map_err(|e| err(e.to_string()))?;
        let id = self.policy.add_zone(zone).map_err(|e| err(e.to_string()))?;
        self.zones[zi].1.instances.push((v.clone(), id));
        Ok(id)
    }
}

fn parse_limit_req(d: &Directive) -> Result<LimitReq, ConfError> {
    const EXAMPLE: &str = "limit_req zone=perip burst=10 nodelay;";
    let mut zone = None;
    let mut burst = 0u64;
    let mut delay = NginxDelay::Default;
    for a in d.texts() {
        if let Some(z) = a.strip_prefix("zone=") {
            if z.is_empty() {
                return Err(d.error(format!("limit_req: empty zone name, e.g. {EXAMPLE}")));
            }
            zone = Some(z.to_string());
        } else if let Some(b) = a.strip_prefix("burst=") {
            burst = b
                .parse::<u64>()
                .ok()
                .filter(|&n| n > 0 && n < (1 << 40))
                .ok_or_else(|| d.error(format!("invalid burst value \"{b}\", e.g. {EXAMPLE}")))?;
        } else if let Some(v) = a.strip_prefix("delay=") {
            let n = v
                .parse::<u64>()
                .ok()
                .filter(|&n| n > 0 && n < (1 << 40))
                .ok_or_else(|| {
                    d.error(format!(
                        "invalid delay value \"{v}\", e.g. limit_req zone=perip burst=12 delay=4;"
                    ))
                })?;
            delay = NginxDelay::Delay(n);
        } else if a == "nodelay" {
            delay = NginxDelay::NoDelay;
        } else {
            return Err(d.error(format!(
                "invalid parameter \"{a}\" of limit_req, e.g. {EXAMPLE}"
            )));
        }
    }
    let zone = zone.ok_or_else(|| d.error(format!("limit_req needs zone=NAME, e.g. {EXAMPLE}")))?;
    Ok(LimitReq {
        zone,
        burst,
        delay,
        at: d.at(),
    })
}

/// `Nr/s` or `Nr/m`, as nginx reads it (a whole N).
fn nginx_rate(s: &str) -> Option<Rate> {
    let (n, per) = if let Some(n) = s.strip_suffix("r/s") {
        (n, 1000)
    } else {
        (s.strip_suffix("r/m")?, 60_000)
    };
    let n: u64 = n.parse().ok().filter(|&n| n > 0)?;
    Rate::new(n, per)
}

/// `10m`, `512k`, `1048576`.
fn valid_size(s: &str) -> bool {
    let digits = s.strip_suffix(['k', 'K', 'm', 'M', 'g', 'G']).unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::request::Request;

    fn conf(text: &str) -> NginxConf {
        NginxConf::from_str(text, Path::new("/etc/nginx/t.conf")).unwrap()
    }

    /// The rule a request lands in (first match), with its zone names.
    fn route(c: &NginxConf, host: Option<&str>, path: &str, ip: &str) -> (String, Vec<String>) {
        let req = Request {
            path: Some(path.as_bytes()),
            host: host.map(str::as_bytes),
            ip: ip.parse().ok(),
            ..Request::default()
        };
        let p = &c.policy;
        let r = p
            .rules()
            .iter()
            .find(|r| r.matcher.matches(&req))
            .expect("some rule");
        let zones = r
            .limits
            .iter()
            .map(|l| p.zones()[l.zone as usize].name().to_string())
            .collect();
        (r.name.clone(), zones)
    }

    const ZONES: &str = "limit_req_zone $binary_remote_addr zone=a:1m rate=1r/s;\n\
                         limit_req_zone $binary_remote_addr zone=b:1m rate=1r/s;\n\
                         limit_req_zone $binary_remote_addr zone=c:1m rate=1r/s;\n";

    #[test]
    fn location_order_is_nginx_order() {
        let c = conf(&format!(
            "http {{ {ZONES} server {{
                location = /x {{ }}
                location / {{ }}
                location /img/ {{ }}
                location ^~ /static/ {{ }}
                location ~ \\.php$ {{ }}
                location ~* \\.(png|JPG)$ {{ }}
                location /app/ {{
                    location /app/admin/ {{ }}
                    location ~ ^/app/.*\\.json$ {{ }}
                }}
            }} }}"
        ));
        let r = |p: &str| route(&c, None, p, "1.2.3.4").0;
        assert_eq!(r("/x"), "= /x");
        assert_eq!(r("/xy"), "/");
        assert_eq!(r("/img/a.gif"), "/img/");
        // A regex beats the longest prefix...
        assert_eq!(r("/img/a.png"), "~* \\.(png|JPG)$");
        assert_eq!(r("/img/a.PNG"), "~* \\.(png|JPG)$");
        // ...in file order...
        assert_eq!(r("/a.php"), "~ \\.php$");
        // ...unless the prefix is ^~.
        assert_eq!(r("/static/a.php"), "^~ /static/");
        // Nested: the inner prefix, then the inner regex, then the outer regexes.
        assert_eq!(r("/app/admin/x"), "/app/admin/");
        assert_eq!(r("/app/x.json"), "~ ^/app/.*\\.json$");
        assert_eq!(r("/app/admin/x.json"), "~ ^/app/.*\\.json$");
        assert_eq!(r("/app/admin/x.php"), "~ \\.php$");
        assert_eq!(r("/app/y"), "/app/");
    }

    #[test]
    fn inheritance_replaces_all_inherited_limits() {
        let c = conf(&format!(
            "{ZONES} limit_req zone=a; limit_req zone=b burst=5;
             server {{ listen 80 default_server;
                location /inherit/ {{ }}
                location /own/ {{ limit_req zone=c burst=2 nodelay; }}
                location /outer/ {{ limit_req zone=b;
                    location /outer/inner/ {{ }}
                }}
                location /ret/ {{ return 403; }}
             }}
             server {{ server_name api.example.com; limit_req zone=c;
                location / {{ }}
             }}"
        ));
        let r = |h: Option<&str>, p: &str| route(&c, h, p, "1.2.3.4");
        assert_eq!(r(None, "/inherit/x").1, vec!["a", "b"]);
        assert_eq!(r(None, "/own/x").1, vec!["c"]);
        assert_eq!(r(None, "/outer/inner/x").1, vec!["b"]);
        assert_eq!(r(None, "/ret/x").1, Vec::<String>::new());
        assert_eq!(r(None, "/elsewhere").1, vec!["a", "b"]);
        assert_eq!(r(Some("api.example.com"), "/inherit/x").1, vec!["c"]);
        assert_eq!(r(Some("API.example.com"), "/v1").0, "api.example.com /");
        assert_eq!(
            r(Some("other.example.com"), "/own/").0,
            "server at /etc/nginx/t.conf:5 /own/"
        );
        let own = c
            .policy
            .rules()
            .iter()
            .find(|x| x.name.ends_with("/own/"))
            .unwrap();
        assert_eq!(own.limits[0].nginx.burst_milli, 2000);
        assert_eq!(
            own.limits[0].nginx.delay_milli,
            crate::replay::nginx::NODELAY_MILLI
        );
    }

    #[test]
    fn map_and_geo_exempt_with_an_empty_key() {
        let c = conf(
            "geo $limited { default 1; 10.0.0.0/8 0; }
             map $limited $key { 0 \"\"; 1 $binary_remote_addr; }
             map $http_user_agent $ua_key { default \"\"; \"~*curl\" $binary_remote_addr; }
             limit_req_zone $key zone=perip:10m rate=5r/s;
             limit_req_zone $ua_key zone=curl:10m rate=1r/s;
             limit_req_zone $http_x_api_key zone=api:10m rate=1r/s;
             server { location / { limit_req zone=perip burst=3; limit_req zone=curl; }
                      location /api/ { limit_req zone=api; } }",
        );
        fn req<'a>(ip: &str, ua: &'a str) -> Request<'a> {
            Request {
                path: Some(b"/x"),
                ip: ip.parse().ok(),
                user_agent: Some(ua.as_bytes()),
                ..Request::default()
            }
        }
        let zones = |r: &Request<'_>| -> Vec<String> {
            let p = &c.policy;
            let rule = p.rules().iter().find(|x| x.matcher.matches(r)).unwrap();
            rule.limits
                .iter()
                .map(|l| p.zones()[l.zone as usize].name().to_string())
                .collect()
        };
        assert_eq!(zones(&req("10.1.2.3", "Mozilla")), Vec::<String>::new());
        assert_eq!(zones(&req("10.1.2.3", "curl/8")), vec!["curl"]);
        assert_eq!(zones(&req("192.0.2.1", "Mozilla")), vec!["perip"]);
        assert_eq!(zones(&req("192.0.2.1", "CURL/8")), vec!["perip", "curl"]);
        assert!(
            c.notes
                .iter()
                .any(|n| n.at == "/etc/nginx/t.conf:6" && n.message.contains("$http_x_api_key")),
            "{:?}",
            c.notes
        );
    }

    #[test]
    fn errors_name_file_and_line() {
        for (t, line, want) in [
            (
                "limit_req_zone $binary_remote_addr zone=a rate=1r/s;",
                1,
                "zone=NAME:SIZE",
            ),
            (
                "limit_req_zone $binary_remote_addr zone=a:1m rate=1r/h;",
                1,
                "invalid rate",
            ),
            (
                "server {\n location / {\n limit_req zone=nope;\n }\n}",
                3,
                "unknown",
            ),
            (
                "limit_req_zone $a zone=a:1m rate=1r/s;\nserver { limit_req zone=a burst=x; }",
                2,
                "burst",
            ),
            (
                "limit_req_zone $a zone=a:1m rate=1r/s;\nlimit_req_zone $a zone=a:1m rate=2r/s;",
                2,
                "duplicate",
            ),
            (
                "server { location = /a { location /b { } } }",
                1,
                "cannot be inside",
            ),
            (
                "server { location /a/ {\n location /b/ { } } }",
                2,
                "outside",
            ),
            ("server { limit_req_statuz 429; }", 1, "unknown directive"),
        ] {
            let e = NginxConf::from_str(t, Path::new("e.conf"))
                .err()
                .unwrap_or_else(|| panic!("{t}"));
            assert_eq!(e.line, line, "{t}: {e}");
            assert!(e.to_string().contains(want), "{t}: {e}");
        }
    }
}
