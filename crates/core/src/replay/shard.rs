//! `--keys K/N`: replay one shard of the keys, so that N tasks of a cluster can each run
//! the real engine on a part of the keys and their decisions add up to one run's.
//!
//! A per-key candidate (every zone counts per the same key: per address, per network,
//! per agent…) keeps no state shared between keys, so its decisions for one key depend
//! only on that key's requests: replaying the requests whose key falls in shard K gives,
//! for those requests, exactly the decisions of a full run. A site-wide candidate (one
//! bucket for everybody) or one whose zones count per different keys cannot be cut so.
//!
//! The shard of a request under a candidate is `xxh3_64(key text) mod N`, where the key
//! text is the key as the `--decisions` CSV writes it, as bytes: an address in its
//! canonical form (`203.0.113.7`, `2001:db8::1`; IPv4-mapped IPv6 as IPv4), a network as
//! `203.0.113.0/24`, a client that is not an address and every text key (agent, host,
//! user, path…) as the log's bytes, a status as its decimal digits. A request without
//! the key (the candidate skips it anyway) is in shard 0. xxh3 is XXH3-64 with seed 0
//! (`xxhash.xxh3_64_intdigest` in Python's `xxhash`).

use std::fmt;
use std::io::Write as _;

use super::key::{KeySpec, canonical, prefix_of};
use super::policy::Policy;
use super::request::Request;

/// Shard `k` of `n` (`0 ≤ k < n`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard.
    pub k: u64,
    /// How many shards.
    pub n: u64,
}

/// Why `--keys` cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// The value is not `K/N` with `0 ≤ K < N`.
    #[error("{0:?}: give K/N with 0 ≤ K < N, e.g. --keys 0/3 (the first of three shards)")]
    Syntax(String),
    /// A candidate counts site-wide.
    #[error(
        "candidate {0} is site-wide (one bucket for every request): its decisions depend on all requests in order, so it cannot be replayed by shards of keys; replay it without --keys (one ordered pass)"
    )]
    SiteWide(String),
    /// A candidate's zones count per different keys.
    #[error(
        "candidate {0} counts per several keys ({1}): a shard of one key would split the other's buckets; give each key its own run, or replay without --keys"
    )]
    MixedKeys(String, String),
    /// A haproxy.cfg candidate (its keys are chosen by its rules).
    #[error(
        "candidate {0} is a haproxy.cfg program (its track-sc rules choose the keys): replay it without --keys"
    )]
    Program(String),
}

impl Shard {
    /// Parses `K/N`.
    pub fn parse(s: &str) -> Result<Shard, ShardError> {
        let bad = || ShardError::Syntax(s.to_string());
        let (k, n) = s.trim().split_once('/').ok_or_else(bad)?;
        let k: u64 = k.trim().parse().map_err(|_| bad())?;
        let n: u64 = n.trim().parse().map_err(|_| bad())?;
        if n == 0 || k >= n {
            return Err(bad());
        }
        Ok(Shard { k, n })
    }

    /// The shard of a key text.
    #[inline]
    pub fn of(key_text: &[u8], n: u64) -> u64 {
        xxhash_rust::xxh3::xxh3_64(key_text) % n.max(1)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

/// The one key a candidate counts per, if it can be sharded.
pub fn shard_key(p: &Policy) -> Result<KeySpec, ShardError> {
    if p.program().is_some() {
        return Err(ShardError::Program(p.name().to_string()));
    }
    let mut keys: Vec<&KeySpec> = Vec::new();
    for z in p.zones() {
        let k = &z.spec().key;
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    match keys.as_slice() {
        [] => Ok(KeySpec::Site),
        [k] if k.is_site() => Err(ShardError::SiteWide(p.name().to_string())),
        [k] => Ok((*k).clone()),
        more if more.iter().any(|k| k.is_site()) => Err(ShardError::SiteWide(p.name().to_string())),
        more => Err(ShardError::MixedKeys(
            p.name().to_string(),
            more.iter()
                .map(|k| k.describe())
                .collect::<Vec<_>>()
                .join("; "),
        )),
    }
}

/// Writes the key text of `req` (see the module) into `buf`; `false` when the request
/// has no such key.
pub fn key_text(key: &KeySpec, req: &Request<'_>, buf: &mut Vec<u8>) -> bool {
    buf.clear();
    let text = |buf: &mut Vec<u8>, v: Option<&[u8]>| match v {
        Some(b) if !b.is_empty() => {
            buf.extend_from_slice(b);
            true
        }
        _ => false,
    };
    match key {
        KeySpec::Site => true,
        KeySpec::Ip => match req.ip {
            Some(ip) => write!(buf, "{}", canonical(ip)).is_ok(),
            None => text(buf, Some(req.client)),
        },
        KeySpec::Prefix { v4, v6 } => match req.ip {
            Some(ip) => write!(buf, "{}", prefix_of(ip, *v4, *v6)).is_ok(),
            None => text(buf, Some(req.client)),
        },
        KeySpec::Agent => text(buf, req.user_agent),
        KeySpec::Host => text(buf, req.host),
        KeySpec::User => text(buf, req.user),
        KeySpec::Method => text(buf, req.method),
        KeySpec::Path => text(buf, req.path),
        KeySpec::Query => text(buf, req.query),
        KeySpec::Referer => text(buf, req.referer),
        KeySpec::Field(f) => text(buf, req.field(f.slot)),
        KeySpec::Asn(k) => match req.ip.and_then(|ip| k.asn(ip)) {
            Some(n) => write!(buf, "AS{n}").is_ok(),
            None => false,
        },
        KeySpec::Uri => {
            let Some(p) = req.path else { return false };
            buf.extend_from_slice(p);
            if let Some(q) = req.query {
                buf.push(b'?');
                buf.extend_from_slice(q);
            }
            !buf.is_empty()
        }
        KeySpec::Status => req.status != 0 && write!(buf, "{}", req.status).is_ok(),
    }
}

/// Which requests each candidate replays under `--keys K/N`.
#[derive(Clone, Debug)]
pub struct ShardFilter {
    shard: Shard,
    keys: Vec<KeySpec>,
    buf: Vec<u8>,
    skipped: Vec<u64>,
}

impl ShardFilter {
    /// The filter for these candidates, or why one of them cannot be sharded.
    pub fn new(shard: Shard, policies: &[Policy]) -> Result<ShardFilter, ShardError> {
        let keys = policies
            .iter()
            .map(shard_key)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ShardFilter {
            shard,
            skipped: vec![0; keys.len()],
            keys,
            buf: Vec::with_capacity(64),
        })
    }

    /// The shard.
    pub fn shard(&self) -> Shard {
        self.shard
    }

    /// Whether candidate `c` replays `req` (its key is in this shard); counts the
    /// others.
    #[inline]
    pub fn admits(&mut self, c: usize, req: &Request<'_>) -> bool {
        let Some(key) = self.keys.get(c) else {
            return true;
        };
        let s = if key_text(key, req, &mut self.buf) {
            Shard::of(&self.buf, self.shard.n)
        } else {
            0
        };
        let ok = s == self.shard.k;
        if !ok {
            self.skipped[c] += 1;
        }
        ok
    }

    /// Per candidate: requests left to the other shards.
    pub fn skipped(&self) -> &[u64] {
        &self.skipped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_k_of_n() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { k: 2, n: 3 }));
        assert_eq!(Shard::parse(" 0 / 1 "), Ok(Shard { k: 0, n: 1 }));
        for bad in ["3/3", "1/0", "", "1", "a/2", "-1/2", "1/2/3", "1.5/3"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn site_and_mixed_keys_refused() {
        let site = Policy::from_spec("10/1m").unwrap();
        assert!(matches!(shard_key(&site), Err(ShardError::SiteWide(_))));
        let ip = Policy::from_spec("10/1m,key=ip").unwrap();
        assert_eq!(shard_key(&ip), Ok(KeySpec::Ip));
    }

    #[test]
    fn key_text_is_the_decisions_key() {
        let req = Request {
            ip: "::ffff:192.0.2.9".parse().ok(),
            ..Default::default()
        };
        let mut b = Vec::new();
        assert!(key_text(&KeySpec::Ip, &req, &mut b));
        assert_eq!(b, b"192.0.2.9");
        let p = KeySpec::parse("prefix").unwrap();
        assert!(key_text(&p, &req, &mut b));
        assert_eq!(b, b"192.0.2.0/24");
        assert_eq!(p.display(&req).unwrap().as_bytes(), b.as_slice());
        // The documented hash: XXH3-64, seed 0.
        assert_eq!(xxhash_rust::xxh3::xxh3_64(b""), 0x2d06800538d394c2);
        assert_eq!(Shard::of(b"", 7), 0x2d06800538d394c2 % 7);
    }
}
