//! The matcher algebra: conditions on a request, their normal form, and the
//! first-order [`Matcher`]s they are cut into.

use ipnet::IpNet;
use regex::bytes::Regex;

use crate::replay::matcher::Matcher;

/// A condition on a request, before it is cut into [`Matcher`]s.
#[derive(Clone, Debug)]
pub(super) enum Cond {
    True,
    False,
    And(Vec<Cond>),
    Or(Vec<Cond>),
    Not(Box<Cond>),
    Leaf(Leaf),
}

#[derive(Clone, Debug)]
pub(super) enum Leaf {
    /// On the path as the handler sees it (after rewrites).
    Path(Regex),
    Query(Regex),
    Method(Vec<String>),
    Host(Vec<String>),
    Agent(Regex),
    Referer(Regex),
    HasReferer(bool),
    HasCookie(bool),
    Identified(bool),
    Cidr(Vec<IpNet>),
}

pub(super) fn and(v: Vec<Cond>) -> Cond {
    let mut out = Vec::new();
    for c in v {
        match c {
            Cond::True => {}
            Cond::False => return Cond::False,
            Cond::And(x) => out.extend(x),
            c => out.push(c),
        }
    }
    match out.len() {
        0 => Cond::True,
        1 => out.pop().expect("one"),
        _ => Cond::And(out),
    }
}

pub(super) fn or(v: Vec<Cond>) -> Cond {
    let mut out = Vec::new();
    for c in v {
        match c {
            Cond::False => {}
            Cond::True => return Cond::True,
            Cond::Or(x) => out.extend(x),
            c => out.push(c),
        }
    }
    match out.len() {
        0 => Cond::False,
        1 => out.pop().expect("one"),
        _ => Cond::Or(out),
    }
}

pub(super) fn not(c: Cond) -> Cond {
    match c {
        Cond::True => Cond::False,
        Cond::False => Cond::True,
        Cond::Not(x) => *x,
        c => Cond::Not(Box::new(c)),
    }
}

/// `c` with its path conditions decided for the static path `p` (a rewrite target).
pub(super) fn at_path(c: &Cond, p: Option<&str>) -> Cond {
    let Some(p) = p else { return c.clone() };
    match c {
        Cond::Leaf(Leaf::Path(re)) => {
            if re.is_match(p.as_bytes()) {
                Cond::True
            } else {
                Cond::False
            }
        }
        Cond::And(v) => and(v.iter().map(|x| at_path(x, Some(p))).collect()),
        Cond::Or(v) => or(v.iter().map(|x| at_path(x, Some(p))).collect()),
        Cond::Not(x) => not(at_path(x, Some(p))),
        c => c.clone(),
    }
}

/// A literal of a conjunction: a leaf or its negation.
pub(super) type Lit = (bool, Leaf);

pub(super) const MAX_TERMS: usize = 512;

/// Disjunctive normal form; `None` when it would exceed [`MAX_TERMS`].
pub(super) fn dnf(c: &Cond, neg: bool) -> Option<Vec<Vec<Lit>>> {
    Some(match (c, neg) {
        (Cond::True, false) | (Cond::False, true) => vec![Vec::new()],
        (Cond::False, false) | (Cond::True, true) => Vec::new(),
        (Cond::Leaf(l), n) => vec![vec![(!n, l.clone())]],
        (Cond::Not(x), n) => dnf(x, !n)?,
        (Cond::Or(v), false) | (Cond::And(v), true) => {
            let mut out = Vec::new();
            for x in v {
                out.extend(dnf(x, neg)?);
                if out.len() > MAX_TERMS {
                    return None;
                }
            }
            out
        }
        (Cond::And(v), false) | (Cond::Or(v), true) => {
            let mut acc: Vec<Vec<Lit>> = vec![Vec::new()];
            for x in v {
                let d = dnf(x, neg)?;
                let mut next = Vec::new();
                for a in &acc {
                    for t in &d {
                        let mut m = a.clone();
                        m.extend(t.iter().cloned());
                        next.push(m);
                    }
                }
                if next.len() > MAX_TERMS {
                    return None;
                }
                acc = next;
            }
            acc
        }
    })
}

pub(super) fn leaf_matcher(l: &Leaf) -> Matcher {
    let mut m = Matcher::default();
    put(&mut m, l);
    m
}

/// Adds a positive leaf to `m`; a field already set is combined with a double negation.
pub(super) fn put(m: &mut Matcher, l: &Leaf) -> bool {
    let must = |m: &mut Matcher, l: &Leaf| {
        m.not.push(Matcher {
            not: vec![leaf_matcher(l)],
            ..Matcher::default()
        });
    };
    let b = |v: &[String]| -> Vec<Vec<u8>> { v.iter().map(|s| s.as_bytes().to_vec()).collect() };
    match l {
        Leaf::Path(re) if m.path_regex.is_none() => m.path_regex = Some(re.clone()),
        Leaf::Query(re) if m.query_regex.is_none() => m.query_regex = Some(re.clone()),
        Leaf::Agent(re) if m.ua_regex.is_none() => m.ua_regex = Some(re.clone()),
        Leaf::Referer(re) if m.referer_regex.is_none() => m.referer_regex = Some(re.clone()),
        Leaf::Cidr(n) if m.cidr.is_empty() => m.cidr = n.clone(),
        Leaf::Method(v) if m.method.is_empty() => m.method = b(v),
        Leaf::Host(v) if m.host.is_empty() => m.host = b(v),
        Leaf::Method(v) => {
            m.method
                .retain(|x| v.iter().any(|y| y.as_bytes().eq_ignore_ascii_case(x)));
            return !m.method.is_empty();
        }
        Leaf::Host(v) => {
            m.host
                .retain(|x| v.iter().any(|y| y.as_bytes().eq_ignore_ascii_case(x)));
            return !m.host.is_empty();
        }
        Leaf::HasReferer(w) => return *m.has_referer.get_or_insert(*w) == *w,
        Leaf::HasCookie(w) => return *m.has_cookie.get_or_insert(*w) == *w,
        Leaf::Identified(w) => return *m.identified.get_or_insert(*w) == *w,
        l => must(m, l),
    }
    true
}

/// A conjunction as one matcher; `None` if it cannot hold.
pub(super) fn term_matcher(t: &[Lit]) -> Option<Matcher> {
    let mut m = Matcher::default();
    for (pos, l) in t {
        if *pos {
            if !put(&mut m, l) {
                return None;
            }
        } else {
            m.not.push(leaf_matcher(l));
        }
    }
    Some(m)
}

/// The path after the rewrites so far, per case: `None` = the path as logged.
pub(super) type Cases = Vec<(Cond, Option<String>)>;

/// `c` (on the path as the handler sees it) as a condition on the logged request.
pub(super) fn now(c: &Cond, cases: &Cases) -> Cond {
    or(cases
        .iter()
        .map(|(k, p)| and(vec![k.clone(), at_path(c, p.as_deref())]))
        .collect())
}
