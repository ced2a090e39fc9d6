//! nginx variables as the replay can evaluate them from a log line: the built-ins a log
//! carries (`$binary_remote_addr`, `$http_user_agent`, `$uri`, …) and `map`/`geo`
//! variables over them, turned into first-match lists of cases (conditions on the
//! request → a key or an empty value). Conditions are conjunctions of positive
//! [`Lit`]erals: in a first-match list a case needs only the tests that were true on its
//! way (the false ones are implied by the earlier cases not matching).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::IpAddr;

use ipnet::IpNet;
use regex::bytes::Regex;

use super::syntax::{ConfError, Directive};
use crate::replay::key::KeySpec;
use crate::replay::matcher::Matcher;

/// One test on a request.
#[derive(Clone, Debug)]
pub enum Lit {
    /// The path starts with this.
    Prefix(Vec<u8>),
    /// The path is this.
    Exact(Vec<u8>),
    /// The path matches.
    PathRe(Regex),
    /// The Host is one of these.
    Host(Vec<Vec<u8>>),
    /// The client is in one of these networks.
    Cidr(Vec<IpNet>),
    /// The User-Agent matches.
    Agent(Regex),
    /// The Referer matches.
    Referer(Regex),
    /// The query matches.
    Query(Regex),
    /// The method is this.
    Method(Vec<u8>),
}

/// A conjunction of literals as one [`Matcher`]; `None` when it can never hold (two
/// prefixes that are not prefixes of one another, an exact path outside a prefix).
pub fn matcher_of(lits: &[Lit]) -> Option<Matcher> {
    let mut prefix: Option<&[u8]> = None;
    let mut exact: Option<&[u8]> = None;
    for l in lits {
        match l {
            Lit::Prefix(p) => match prefix {
                None => prefix = Some(p),
                Some(q) if p.starts_with(q) => prefix = Some(p),
                Some(q) if q.starts_with(p) => {}
                Some(_) => return None,
            },
            Lit::Exact(e) => match exact {
                None => exact = Some(e),
                Some(x) if x == e.as_slice() => {}
                Some(_) => return None,
            },
            _ => {}
        }
    }
    let mut m = Matcher::default();
    match (exact, prefix) {
        (Some(e), Some(p)) if !e.starts_with(p) => return None,
        (Some(e), _) => m.path = vec![e.to_vec()],
        (None, Some(p)) if !p.is_empty() => m.path_prefix = vec![p.to_vec()],
        _ => {}
    }
    for l in lits {
        let mut one = Matcher::default();
        let slot_free = match l {
            Lit::Prefix(_) | Lit::Exact(_) => continue,
            Lit::PathRe(r) => {
                one.path_regex = Some(r.clone());
                m.path_regex.is_none()
            }
            Lit::Host(h) => {
                one.host = h.clone();
                m.host.is_empty()
            }
            Lit::Cidr(c) => {
                one.cidr = c.clone();
                m.cidr.is_empty()
            }
            Lit::Agent(r) => {
                one.ua_regex = Some(r.clone());
                m.ua_regex.is_none()
            }
            Lit::Referer(r) => {
                one.referer_regex = Some(r.clone());
                m.referer_regex.is_none()
            }
            Lit::Query(r) => {
                one.query_regex = Some(r.clone());
                m.query_regex.is_none()
            }
            Lit::Method(x) => {
                one.method = vec![x.clone()];
                m.method.is_empty()
            }
        };
        if slot_free {
            merge_into(&mut m, one);
        } else {
            // A second test on the same field: "not (not this)".
            m.not.push(Matcher {
                not: vec![one],
                ..Matcher::default()
            });
        }
    }
    Some(m)
}

fn merge_into(m: &mut Matcher, one: Matcher) {
    if one.path_regex.is_some() {
        m.path_regex = one.path_regex;
    }
    if !one.host.is_empty() {
        m.host = one.host;
    }
    if !one.cidr.is_empty() {
        m.cidr = one.cidr;
    }
    if one.ua_regex.is_some() {
        m.ua_regex = one.ua_regex;
    }
    if one.referer_regex.is_some() {
        m.referer_regex = one.referer_regex;
    }
    if one.query_regex.is_some() {
        m.query_regex = one.query_regex;
    }
    if !one.method.is_empty() {
        m.method = one.method;
    }
}

/// A built-in variable the log supplies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prim {
    /// `$remote_addr`, `$binary_remote_addr`.
    Addr,
    /// `$http_user_agent`.
    Agent,
    /// `$host`, `$http_host`.
    Host,
    /// `$uri`, `$document_uri`.
    Uri,
    /// `$request_uri`.
    RequestUri,
    /// `$args`, `$query_string`.
    Args,
    /// `$request_method`.
    Method,
    /// `$http_referer`.
    Referer,
    /// `$remote_user`.
    User,
}

impl Prim {
    fn of(name: &str) -> Option<Prim> {
        Some(match name {
            "remote_addr" | "binary_remote_addr" => Prim::Addr,
            "http_user_agent" => Prim::Agent,
            "host" | "http_host" => Prim::Host,
            "uri" | "document_uri" => Prim::Uri,
            "request_uri" => Prim::RequestUri,
            "args" | "query_string" => Prim::Args,
            "request_method" => Prim::Method,
            "http_referer" => Prim::Referer,
            "remote_user" => Prim::User,
            _ => return None,
        })
    }

    fn key(self) -> KeySpec {
        match self {
            Prim::Addr => KeySpec::Ip,
            Prim::Agent => KeySpec::Agent,
            Prim::Host => KeySpec::Host,
            Prim::Uri => KeySpec::Path,
            Prim::RequestUri => KeySpec::Uri,
            Prim::Args => KeySpec::Query,
            Prim::Method => KeySpec::Method,
            Prim::Referer => KeySpec::Referer,
            Prim::User => KeySpec::User,
        }
    }

    /// The condition "this variable equals `s`" (map strings ignore case), if a matcher
    /// can say it.
    fn eq(self, s: &str) -> Option<Lit> {
        let re = |s: &str| Regex::new(&format!("(?i)^{}$", regex::escape(s))).ok();
        Some(match self {
            Prim::Addr => Lit::Cidr(vec![IpNet::from(s.parse::<IpAddr>().ok()?)]),
            Prim::Agent => Lit::Agent(re(s)?),
            Prim::Host => Lit::Host(vec![s.to_ascii_lowercase().into_bytes()]),
            Prim::Uri => Lit::PathRe(re(s)?),
            Prim::Args => Lit::Query(re(s)?),
            Prim::Method => Lit::Method(s.as_bytes().to_vec()),
            Prim::Referer => Lit::Referer(re(s)?),
            Prim::RequestUri | Prim::User => return None,
        })
    }

    /// The condition "this variable matches `re`", if a matcher can say it.
    fn re(self, re: &Regex) -> Option<Lit> {
        Some(match self {
            Prim::Agent => Lit::Agent(re.clone()),
            Prim::Uri => Lit::PathRe(re.clone()),
            Prim::Args => Lit::Query(re.clone()),
            Prim::Referer => Lit::Referer(re.clone()),
            _ => return None,
        })
    }
}

/// What a variable (or a key) evaluates to in one case.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Val {
    /// Empty: a `limit_req` with this key does not apply.
    Empty,
    /// A constant: everybody in this case shares one bucket.
    Const(String),
    /// Per request field.
    Key(KeySpec),
    /// Not something the log can supply; the reason.
    Unsupported(String),
}

/// One case of a first-match list.
#[derive(Clone, Debug)]
pub struct Case {
    /// The tests (all must hold).
    pub lits: Vec<Lit>,
    /// The value.
    pub val: Val,
}

enum Raw {
    Prim(Prim),
    Val(Val),
}

struct RawCase {
    lits: Vec<Lit>,
    val: Raw,
}

/// A `map` entry's source pattern.
enum Pattern {
    Exact(String),
    Re(Regex, String),
}

struct MapDef {
    source: String,
    entries: Vec<(Pattern, String)>,
    default: String,
    at: String,
}

struct GeoDef {
    source: Option<String>,
    /// (network, value), most specific first.
    nets: Vec<(IpNet, String)>,
    default: String,
    at: String,
}

/// The `map` and `geo` variables of an `http` block.
#[derive(Default)]
pub struct Vars {
    maps: HashMap<String, MapDef>,
    geos: HashMap<String, GeoDef>,
    /// Evaluation steps taken: values evaluated and tests added to their cases (bounded
    /// by [`MAX_STEPS`]: maps of maps multiply their cases).
    steps: Cell<u64>,
    /// "`prim` equals this string" per variable and string, compiled once (a map's
    /// entries are tested again each time the map is reached).
    eq_lits: RefCell<HashMap<Prim, HashMap<String, Option<Lit>>>>,
    /// Things found but not evaluated: (file:line, message).
    pub notes: Vec<(String, String)>,
}

/// The most cases and tests in them that the `map`/`geo` variables of one configuration
/// may evaluate to, all keys together (a map string compiled to a regex counts 8): a
/// test can hold a regex (about a kilobyte a copy, ten compiled), and a key with more
/// than 20,000 cases cannot become rules anyway.
pub const MAX_STEPS: u64 = 100_000;

/// A regex the replay's engine does not take (PCRE look-around, backreferences).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsupportedRegex {
    /// The pattern as written.
    pub pattern: String,
    /// The engine's reason (its last line).
    pub reason: String,
}

impl std::fmt::Display for UnsupportedRegex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "regex {:?} is not supported by the replay's regex engine (no look-around or backreferences): {}",
            self.pattern, self.reason
        )
    }
}

impl std::error::Error for UnsupportedRegex {}

/// Map and geo variables that expand past [`MAX_STEPS`] cases and tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TooManyCases {
    /// The value that expands.
    pub value: String,
}

impl std::fmt::Display for TooManyCases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "\"{}\": its map and geo variables expand to more than {} cases and tests (maps of maps multiply their cases)",
            self.value, MAX_STEPS
        )
    }
}

impl std::error::Error for TooManyCases {}

/// Compiles an nginx (PCRE) regex for the replay: `~*` is case-insensitive.
pub fn nginx_regex(re: &str, caseless: bool) -> Result<Regex, UnsupportedRegex> {
    let src = if caseless {
        format!("(?i){re}")
    } else {
        re.to_string()
    };
    Regex::new(&src).map_err(|e| UnsupportedRegex {
        pattern: re.to_string(),
        reason: e.to_string().lines().last().unwrap_or("").to_string(),
    })
}

impl Vars {
    /// Reads a `map SOURCE $VAR { … }` block.
    pub fn add_map(&mut self, d: &Directive) -> Result<(), ConfError> {
        let t = d.texts();
        if t.len() != 2 || !t[1].starts_with('$') {
            return Err(
                d.error("\"map\" takes a source and a $variable: map $remote_addr $key { … }")
            );
        }
        let name = t[1][1..].to_string();
        let mut def = MapDef {
            source: t[0].to_string(),
            entries: Vec::new(),
            default: String::new(),
            at: d.at(),
        };
        for e in d.block.as_deref().unwrap_or(&[]) {
            if e.block.is_some() {
                return Err(e.error("a map entry takes no block"));
            }
            let args = e.texts();
            match (e.name.as_str(), args.len()) {
                ("hostnames", 0) => self.notes.push((
                    e.at(),
                    "map hostnames: wildcard names are matched as plain strings".into(),
                )),
                ("volatile", 0) => {}
                ("default", 1) => def.default = args[0].to_string(),
                (_, 1) => {
                    let key = e.name.strip_prefix('\\').unwrap_or(&e.name);
                    let pat = if e.name.starts_with('~') {
                        let (re, ci) = match e.name.strip_prefix("~*") {
                            Some(r) => (r, true),
                            None => (&e.name[1..], false),
                        };
                        Pattern::Re(
                            nginx_regex(re, ci).map_err(|m| e.error(m.to_string()))?,
                            re.to_string(),
                        )
                    } else {
                        Pattern::Exact(key.to_string())
                    };
                    def.entries.push((pat, args[0].to_string()));
                }
                _ => {
                    return Err(e.error(format!(
                        "invalid map entry \"{}\": give a source value and a result",
                        e.name
                    )));
                }
            }
        }
        self.maps.insert(name, def);
        Ok(())
    }

    /// Reads a `geo [SOURCE] $VAR { … }` block.
    pub fn add_geo(&mut self, d: &Directive) -> Result<(), ConfError> {
        let t = d.texts();
        let (source, var) = match t.as_slice() {
            [v] => (None, *v),
            [s, v] => (Some(s.to_string()), *v),
            _ => return Err(d.error("\"geo\" takes [source] $variable")),
        };
        let Some(name) = var.strip_prefix('$') else {
            return Err(d.error("\"geo\": the variable must start with $"));
        };
        let mut def = GeoDef {
            source,
            nets: Vec::new(),
            default: String::new(),
            at: d.at(),
        };
        let mut ranges = false;
        for e in d.block.as_deref().unwrap_or(&[]) {
            let args = e.texts();
            match (e.name.as_str(), args.len()) {
                ("ranges", 0) => ranges = true,
                ("default", 1) => def.default = args[0].to_string(),
                ("proxy" | "proxy_recursive" | "delete", _) => self.notes.push((
                    e.at(),
                    format!(
                        "geo {}: not evaluated (the log's client address is used as it is)",
                        e.name
                    ),
                )),
                (net, 1) => {
                    let nets = if ranges {
                        range_nets(net).ok_or_else(|| {
                            e.error(format!(
                                "invalid geo range \"{net}\" (want A.B.C.D-E.F.G.H)"
                            ))
                        })?
                    } else {
                        vec![parse_net(net).ok_or_else(|| {
                            e.error(format!(
                                "invalid geo network \"{net}\" (want 10.0.0.0/8 or an address)"
                            ))
                        })?]
                    };
                    for n in nets {
                        def.nets.push((n, args[0].to_string()));
                    }
                }
                _ => return Err(e.error(format!("invalid geo entry \"{}\"", e.name))),
            }
        }
        // Longest prefix first (stable: equal lengths keep file order; nginx lets the
        // later one win, so reverse before the stable sort).
        def.nets.reverse();
        def.nets
            .sort_by_key(|(n, _)| std::cmp::Reverse(n.prefix_len()));
        self.geos.insert(name.to_string(), def);
        Ok(())
    }

    /// The cases of a complex value (a key: `$binary_remote_addr`, `"site"`, `$limit`);
    /// an error when the maps and geos it goes through multiply into more than
    /// [`MAX_STEPS`] cases and tests (all values together).
    pub fn value(&self, text: &str) -> Result<Vec<Case>, TooManyCases> {
        let raw = self.raw_value(text, None, 0);
        if self.steps.get() > MAX_STEPS {
            return Err(TooManyCases {
                value: text.to_string(),
            });
        }
        Ok(raw
            .into_iter()
            .map(|c| Case {
                lits: c.lits,
                val: match c.val {
                    Raw::Prim(p) => Val::Key(p.key()),
                    Raw::Val(v) => v,
                },
            })
            .collect())
    }

    /// Spends `n` steps; true once past the bound.
    fn spend(&self, n: usize) -> bool {
        self.steps.set(self.steps.get().saturating_add(n as u64));
        self.steps.get() > MAX_STEPS
    }

    /// Whether the bound is passed (every loop over entries stops: value() reports it).
    fn is_over(&self) -> bool {
        self.steps.get() > MAX_STEPS
    }

    /// [`Prim::eq`], compiled once per variable and string.
    fn eq_lit(&self, p: Prim, s: &str) -> Option<Lit> {
        if let Some(l) = self.eq_lits.borrow().get(&p).and_then(|m| m.get(s)) {
            return l.clone();
        }
        // A compiled regex (most variables) weighs about as much as eight cases.
        self.spend(8);
        let l = p.eq(s);
        self.eq_lits
            .borrow_mut()
            .entry(p)
            .or_default()
            .insert(s.to_string(), l.clone());
        l
    }

    fn raw_value(&self, text: &str, caps: Option<&Captures>, depth: usize) -> Vec<RawCase> {
        let one = |v: Raw| {
            vec![RawCase {
                lits: vec![],
                val: v,
            }]
        };
        if depth > 16 {
            return one(Raw::Val(Val::Unsupported("variables nest too deep".into())));
        }
        // Past the bound every value is cut short (value() reports it).
        if self.spend(1) {
            return one(Raw::Val(Val::Empty));
        }
        let parts = split_vars(text);
        let vars: Vec<&str> = parts.iter().filter_map(|p| p.var()).collect();
        if vars.is_empty() {
            return one(Raw::Val(if text.is_empty() {
                Val::Empty
            } else {
                Val::Const(text.to_string())
            }));
        }
        // Substitute what is constant (captures of a constant match).
        let mut all_const = String::new();
        let mut consts = true;
        for p in &parts {
            match p {
                Part::Text(t) => all_const.push_str(t),
                Part::Var(v) => match caps.and_then(|c| c.get(v)) {
                    Some(CapVal::Text(t)) => all_const.push_str(t),
                    _ => consts = false,
                },
            }
        }
        if consts {
            return one(Raw::Val(if all_const.is_empty() {
                Val::Empty
            } else {
                Val::Const(all_const)
            }));
        }
        if parts.len() == 1 {
            let v = vars[0];
            if let Some(CapVal::Prefix(bits)) = caps.and_then(|c| c.get(v)) {
                return one(Raw::Val(Val::Key(KeySpec::Prefix {
                    v4: *bits,
                    v6: crate::replay::key::DEFAULT_V6_PREFIX,
                })));
            }
            return self.raw_var(v, depth);
        }
        one(Raw::Val(Val::Unsupported(format!(
            "\"{text}\" joins several values; only one variable or a constant can be replayed"
        ))))
    }

    fn raw_var(&self, name: &str, depth: usize) -> Vec<RawCase> {
        let one = |v: Raw| {
            vec![RawCase {
                lits: vec![],
                val: v,
            }]
        };
        if let Some(p) = Prim::of(name) {
            return one(Raw::Prim(p));
        }
        if let Some(m) = self.maps.get(name) {
            return self.eval_map(m, depth);
        }
        if let Some(g) = self.geos.get(name) {
            return self.eval_geo(g, depth);
        }
        let why = if name.chars().all(|c| c.is_ascii_digit()) {
            format!("${name} is a regex capture outside its regex")
        } else if name.starts_with("http_")
            || name.starts_with("cookie_")
            || name.starts_with("arg_")
        {
            format!("${name}: the log does not carry this header, cookie or argument")
        } else {
            format!("${name}: the log cannot supply this variable")
        };
        one(Raw::Val(Val::Unsupported(why)))
    }

    fn eval_geo(&self, g: &GeoDef, depth: usize) -> Vec<RawCase> {
        if let Some(s) = &g.source
            && !matches!(s.as_str(), "$remote_addr" | "$binary_remote_addr")
        {
            return vec![RawCase {
                lits: vec![],
                val: Raw::Val(Val::Unsupported(format!(
                    "geo at {} reads {s}; only $remote_addr can be replayed",
                    g.at
                ))),
            }];
        }
        let mut out = Vec::new();
        for (net, v) in &g.nets {
            if self.is_over() {
                break;
            }
            for mut c in self.raw_value(v, None, depth + 1) {
                self.spend(c.lits.len() + 1);
                c.lits.insert(0, Lit::Cidr(vec![*net]));
                out.push(c);
            }
        }
        out.extend(self.raw_value(&g.default, None, depth + 1));
        out
    }

    fn eval_map(&self, m: &MapDef, depth: usize) -> Vec<RawCase> {
        let mut out = Vec::new();
        for src in self.raw_value(&m.source, None, depth + 1) {
            match src.val {
                Raw::Val(Val::Const(ref c)) => {
                    for c2 in self.map_const(m, c, depth) {
                        self.spend(src.lits.len() + c2.lits.len());
                        out.push(join(&src.lits, c2));
                    }
                }
                Raw::Val(Val::Empty) => {
                    for c2 in self.map_const(m, "", depth) {
                        self.spend(src.lits.len() + c2.lits.len());
                        out.push(join(&src.lits, c2));
                    }
                }
                Raw::Val(Val::Unsupported(why)) => out.push(RawCase {
                    lits: src.lits,
                    val: Raw::Val(Val::Unsupported(why)),
                }),
                Raw::Val(Val::Key(_)) => out.push(RawCase {
                    lits: src.lits,
                    val: Raw::Val(Val::Unsupported(format!(
                        "map at {} reads a derived key; not replayed",
                        m.at
                    ))),
                }),
                Raw::Prim(p) => {
                    for c2 in self.map_prim(m, p, depth) {
                        self.spend(src.lits.len() + c2.lits.len());
                        out.push(join(&src.lits, c2));
                    }
                }
            }
        }
        out
    }

    /// The map over a known constant source: one answer (which may still have cases).
    fn map_const(&self, m: &MapDef, s: &str, depth: usize) -> Vec<RawCase> {
        for (p, v) in &m.entries {
            if let Pattern::Exact(e) = p
                && e.eq_ignore_ascii_case(s)
            {
                return self.raw_value(v, None, depth + 1);
            }
        }
        for (p, v) in &m.entries {
            if let Pattern::Re(re, _) = p
                && let Some(c) = re.captures(s.as_bytes())
            {
                let caps = Captures::from_match(re, &c);
                return self.raw_value(v, Some(&caps), depth + 1);
            }
        }
        self.raw_value(&m.default, None, depth + 1)
    }

    /// The map over a request field: a case per entry, exact strings first, then
    /// regexes in file order, then the default.
    fn map_prim(&self, m: &MapDef, p: Prim, depth: usize) -> Vec<RawCase> {
        let mut out = Vec::new();
        let unsupported = |why: String| RawCase {
            lits: vec![],
            val: Raw::Val(Val::Unsupported(why)),
        };
        for (pat, v) in &m.entries {
            if self.is_over() {
                break;
            }
            if let Pattern::Exact(e) = pat {
                let Some(lit) = self.eq_lit(p, e) else {
                    return vec![unsupported(format!(
                        "map at {}: matching {} against strings is not replayed",
                        m.at, m.source
                    ))];
                };
                for mut c in self.raw_value(v, None, depth + 1) {
                    self.spend(c.lits.len() + 1);
                    c.lits.insert(0, lit.clone());
                    out.push(c);
                }
            }
        }
        for (pat, v) in &m.entries {
            if self.is_over() {
                break;
            }
            if let Pattern::Re(re, src) = pat {
                if p == Prim::Addr
                    && let Some(bits) = ipv4_octet_prefix(re)
                {
                    // The regex takes every IPv4 address and captures its first octets.
                    let caps = Captures::prefix(re, bits);
                    for mut c in self.raw_value(v, Some(&caps), depth + 1) {
                        self.spend(c.lits.len() + 1);
                        c.lits
                            .insert(0, Lit::Cidr(vec!["0.0.0.0/0".parse().expect("net")]));
                        out.push(c);
                    }
                    continue;
                }
                let Some(lit) = p.re(re) else {
                    return vec![unsupported(format!(
                        "map at {}: regex {src:?} on {} is not replayed",
                        m.at, m.source
                    ))];
                };
                let caps = Captures::unknown(re);
                for mut c in self.raw_value(v, Some(&caps), depth + 1) {
                    if let Raw::Val(Val::Key(_)) = c.val
                        && v.contains('$')
                        && split_vars(v)
                            .iter()
                            .any(|x| x.var().is_some_and(|n| caps.has(n)))
                    {
                        c.val = Raw::Val(Val::Unsupported(format!(
                            "map at {}: a key from a regex capture is not replayed",
                            m.at
                        )));
                    }
                    self.spend(c.lits.len() + 1);
                    c.lits.insert(0, lit.clone());
                    out.push(c);
                }
            }
        }
        out.extend(self.raw_value(&m.default, None, depth + 1));
        out
    }
}

fn join(lits: &[Lit], mut c: RawCase) -> RawCase {
    let mut l = lits.to_vec();
    l.append(&mut c.lits);
    c.lits = l;
    c
}

enum CapVal {
    Text(String),
    /// The first N bits of an IPv4 address.
    Prefix(u8),
    Unknown,
}

struct Captures {
    vals: HashMap<String, CapVal>,
}

impl Captures {
    fn get(&self, name: &str) -> Option<&CapVal> {
        match self.vals.get(name) {
            Some(CapVal::Unknown) | None => None,
            v => v,
        }
    }

    fn has(&self, name: &str) -> bool {
        self.vals.contains_key(name)
    }

    fn from_match(re: &Regex, c: &regex::bytes::Captures<'_>) -> Captures {
        let mut vals = HashMap::new();
        for (i, name) in re.capture_names().enumerate() {
            let t = c
                .get(i)
                .map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned())
                .unwrap_or_default();
            vals.insert(i.to_string(), CapVal::Text(t.clone()));
            if let Some(n) = name {
                vals.insert(n.to_string(), CapVal::Text(t));
            }
        }
        Captures { vals }
    }

    fn unknown(re: &Regex) -> Captures {
        let mut vals = HashMap::new();
        for (i, name) in re.capture_names().enumerate() {
            vals.insert(i.to_string(), CapVal::Unknown);
            if let Some(n) = name {
                vals.insert(n.to_string(), CapVal::Unknown);
            }
        }
        Captures { vals }
    }

    /// Group 1 (and its name) hold the first `bits` of the address.
    fn prefix(re: &Regex, bits: u8) -> Captures {
        let mut c = Captures::unknown(re);
        c.vals.insert("1".into(), CapVal::Prefix(bits));
        if let Some(Some(n)) = re.capture_names().nth(1) {
            c.vals.insert(n.to_string(), CapVal::Prefix(bits));
        }
        if bits == 32 {
            c.vals.insert("0".into(), CapVal::Prefix(32));
        }
        c
    }
}

/// Whether `re`, on the text of an address, matches exactly the IPv4 addresses and
/// captures in group 1 their first 1–3 octets (`^(\d+\.\d+\.\d+)\.\d+$`): then it keys
/// per /8, /16 or /24. Checked on sample addresses, not by reading the regex.
fn ipv4_octet_prefix(re: &Regex) -> Option<u8> {
    if re.captures_len() < 2 {
        return None;
    }
    const V4: [&str; 6] = [
        "1.2.3.4",
        "10.20.30.40",
        "127.0.30.17",
        "192.168.100.200",
        "255.255.255.255",
        "0.0.0.0",
    ];
    const V6: [&str; 4] = ["::1", "2001:db8::1", "fe80::1:2:3", "2001:db8:1:2:3:4:5:6"];
    if V6.iter().any(|a| re.is_match(a.as_bytes())) {
        return None;
    }
    let mut bits = None;
    for a in V4 {
        let c = re.captures(a.as_bytes())?;
        let g = std::str::from_utf8(c.get(1)?.as_bytes()).ok()?;
        let octets: Vec<&str> = a.split('.').collect();
        let k = (1..=3).find(|&k| octets[..k].join(".") == g)?;
        let b = (k * 8) as u8;
        if bits.is_some_and(|x| x != b) {
            return None;
        }
        bits = Some(b);
    }
    bits
}

enum Part<'a> {
    Text(&'a str),
    Var(&'a str),
}

impl Part<'_> {
    fn var(&self) -> Option<&str> {
        match self {
            Part::Var(v) => Some(v),
            Part::Text(_) => None,
        }
    }
}

/// Splits `a$b${c}d` into text and variable names (nginx: `$` then `{name}` or
/// `[A-Za-z0-9_]+`).
fn split_vars(s: &str) -> Vec<Part<'_>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut start = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 1 < b.len() {
            let (ns, ne, next) = if b[i + 1] == b'{' {
                match s[i + 2..].find('}') {
                    Some(e) => (i + 2, i + 2 + e, i + 3 + e),
                    None => break,
                }
            } else {
                let mut e = i + 1;
                while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_') {
                    e += 1;
                }
                (i + 1, e, e)
            };
            if ne > ns {
                if i > start {
                    out.push(Part::Text(&s[start..i]));
                }
                out.push(Part::Var(&s[ns..ne]));
                i = next;
                start = next;
                continue;
            }
        }
        i += 1;
    }
    if start < b.len() {
        out.push(Part::Text(&s[start..]));
    }
    out
}

/// A network or a single address.
fn parse_net(s: &str) -> Option<IpNet> {
    s.parse::<IpNet>()
        .ok()
        .map(|n| n.trunc())
        .or_else(|| s.parse::<IpAddr>().ok().map(IpNet::from))
}

/// `A-B` (IPv4) as the fewest networks covering exactly that range.
fn range_nets(s: &str) -> Option<Vec<IpNet>> {
    let (a, b) = s.split_once('-')?;
    let a: u32 = a.trim().parse::<std::net::Ipv4Addr>().ok()?.into();
    let b: u32 = b.trim().parse::<std::net::Ipv4Addr>().ok()?.into();
    if a > b {
        return None;
    }
    let mut out = Vec::new();
    let mut lo = a as u64;
    let hi = b as u64;
    while lo <= hi {
        let mut size = if lo == 0 {
            32
        } else {
            lo.trailing_zeros().min(32)
        };
        while size > 0 && lo + (1u64 << size) - 1 > hi {
            size -= 1;
        }
        let net =
            ipnet::Ipv4Net::new(std::net::Ipv4Addr::from(lo as u32), (32 - size) as u8).ok()?;
        out.push(IpNet::V4(net));
        lo += 1u64 << size;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::conf::syntax::parse_str;

    fn vars(text: &str) -> Vars {
        let d = parse_str(text, std::path::Path::new("v.conf")).unwrap();
        let mut v = Vars::default();
        for x in &d {
            match x.name.as_str() {
                "map" => v.add_map(x).unwrap(),
                "geo" => v.add_geo(x).unwrap(),
                _ => {}
            }
        }
        v
    }

    #[test]
    fn maps_of_maps_are_bounded() {
        let mut t = String::new();
        for i in 0..16 {
            t.push_str(&format!(
                "map $uri $m{i} {{ /a $m{n}; /b $m{n}; /c $m{n}; /d $m{n}; default $m{n}; }}\n",
                n = i + 1
            ));
        }
        t.push_str("map $uri $m16 { default $binary_remote_addr; }\n");
        let v = vars(&t);
        let start = std::time::Instant::now();
        let e = v.value("$m0").unwrap_err().to_string();
        assert!(e.contains("more than 100000 cases"), "{e}");
        assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
    }

    #[test]
    fn geo_whitelist_makes_an_empty_key() {
        let v = vars(
            "geo $limit { default 1; 10.0.0.0/8 0; 10.1.0.0/16 1; 192.168.1.7 0; }\n\
             map $limit $limit_key { 0 \"\"; 1 $binary_remote_addr; }",
        );
        let cases = v.value("$limit_key").unwrap();
        let got: Vec<(String, Val)> = cases
            .iter()
            .map(|c| (format!("{:?}", c.lits), c.val.clone()))
            .collect();
        // Longest prefix first: 192.168.1.7/32, 10.1.0.0/16, 10.0.0.0/8, default.
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(got[0].0.contains("192.168.1.7/32") && got[0].1 == Val::Empty);
        assert!(got[1].0.contains("10.1.0.0/16") && got[1].1 == Val::Key(KeySpec::Ip));
        assert!(got[2].0.contains("10.0.0.0/8") && got[2].1 == Val::Empty);
        assert_eq!(got[3].1, Val::Key(KeySpec::Ip));
    }

    #[test]
    fn octet_regex_is_a_prefix_key() {
        let v = vars(
            "map $remote_addr $net24 { \"~^(?<n24>[0-9]+\\.[0-9]+\\.[0-9]+)\\.[0-9]+$\" $n24; default \"\"; }",
        );
        let c = v.value("$net24").unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].val, Val::Key(KeySpec::Prefix { v4: 24, v6: 48 }));
        assert_eq!(c[1].val, Val::Empty);
        assert!(c[1].lits.is_empty());
    }

    #[test]
    fn agent_map_and_unknown_variables() {
        let v = vars(
            "map $http_user_agent $k { default $binary_remote_addr; \"~*bot\" \"\"; Mozilla 1; }",
        );
        let c = v.value("$k").unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].val, Val::Const("1".into()));
        assert_eq!(c[1].val, Val::Empty);
        assert_eq!(c[2].val, Val::Key(KeySpec::Ip));
        let m = matcher_of(&c[1].lits).unwrap();
        assert!(m.ua_regex.unwrap().is_match(b"GoogleBOT/2"));
        assert!(
            matches!(&v.value("$http_x_forwarded_for").unwrap()[0].val, Val::Unsupported(m) if m.contains("header"))
        );
        assert!(matches!(
            &v.value("$a$b").unwrap()[0].val,
            Val::Unsupported(_)
        ));
        assert_eq!(
            v.value("\"site\"".trim_matches('"')).unwrap()[0].val,
            Val::Const("site".into())
        );
    }

    #[test]
    fn ranges_cover_exactly() {
        let n = range_nets("10.0.0.1-10.0.0.6").unwrap();
        let s: Vec<String> = n.iter().map(|n| n.to_string()).collect();
        assert_eq!(
            s,
            vec!["10.0.0.1/32", "10.0.0.2/31", "10.0.0.4/31", "10.0.0.6/32"]
        );
    }
}
