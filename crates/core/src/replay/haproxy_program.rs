//! The `http-request` program of a HAProxy frontend ([`Program`]): `track-scN`,
//! `sc-inc-gpc0`, `deny` and `return`/`allow` rules with their ACLs, run over the
//! frontend's stick tables (the [`Zone`]s of a policy) as HAProxy 2.6 runs them
//! (`src/http_act.c`). The tables and their counters are in `haproxy.rs`.

use super::decision::{Decision, RuleId, Verdict, ZoneId};
use super::key::KeySpec;
use super::matcher::Matcher;
use super::request::Request;
use super::zone::Zone;

/// Comparison of an ACL on an integer fetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `gt`
    Gt,
    /// `ge`
    Ge,
    /// `lt`
    Lt,
    /// `le`
    Le,
    /// `eq` (or a bare number)
    Eq,
}

impl Cmp {
    /// Parses `gt`, `ge`, `lt`, `le`, `eq`.
    pub fn parse(s: &str) -> Option<Cmp> {
        Some(match s {
            "gt" => Cmp::Gt,
            "ge" => Cmp::Ge,
            "lt" => Cmp::Lt,
            "le" => Cmp::Le,
            "eq" => Cmp::Eq,
            _ => return None,
        })
    }

    fn holds(self, v: u64, x: u64) -> bool {
        match self {
            Cmp::Gt => v > x,
            Cmp::Ge => v >= x,
            Cmp::Lt => v < x,
            Cmp::Le => v <= x,
            Cmp::Eq => v == x,
        }
    }

    /// The operator as written.
    pub fn word(self) -> &'static str {
        match self {
            Cmp::Gt => "gt",
            Cmp::Ge => "ge",
            Cmp::Lt => "lt",
            Cmp::Le => "le",
            Cmp::Eq => "eq",
        }
    }
}

/// What an ACL term tests.
#[derive(Clone, Debug)]
pub enum Test {
    /// A request-level test (path, method, source…), as a matcher.
    Req(Box<Matcher>),
    /// `sc_http_req_rate(N) OP X` / `scN_http_req_rate OP X`.
    Rate {
        /// The sticky counter slot.
        slot: u8,
        /// The comparison.
        cmp: Cmp,
        /// The value.
        value: u64,
    },
    /// `sc_get_gpc0(N) OP X` / `scN_get_gpc0 OP X`.
    Gpc0 {
        /// The sticky counter slot.
        slot: u8,
        /// The comparison.
        cmp: Cmp,
        /// The value.
        value: u64,
    },
    /// `TRUE` / `FALSE`.
    Const(bool),
}

/// One ACL term, possibly negated (`!`); a named ACL is the OR of its lines.
#[derive(Clone, Debug)]
pub struct Term {
    /// `!`
    pub neg: bool,
    /// The tests (OR-ed: a named ACL declared on several lines).
    pub any: Vec<Test>,
}

/// A condition: OR of AND-ed terms (`if A B || C`); `unless` negates it. Empty = always.
#[derive(Clone, Debug, Default)]
pub struct Cond {
    /// Alternatives (`||`), each a list of terms that must all hold.
    pub or: Vec<Vec<Term>>,
    /// `unless`.
    pub unless: bool,
}

/// How a tracked key is computed.
#[derive(Clone, Debug)]
pub enum TrackKey {
    /// A request field (`src` = ip, `src,ipmask(N)` = prefix, `req.hdr(user-agent)` = agent…).
    Field(KeySpec),
    /// A constant (`str(site)`): one entry for everybody.
    Const(Vec<u8>),
}

/// One `http-request` rule of a frontend, in order.
#[derive(Clone, Debug)]
pub enum Action {
    /// `track-scN <key> [table T] [if …]`.
    Track {
        /// N.
        slot: u8,
        /// The key.
        key: TrackKey,
        /// The table (a zone of the policy).
        table: ZoneId,
        /// The condition.
        cond: Cond,
    },
    /// `sc-inc-gpc0(N) [if …]`.
    IncGpc0 {
        /// N.
        slot: u8,
        /// The condition.
        cond: Cond,
    },
    /// `deny`/`tarpit` (final): the request is refused.
    Deny {
        /// The policy rule naming this deny.
        rule: RuleId,
        /// The condition.
        cond: Cond,
    },
    /// `return`/`allow` (final): the request passes, later rules do not run.
    Allow {
        /// The condition.
        cond: Cond,
    },
}

/// One frontend's `http-request` program.
#[derive(Clone, Debug)]
pub struct Frontend {
    /// The frontend's name (`%ft` in the log).
    pub name: String,
    /// The policy rule for requests it passes.
    pub rule: RuleId,
    /// The rules, in order.
    pub actions: Vec<Action>,
}

/// The `http-request` programs of a haproxy.cfg, per frontend. Requests are sent to the
/// frontend named by their `host` (the HAProxy log parser puts `%ft` there); with one
/// frontend, every request goes to it.
#[derive(Clone, Debug, Default)]
pub struct Program {
    /// The frontends.
    pub frontends: Vec<Frontend>,
    /// Matchers the program evaluates (so that the report keeps the fields they read).
    pub matchers: Vec<Matcher>,
    /// Keys the program computes.
    pub keys: Vec<KeySpec>,
}

/// Slots of sticky counters (`MAX_SESS_STKCTR` is 3 by default; 12 allowed here).
pub const SLOTS: usize = 12;

/// Per-request scratch: which entry each slot tracks.
#[derive(Default)]
pub(crate) struct Scratch {
    slots: [Option<(ZoneId, u32, u32)>; SLOTS],
    keys: Vec<u8>,
    buf: Vec<u8>,
}

impl Program {
    fn frontend(&self, req: &Request<'_>) -> Option<&Frontend> {
        if self.frontends.len() == 1 {
            return self.frontends.first();
        }
        let host = req.host?;
        self.frontends.iter().find(|f| f.name.as_bytes() == host)
    }

    /// Runs the request through its frontend's rules at `now`.
    pub(crate) fn decide(
        &self,
        req: &Request<'_>,
        now: i64,
        zones: &mut [Zone],
        s: &mut Scratch,
    ) -> Verdict {
        let Some(fe) = self.frontend(req) else {
            return Verdict::OUT_OF_SCOPE;
        };
        s.slots = [None; SLOTS];
        s.keys.clear();
        let mut touched: Option<ZoneId> = None;
        for a in &fe.actions {
            match a {
                Action::Track {
                    slot,
                    key,
                    table,
                    cond,
                } => {
                    let si = *slot as usize;
                    if s.slots[si].is_some() || !eval(cond, req, now, zones, s) {
                        continue;
                    }
                    s.buf.clear();
                    let ok = match key {
                        TrackKey::Field(k) => k.extract(req, &mut s.buf),
                        TrackKey::Const(c) => {
                            s.buf.push(b'c');
                            s.buf.extend_from_slice(c);
                            true
                        }
                    };
                    if !ok {
                        continue;
                    }
                    let start = s.keys.len() as u32;
                    s.keys.extend_from_slice(&s.buf);
                    s.slots[si] = Some((*table, start, s.keys.len() as u32));
                    let z = &mut zones[*table as usize];
                    z.counters.checked += 1;
                    if let Some(t) = z.table_mut() {
                        t.track(now, &s.buf);
                    }
                    touched.get_or_insert(*table);
                }
                Action::IncGpc0 { slot, cond } => {
                    let Some((zid, a, b)) = s.slots[*slot as usize] else {
                        continue;
                    };
                    if !eval(cond, req, now, zones, s) {
                        continue;
                    }
                    let key = &s.keys[a as usize..b as usize];
                    if let Some(t) = zones[zid as usize].table_mut() {
                        t.inc_gpc0(now, key);
                    }
                }
                Action::Deny { rule, cond } => {
                    if eval(cond, req, now, zones, s) {
                        let zone = blame(cond, s).or(touched);
                        if let Some(z) = zone {
                            zones[z as usize].counters.refused += 1;
                        }
                        return Verdict {
                            decision: Decision::Refuse,
                            zone,
                            rule: Some(*rule),
                            boundary: false,
                        };
                    }
                }
                Action::Allow { cond } => {
                    if eval(cond, req, now, zones, s) {
                        break;
                    }
                }
            }
        }
        match touched {
            None => Verdict::OUT_OF_SCOPE,
            Some(_) => {
                for (z, _, _) in s.slots.iter().flatten() {
                    zones[*z as usize].counters.passed += 1;
                }
                Verdict {
                    decision: Decision::Admit,
                    zone: None,
                    rule: Some(fe.rule),
                    boundary: false,
                }
            }
        }
    }
}

/// The table of the first counter test of a condition whose slot is tracked.
fn blame(cond: &Cond, s: &Scratch) -> Option<ZoneId> {
    cond.or
        .iter()
        .flatten()
        .flat_map(|t| &t.any)
        .find_map(|t| match t {
            Test::Rate { slot, .. } | Test::Gpc0 { slot, .. } => {
                s.slots.get(*slot as usize).copied().flatten().map(|x| x.0)
            }
            _ => None,
        })
}

fn eval(cond: &Cond, req: &Request<'_>, now: i64, zones: &[Zone], s: &Scratch) -> bool {
    if cond.or.is_empty() {
        return !cond.unless;
    }
    let r = cond.or.iter().any(|and| {
        and.iter().all(|t| {
            let v = t.any.iter().any(|x| test(x, req, now, zones, s));
            v != t.neg
        })
    });
    r != cond.unless
}

fn test(t: &Test, req: &Request<'_>, now: i64, zones: &[Zone], s: &Scratch) -> bool {
    match t {
        Test::Req(m) => m.matches(req),
        Test::Const(b) => *b,
        Test::Rate { slot, cmp, value } | Test::Gpc0 { slot, cmp, value } => {
            // An untracked slot: the fetch fails and the ACL is false.
            let Some((zid, a, b)) = s.slots.get(*slot as usize).copied().flatten() else {
                return false;
            };
            let Some(tab) = zones[zid as usize].table() else {
                return false;
            };
            let key = &s.keys[a as usize..b as usize];
            let v = if matches!(t, Test::Rate { .. }) {
                tab.rate(now, key)
            } else {
                tab.gpc0(now, key)
            };
            cmp.holds(v, *value)
        }
    }
}
