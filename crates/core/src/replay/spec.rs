//! Limit specs as people say them: `RATE[,burst=N][,algo=A][,key=K][,cost=C][,name=S]`,
//! e.g. `1600/10m`, `5r/s,algo=nginx,burst=10,nodelay,key=ip`.

use std::fmt;

pub use super::algorithm::{ALGORITHMS, Algorithm, algo_names};
use super::ban::{BanOptions, ban_length};
use super::increment::{Increment, milli_text, parse_milli};
use super::key::{KEY_NAMES, KeySpec};
use crate::number::thousands;
use crate::rate::{Rate, RateError, describe_period};

/// What a request costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CostKind {
    /// Every request costs 1.
    #[default]
    Requests,
    /// Server time in ms (request time rounded up; 0 when the log has none).
    RequestTime,
    /// Response bytes (0 when the log has none).
    Bytes,
}

impl CostKind {
    /// Parses `requests`, `request-time` (`time`, `ms`), `bytes`.
    pub fn parse(s: &str) -> Option<CostKind> {
        Some(
            match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
                "requests" | "request" | "count" | "1" => CostKind::Requests,
                "request-time" | "time" | "ms" | "server-time" | "duration" => {
                    CostKind::RequestTime
                }
                "bytes" | "size" => CostKind::Bytes,
                _ => return None,
            },
        )
    }

    /// The canonical name.
    pub fn name(&self) -> &'static str {
        match self {
            CostKind::Requests => "requests",
            CostKind::RequestTime => "request-time",
            CostKind::Bytes => "bytes",
        }
    }

    /// The unit a rate counts in (`request`, `ms of server time`, `byte`).
    pub fn unit(&self) -> &'static str {
        match self {
            CostKind::Requests => "request",
            CostKind::RequestTime => "ms of server time",
            CostKind::Bytes => "byte",
        }
    }

    /// The cost of `req`; `None` when the log lacks the field (then it costs 0).
    #[inline]
    pub fn of(&self, req: &super::Request<'_>) -> Option<u64> {
        match self {
            CostKind::Requests => Some(1),
            CostKind::RequestTime => req.request_time_ms(),
            CostKind::Bytes => req.bytes,
        }
    }
}

/// nginx's delay setting for a `limit_req`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum NginxDelay {
    /// Neither `nodelay` nor `delay=`: every excess request is delayed.
    #[default]
    Default,
    /// `nodelay`: never delayed; past burst refused.
    NoDelay,
    /// `delay=N`: the first N excess requests pass at once, later ones are delayed.
    Delay(u64),
}

/// Which requests a spec candidate looks at (`scope=`); a config file uses rules instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SpecScope {
    /// Every request.
    #[default]
    All,
    /// Requests the caller marked heavy.
    Heavy,
    /// Requests from clients that are not identified.
    Anonymous,
    /// Heavy requests from clients that are not identified (the wiki's case).
    AnonymousHeavy,
}

impl SpecScope {
    fn parse(s: &str) -> Option<SpecScope> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "all" | "every" | "any" => SpecScope::All,
            "heavy" => SpecScope::Heavy,
            "anonymous" | "anon" | "logged-out" => SpecScope::Anonymous,
            "anonymous-heavy" | "anon-heavy" | "heavy-anonymous" => SpecScope::AnonymousHeavy,
            _ => return None,
        })
    }

    /// The spec form.
    pub fn name(&self) -> &'static str {
        match self {
            SpecScope::All => "all",
            SpecScope::Heavy => "heavy",
            SpecScope::Anonymous => "anonymous",
            SpecScope::AnonymousHeavy => "anonymous-heavy",
        }
    }
}

/// One limit: algorithm, rate, burst, key, cost, as parsed from a spec string or built
/// from a config zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitSpec {
    /// Optional name (`name=`); a report labels the candidate with it.
    pub name: Option<String>,
    /// The algorithm.
    pub algorithm: Algorithm,
    /// The rate.
    pub rate: Rate,
    /// `burst=` as given (see [`LimitSpec::burst`] for the default).
    pub burst: Option<u64>,
    /// What one bucket is shared by.
    pub key: KeySpec,
    /// What a request costs.
    pub cost: CostKind,
    /// nginx only: `nodelay` / `delay=N`.
    pub delay: NginxDelay,
    /// Which requests a spec candidate sees.
    pub scope: SpecScope,
    /// haproxy only: `expire=` in ms (default: the rate's window).
    pub expire: Option<u64>,
    /// ban only: `ban=`, `challenge=`, `extend`, `reach`, `increment` and its options.
    pub ban: Option<BanOptions>,
    /// `status=`: only requests with these statuses (inclusive ranges) are counted
    /// (ban: toward the ban; other algorithms: covered at all).
    pub status: Vec<(u16, u16)>,
    /// `path=`: only requests whose path starts with one of these are counted.
    pub path: Vec<String>,
}

impl LimitSpec {
    /// A limit with defaults: site-wide, counting requests, default burst.
    pub fn new(algorithm: Algorithm, rate: Rate) -> LimitSpec {
        LimitSpec {
            name: None,
            algorithm,
            rate,
            burst: None,
            key: KeySpec::Site,
            cost: CostKind::Requests,
            delay: NginxDelay::Default,
            scope: SpecScope::All,
            expire: None,
            ban: None,
            status: Vec::new(),
            path: Vec::new(),
        }
    }

    /// haproxy: how long an entry lives after its last request, ms (`expire=`, default
    /// the rate's window).
    pub fn expire_ms(&self) -> u64 {
        self.expire.unwrap_or(self.rate.window_ms())
    }

    /// The `Retry-After` a server configuration can send with this limit's 429, whole
    /// seconds (at least 1): the time one request's room frees for the rate algorithms
    /// (nginx, token bucket, GCRA, leaky queue), a window for the counting ones, the
    /// ban's length for a ban (a window for one for ever). The replay's own per-request
    /// values (`--decisions`) are exact; this is the one number a static header can say.
    pub fn retry_hint_s(&self) -> u64 {
        let (n, w) = (self.rate.count().max(1), self.rate.window_ms());
        let ms = match self.algorithm {
            Algorithm::Nginx | Algorithm::TokenBucket | Algorithm::Gcra | Algorithm::LeakyQueue => {
                w.div_ceil(n)
            }
            Algorithm::Ban => self.ban.as_ref().and_then(|b| b.ban_ms).unwrap_or(w),
            _ => w,
        };
        ms.div_ceil(1000).max(1)
    }

    /// The burst in effect. nginx: `burst=` or 0 (nginx's default; N+1 pass back to back).
    /// Token bucket and GCRA: the bucket size, `burst=` or the rate's count
    /// (`5r/s` holds 5, like governor's `per_second(5)`). Leaky queue: the queue length,
    /// `burst=`/`queue=` or the rate's count. Window algorithms: the count (N per window).
    pub fn burst(&self) -> u64 {
        match self.algorithm {
            Algorithm::Nginx => self.burst.unwrap_or(0),
            _ => self.burst.unwrap_or(self.rate.count()),
        }
    }

    /// Parses a spec: `RATE[,burst=N][,algo=A][,key=K][,cost=C][,name=S]`, plus
    /// `nodelay` and `delay=N` (nginx), `queue=N` (leaky-queue) and `scope=` (`all`,
    /// `heavy`, `anonymous`, `anonymous-heavy`). Options may come in any order,
    /// separated by commas (spaces around them are ignored).
    ///
    /// `RATE` is `COUNT/PERIOD`: `1600/10m`, `300/min`, `5r/s`, `30r/m`, `10/s`, `100/1h`,
    /// `0.2/s`. The algorithm defaults to `sliding-log`, the key to `site`, the cost to
    /// `requests`. So `1600/10m` = at most 1,600 admitted in any 10 minutes, site-wide.
    pub fn parse(spec: &str) -> Result<LimitSpec, SpecError> {
        let err = |problem| SpecError {
            spec: spec.to_string(),
            problem,
        };
        let mut parts = spec.split(',').map(str::trim);
        let rate_s = parts.next().unwrap_or("");
        if rate_s.is_empty() {
            return Err(err(SpecProblem::Empty));
        }
        if rate_s.contains('=') {
            return Err(err(SpecProblem::RateFirst(rate_s.to_string())));
        }
        let rate =
            Rate::parse(rate_s).map_err(|e| err(SpecProblem::Rate(rate_s.to_string(), e)))?;
        let mut out = LimitSpec::new(Algorithm::SlidingLog, rate);
        let mut seen: Vec<String> = Vec::new();
        let mut queue: Option<u64> = None;
        let mut ban = BanOptions::default();
        let mut ban_given: Vec<&'static str> = Vec::new();
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let (k, v) = match part.split_once('=') {
                Some((k, v)) => (k.trim().to_ascii_lowercase(), Some(v.trim())),
                None => (part.to_ascii_lowercase(), None),
            };
            let canon = match k.as_str() {
                "algorithm" => "algo".to_string(),
                "queue" => "burst".to_string(),
                other => other.to_string(),
            };
            if seen.contains(&canon) {
                return Err(err(SpecProblem::Duplicate(k)));
            }
            seen.push(canon);
            let need = |v: Option<&str>| -> Result<String, SpecError> {
                match v {
                    Some(v) if !v.is_empty() => Ok(v.to_string()),
                    _ => Err(err(SpecProblem::MissingValue(k.clone()))),
                }
            };
            let number = |v: Option<&str>| -> Result<u64, SpecError> {
                let v = need(v)?;
                v.replace('_', "").parse::<u64>().map_err(|_| {
                    err(SpecProblem::BadValue {
                        option: k.clone(),
                        value: v.clone(),
                        expected: "a whole number",
                    })
                })
            };
            match k.as_str() {
                "burst" => out.burst = Some(number(v)?),
                "queue" => queue = Some(number(v)?),
                "algo" | "algorithm" => {
                    let v = need(v)?;
                    out.algorithm =
                        Algorithm::parse(&v).ok_or_else(|| err(SpecProblem::UnknownAlgo(v)))?;
                }
                "key" => {
                    let v = need(v)?;
                    out.key = KeySpec::parse(&v).ok_or_else(|| err(SpecProblem::UnknownKey(v)))?;
                }
                "cost" => {
                    let v = need(v)?;
                    out.cost =
                        CostKind::parse(&v).ok_or_else(|| err(SpecProblem::UnknownCost(v)))?;
                }
                "name" => out.name = Some(need(v)?),
                "expire" => {
                    let v = need(v)?;
                    let d =
                        crate::duration::Duration::parse(&v, crate::duration::Resolution::Millis)
                            .map_err(|_| {
                            err(SpecProblem::BadValue {
                                option: k.clone(),
                                value: v.clone(),
                                expected: "a duration (10s, 1m, 500ms)",
                            })
                        })?;
                    out.expire = Some(d.ms());
                }
                "nodelay" => {
                    if v.is_some() {
                        return Err(err(SpecProblem::FlagWithValue(k)));
                    }
                    if out.delay != NginxDelay::Default {
                        return Err(err(SpecProblem::Duplicate("nodelay/delay".into())));
                    }
                    out.delay = NginxDelay::NoDelay;
                }
                "delay" => {
                    if out.delay != NginxDelay::Default {
                        return Err(err(SpecProblem::Duplicate("nodelay/delay".into())));
                    }
                    out.delay = NginxDelay::Delay(number(v)?);
                }
                "scope" => {
                    let v = need(v)?;
                    out.scope =
                        SpecScope::parse(&v).ok_or_else(|| err(SpecProblem::UnknownScope(v)))?;
                }
                "status" => {
                    let v = need(v)?;
                    out.status = parse_statuses(&v).ok_or_else(|| {
                        err(SpecProblem::BadValue {
                            option: k.clone(),
                            value: v.clone(),
                            expected: "statuses separated by | (404, 4xx, 500-599)",
                        })
                    })?;
                }
                "path" => {
                    let v = need(v)?;
                    out.path = v.split('|').map(|p| p.trim().to_string()).collect();
                    if out.path.iter().any(|p| !p.starts_with('/')) {
                        return Err(err(SpecProblem::BadValue {
                            option: k.clone(),
                            value: v.clone(),
                            expected: "path prefixes starting with / separated by |",
                        }));
                    }
                }
                "ban" | "bantime" => {
                    ban_given.push("ban");
                    let v = need(v)?;
                    ban.ban_ms = match v.to_ascii_lowercase().as_str() {
                        "forever" | "permanent" | "-1" => None,
                        _ => Some(duration_value(&k, &v, &err)?),
                    };
                }
                "challenge" => {
                    ban_given.push("challenge");
                    let v = need(v)?;
                    ban.challenge = Some(Rate::parse(&v).map_err(|_| {
                        err(SpecProblem::BadValue {
                            option: k.clone(),
                            value: v.clone(),
                            expected: "a rate COUNT/PERIOD (100/1m)",
                        })
                    })?);
                }
                "extend" | "reach" | "increment" | "fail2ban" => {
                    if v.is_some() {
                        return Err(err(SpecProblem::FlagWithValue(k)));
                    }
                    match k.as_str() {
                        "extend" => {
                            ban_given.push("extend");
                            ban.extend = true;
                        }
                        "reach" => {
                            ban_given.push("reach");
                            ban.reach = true;
                        }
                        "fail2ban" => {
                            ban_given.push("fail2ban");
                            ban.fail2ban = true;
                            ban.reach = true;
                        }
                        _ => {
                            ban_given.push("increment");
                            ban.increment.get_or_insert_with(Increment::doubling);
                        }
                    }
                }
                "factor" => {
                    ban_given.push("factor");
                    let v = need(v)?;
                    let f = parse_milli(&v).filter(|&f| f > 0).ok_or_else(|| {
                        err(SpecProblem::BadValue {
                            option: k.clone(),
                            value: v.clone(),
                            expected: "a decimal number above 0 (2, 1.5)",
                        })
                    })?;
                    ban.increment
                        .get_or_insert_with(Increment::doubling)
                        .factor_milli = f;
                }
                "maxtime" => {
                    ban_given.push("maxtime");
                    let v = need(v)?;
                    let d = duration_value(&k, &v, &err)?;
                    ban.increment.get_or_insert_with(Increment::doubling).max_ms = Some(d);
                }
                "multipliers" => {
                    ban_given.push("multipliers");
                    let v = need(v)?;
                    let m: Option<Vec<u64>> = v
                        .split([':', ' '])
                        .filter(|p| !p.is_empty())
                        .map(|p| p.parse::<u64>().ok().filter(|&n| n > 0))
                        .collect();
                    let m = m
                        .filter(|m| !m.is_empty() && m.len() <= 64)
                        .ok_or_else(|| {
                            err(SpecProblem::BadValue {
                                option: k.clone(),
                                value: v.clone(),
                                expected: "whole numbers above 0 separated by : (1:5:30:60)",
                            })
                        })?;
                    ban.increment
                        .get_or_insert_with(Increment::doubling)
                        .multipliers = m;
                }
                _ => return Err(err(SpecProblem::UnknownOption(k))),
            }
        }
        if out.algorithm == Algorithm::Ban {
            out.ban = Some(ban);
        } else if let Some(o) = ban_given.first() {
            return Err(err(SpecProblem::NotApplicable {
                option: o,
                algorithm: out.algorithm,
            }));
        }
        if let Some(q) = queue {
            out.burst = Some(q);
            if out.algorithm != Algorithm::LeakyQueue {
                return Err(err(SpecProblem::NotApplicable {
                    option: "queue",
                    algorithm: out.algorithm,
                }));
            }
        }
        out.validate().map_err(err)?;
        Ok(out)
    }

    /// Checks that the options fit the algorithm and the numbers fit the arithmetic.
    pub fn validate(&self) -> Result<(), SpecProblem> {
        if self.burst.is_some() && !self.algorithm.takes_burst() {
            return Err(SpecProblem::NotApplicable {
                option: "burst",
                algorithm: self.algorithm,
            });
        }
        if self.expire.is_some() && self.algorithm != Algorithm::Haproxy {
            return Err(SpecProblem::NotApplicable {
                option: "expire",
                algorithm: self.algorithm,
            });
        }
        if self.algorithm == Algorithm::Ban {
            if let Some(o) = &self.ban {
                if o.ban_ms == Some(0) {
                    return Err(SpecProblem::ZeroBan);
                }
                if o.fail2ban && (o.extend || o.challenge.is_some()) {
                    return Err(SpecProblem::NotFail2ban);
                }
                if let Some(c) = o.challenge {
                    // The challenge must come before the ban: a lower rate.
                    let lower = (c.count() as u128) * (self.rate.window_ms() as u128)
                        < (self.rate.count() as u128) * (c.window_ms() as u128);
                    if !lower {
                        return Err(SpecProblem::ChallengeNotLower);
                    }
                }
            }
        } else if self.ban.is_some() {
            return Err(SpecProblem::NotApplicable {
                option: "ban",
                algorithm: self.algorithm,
            });
        }
        if self.delay != NginxDelay::Default && self.algorithm != Algorithm::Nginx {
            return Err(SpecProblem::NotApplicable {
                option: "nodelay/delay",
                algorithm: self.algorithm,
            });
        }
        if self.algorithm == Algorithm::Nginx && self.rate.nginx_milli() == 0 {
            return Err(SpecProblem::NginxRateTooLow);
        }
        let (_, w) = self.rate.reduced();
        let b = self.burst();
        if matches!(
            self.algorithm,
            Algorithm::TokenBucket | Algorithm::Gcra | Algorithm::LeakyQueue
        ) && (b as u128 + 1) * w as u128 > (1u128 << 62)
        {
            return Err(SpecProblem::TooLarge);
        }
        if matches!(self.algorithm, Algorithm::TokenBucket | Algorithm::Gcra) && b == 0 {
            return Err(SpecProblem::ZeroBurst);
        }
        if self.algorithm == Algorithm::Nginx && b > (1 << 40) {
            return Err(SpecProblem::TooLarge);
        }
        Ok(())
    }

    /// The display label: the name if given, else the spec string.
    pub fn label(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.to_string())
    }

    /// An nginx zone in words, without the per-location burst and delay (a policy's
    /// rules carry those): rate, key, cost. Other algorithms: [`LimitSpec::describe`].
    pub fn describe_zone(&self) -> String {
        if self.algorithm != Algorithm::Nginx {
            return self.describe();
        }
        let milli = self.rate.nginx_milli();
        format!(
            "nginx limit_req_zone: rate {} ({milli} milli-requests/s, one every {:.0} ms); {}; {}",
            self.rate.describe(self.cost.unit()),
            1_000_000.0 / milli as f64,
            self.key.describe(),
            match self.cost {
                CostKind::Requests => "counting requests",
                CostKind::RequestTime => "counting server time (request time in ms)",
                CostKind::Bytes => "counting response bytes",
            }
        )
    }

    /// The limit in words: algorithm, rate, burst, key and cost.
    pub fn describe(&self) -> String {
        let unit = self.cost.unit();
        let rate = self.rate.describe(unit);
        let per = describe_period(self.rate.window_ms());
        let n = thousands(self.rate.count());
        let b = self.burst();
        let units = |k: u64| {
            if k == 1 || unit.ends_with("time") {
                format!("{} {unit}", thousands(k))
            } else {
                format!("{} {unit}s", thousands(k))
            }
        };
        let algo = match self.algorithm {
            Algorithm::SlidingLog => format!(
                "sliding log: at most {} in any {per} (exact; refused requests do not count)",
                units(self.rate.count())
            ),
            Algorithm::Caddy => format!(
                "Caddy rate_limit: events {n}, window {per}: a request passes if fewer than {n} passed in the last {per}, both ends included; refused ones do not count"
            ),
            Algorithm::Nginx => {
                let milli = self.rate.nginx_milli();
                let per_ms = 1000.0 * 1000.0 / milli as f64;
                let delay = match self.delay {
                    NginxDelay::Default if b == 0 => String::new(),
                    NginxDelay::Default => {
                        " (no nodelay: every excess request is delayed until its turn)".to_string()
                    }
                    NginxDelay::NoDelay => ", nodelay".to_string(),
                    NginxDelay::Delay(d) => format!(
                        ", delay={d} (the first {d} excess pass at once, the rest are delayed)"
                    ),
                };
                format!(
                    "nginx limit_req: rate {rate} ({milli} milli-requests/s, one every {per_ms:.0} ms), burst={b}{delay}; up to {} back to back, refused past the burst; refused requests do not count; a new key's first request is free",
                    thousands(b + 1)
                )
            }
            Algorithm::TokenBucket => format!(
                "token bucket: refills {rate} continuously, holds {} (starts full); refused requests take nothing",
                units(b)
            ),
            Algorithm::Gcra => format!(
                "GCRA (governor): {rate}, burst {}; decides like a token bucket of that size",
                units(b)
            ),
            Algorithm::FixedWindow => format!(
                "fixed window: at most {} per {per} window, windows aligned to the clock (UTC); up to twice that can pass across a window edge",
                units(self.rate.count())
            ),
            Algorithm::SlidingWindow => format!(
                "sliding-window counter: at most {} per {per}, estimated as previous window × the part still overlapping + current window",
                units(self.rate.count())
            ),
            Algorithm::LeakyQueue => format!(
                "leaky bucket queue: released at {rate}, up to {} waiting (they are delayed); refused when the queue is full",
                units(b)
            ),
            Algorithm::Haproxy => format!(
                "HAProxy stick table: http_req_rate({per}), deny if above {n}; every request counts, refused or not, before the deny is evaluated; rate = this period's count + the previous period's weighted by what remains of this one; an entry is forgotten {} after its last request",
                {
                    let e = describe_period(self.expire_ms());
                    if e.starts_with(|c: char| c.is_ascii_digit()) {
                        e
                    } else {
                        format!("1 {e}")
                    }
                }
            ),
            Algorithm::Ban => {
                let o = self.ban.clone().unwrap_or_default();
                let mut s = if o.fail2ban {
                    format!(
                        "ban as fail2ban bans: maxretry {n}, findtime {} (a failure ticket rescaled as a rate once it spans more than findtime, dropped at fail2ban's cleanups), bantime {}; the failure that reaches {n} passes, the key's later requests are refused while banned (its end included)",
                        one(per.clone()),
                        ban_for(o.ban_ms),
                    )
                } else if o.reach {
                    format!(
                        "ban: {} counted in any {} ban the key {} (fail2ban: maxretry {n}, findtime {}; the request that reaches {n} passes, the key's later ones are refused)",
                        units(self.rate.count()),
                        one(per.clone()),
                        ban_for(o.ban_ms),
                        one(per.clone())
                    )
                } else {
                    format!(
                        "ban: more than {} counted in any {} bans the key {}; the request over the limit and every later one of the key are refused",
                        units(self.rate.count()),
                        one(per.clone()),
                        ban_for(o.ban_ms)
                    )
                };
                if let Some(c) = o.challenge {
                    s.push_str(&format!(
                        "; challenged (passed, counted apart) above {} in any {}",
                        thousands(c.count()),
                        describe_period(c.window_ms())
                    ));
                }
                if let Some(i) = &o.increment {
                    s.push_str(&format!("; repeat bans grow: {i}"));
                }
                s.push_str(if o.extend {
                    "; a banned request restarts the ban"
                } else {
                    "; banned requests do not count and do not extend the ban"
                });
                s
            }
        };
        let cost = match self.cost {
            CostKind::Requests => "counting requests",
            CostKind::RequestTime => "counting server time (request time in ms)",
            CostKind::Bytes => "counting response bytes",
        };
        let scope = match self.scope {
            SpecScope::All => "",
            SpecScope::Heavy => "; heavy requests only",
            SpecScope::Anonymous => "; anonymous clients only",
            SpecScope::AnonymousHeavy => "; heavy requests of anonymous clients only",
        };
        let mut only = String::new();
        if !self.status.is_empty() {
            only.push_str(&format!("; status {} only", statuses_text(&self.status)));
        }
        if !self.path.is_empty() {
            only.push_str(&format!("; paths {} only", self.path.join(" | ")));
        }
        format!("{algo}; {}; {cost}{scope}{only}", self.key.describe())
    }
}

impl fmt::Display for LimitSpec {
    /// The canonical spec string; [`LimitSpec::parse`] reads it back to an equal value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.rate)?;
        if self.algorithm != Algorithm::SlidingLog {
            write!(f, ",algo={}", self.algorithm)?;
        }
        if let Some(b) = self.burst {
            write!(f, ",burst={b}")?;
        }
        match self.delay {
            NginxDelay::Default => {}
            NginxDelay::NoDelay => f.write_str(",nodelay")?,
            NginxDelay::Delay(d) => write!(f, ",delay={d}")?,
        }
        if self.key != KeySpec::Site {
            write!(f, ",key={}", self.key)?;
        }
        if self.cost != CostKind::Requests {
            write!(f, ",cost={}", self.cost.name())?;
        }
        if self.scope != SpecScope::All {
            write!(f, ",scope={}", self.scope.name())?;
        }
        if let Some(e) = self.expire {
            write!(f, ",expire={e}ms")?;
        }
        if !self.status.is_empty() {
            write!(f, ",status={}", statuses_text(&self.status))?;
        }
        if !self.path.is_empty() {
            write!(f, ",path={}", self.path.join("|"))?;
        }
        if let Some(o) = &self.ban {
            match o.ban_ms {
                None => f.write_str(",ban=forever")?,
                Some(ms) => write!(f, ",ban={}", ms_text(ms))?,
            }
            if let Some(c) = o.challenge {
                write!(f, ",challenge={c}")?;
            }
            if o.extend {
                f.write_str(",extend")?;
            }
            if o.fail2ban {
                f.write_str(",fail2ban")?;
            } else if o.reach {
                f.write_str(",reach")?;
            }
            if let Some(i) = &o.increment {
                f.write_str(",increment")?;
                if i.factor_milli != 1000 {
                    write!(f, ",factor={}", milli_text(i.factor_milli))?;
                }
                if let Some(m) = i.max_ms {
                    write!(f, ",maxtime={}", ms_text(m))?;
                }
                if !i.multipliers.is_empty() {
                    let m: Vec<String> = i.multipliers.iter().map(u64::to_string).collect();
                    write!(f, ",multipliers={}", m.join(":"))?;
                }
            }
        }
        if let Some(n) = &self.name {
            write!(f, ",name={n}")?;
        }
        Ok(())
    }
}

/// A spec that did not parse: the spec, what is wrong, and (in `Display`) a valid example.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    /// The spec as given.
    pub spec: String,
    /// What is wrong.
    pub problem: SpecProblem,
}

impl std::error::Error for SpecError {}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid limit `{}`: {}. For example: {}",
            self.spec,
            self.problem,
            self.problem.example()
        )
    }
}

/// What is wrong with a spec.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecProblem {
    /// Nothing given.
    #[error("the spec is empty")]
    Empty,
    /// An option came where the rate should be.
    #[error("it must start with the rate (COUNT/PERIOD), not `{0}`")]
    RateFirst(String),
    /// The rate did not parse.
    #[error("bad rate `{0}`: {1}")]
    Rate(String, RateError),
    /// Unknown `algo=`.
    #[error("unknown algorithm `{0}`; known: {known}", known = algo_names())]
    UnknownAlgo(String),
    /// Unknown `key=`.
    #[error("unknown key `{0}`; known: {KEY_NAMES}")]
    UnknownKey(String),
    /// Unknown `cost=`.
    #[error("unknown cost `{0}`; known: requests, request-time, bytes")]
    UnknownCost(String),
    /// Unknown `scope=`.
    #[error("unknown scope `{0}`; known: all, heavy, anonymous, anonymous-heavy")]
    UnknownScope(String),
    /// Unknown option.
    #[error(
        "unknown option `{0}`; known: burst, algo, key, cost, name, nodelay, delay, queue, scope, expire, status, path; with algo=ban: ban, challenge, extend, reach, fail2ban, increment, factor, maxtime, multipliers"
    )]
    UnknownOption(String),
    /// Option given twice.
    #[error("`{0}` is given twice")]
    Duplicate(String),
    /// `opt=` with nothing after.
    #[error("`{0}=` needs a value")]
    MissingValue(String),
    /// A flag given a value.
    #[error("`{0}` is a flag and takes no value")]
    FlagWithValue(String),
    /// A value of the wrong kind.
    #[error("`{option}={value}`: expected {expected}")]
    BadValue {
        /// The option.
        option: String,
        /// The value given.
        value: String,
        /// What was expected.
        expected: &'static str,
    },
    /// An option the algorithm has no use for.
    #[error("`{option}` does not apply to {algorithm}{}", not_applicable_hint(.option, *.algorithm))]
    NotApplicable {
        /// The option.
        option: &'static str,
        /// The algorithm.
        algorithm: Algorithm,
    },
    /// nginx cannot express the rate.
    #[error(
        "nginx stores rates as whole milli-requests per second; this rate rounds to 0 (the lowest is 1r/m)"
    )]
    NginxRateTooLow,
    /// A bucket of size 0 admits nothing.
    #[error("a bucket of size 0 admits nothing; burst must be at least 1")]
    ZeroBurst,
    /// Numbers too large for exact arithmetic.
    #[error("the numbers are too large for exact arithmetic")]
    TooLarge,
    /// `ban=0`.
    #[error("a ban of 0 bans nothing; give a length (ban=1h) or ban=forever")]
    ZeroBan,
    /// `fail2ban` with an option fail2ban has not.
    #[error(
        "fail2ban has no challenge and does not extend bans; drop challenge=/extend or fail2ban"
    )]
    NotFail2ban,
    /// `challenge=` at or above the ban rate.
    #[error("the challenge rate must be lower than the ban rate (challenged first, banned later)")]
    ChallengeNotLower,
}

fn not_applicable_hint(option: &str, algorithm: Algorithm) -> &'static str {
    match (option, algorithm) {
        ("burst", _) => {
            " (the count is the cap per window; burst is for nginx, token-bucket, gcra and leaky-queue)"
        }
        ("queue", _) => " (queue is for leaky-queue)",
        ("expire", _) => " (expire is for haproxy)",
        (
            "ban" | "challenge" | "extend" | "reach" | "fail2ban" | "increment" | "factor"
            | "maxtime" | "multipliers",
            _,
        ) => " (ban options are for algo=ban)",
        _ => " (nodelay and delay= are nginx options)",
    }
}

impl SpecProblem {
    /// A valid spec that shows the right way for this problem.
    pub fn example(&self) -> &'static str {
        match self {
            SpecProblem::UnknownAlgo(_) | SpecProblem::NotApplicable { .. } => {
                "`5r/s,algo=nginx,burst=10,nodelay,key=ip` or `1/s,algo=token-bucket,burst=15,key=ip`"
            }
            SpecProblem::UnknownKey(_) => {
                "`300/min,key=prefix/24`, `100/10m,key=agent` or `300/1m,key=field:http_x_api_key` (a field of --log-format or --json-map)"
            }
            SpecProblem::UnknownCost(_) => "`300/s,algo=token-bucket,burst=1000,cost=request-time`",
            SpecProblem::NginxRateTooLow => "`1r/m,algo=nginx,burst=5`",
            SpecProblem::UnknownScope(_) => "`1600/10m,scope=anonymous-heavy`",
            SpecProblem::NotFail2ban => {
                "`5/10m,algo=ban,ban=1h,fail2ban,increment,status=404,key=ip`"
            }
            SpecProblem::ZeroBan | SpecProblem::ChallengeNotLower => {
                "`500/1m,algo=ban,ban=1h,challenge=100/1m,key=ip`"
            }
            SpecProblem::BadValue { option, .. }
                if matches!(
                    option.as_str(),
                    "ban" | "bantime" | "challenge" | "factor" | "maxtime" | "multipliers"
                ) =>
            {
                "`500/1m,algo=ban,ban=1h,challenge=100/1m,key=ip` or `5/10m,algo=ban,ban=10m,status=404,increment,maxtime=1d,key=ip`"
            }
            _ => {
                "`1600/10m` (at most 1,600 in any 10 minutes, site-wide) or `5r/s,burst=10,algo=token-bucket,key=ip`"
            }
        }
    }
}

fn ban_for(ms: Option<u64>) -> String {
    match ms {
        None => "for ever".into(),
        Some(_) => format!("for {}", one(ban_length(ms))),
    }
}

/// `hour` → `1 hour`; `10 minutes` stays.
fn one(p: String) -> String {
    if p.starts_with(|c: char| c.is_ascii_digit()) {
        p
    } else {
        format!("1 {p}")
    }
}

/// A length in ms in the shortest exact spec form (`1h`, `90s`, `1500ms`).
fn ms_text(ms: u64) -> String {
    for (unit, n) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
    ] {
        if ms >= n && ms.is_multiple_of(n) {
            return format!("{}{unit}", ms / n);
        }
    }
    format!("{ms}ms")
}

fn duration_value(
    k: &str,
    v: &str,
    err: &dyn Fn(SpecProblem) -> SpecError,
) -> Result<u64, SpecError> {
    crate::duration::Duration::parse(v, crate::duration::Resolution::Millis)
        .map(|d| d.ms())
        .ok()
        .filter(|&ms| ms > 0)
        .ok_or_else(|| {
            err(SpecProblem::BadValue {
                option: k.to_string(),
                value: v.to_string(),
                expected: "a duration above 0 (10m, 1h, 1d)",
            })
        })
}

/// `404|4xx|500-599` → inclusive ranges.
fn parse_statuses(v: &str) -> Option<Vec<(u16, u16)>> {
    let mut out = Vec::new();
    for p in v.split('|').map(str::trim) {
        let r = if let Some(d) = p.strip_suffix("xx").or_else(|| p.strip_suffix("XX")) {
            let d: u16 = d.parse().ok().filter(|d| (1..=9).contains(d))?;
            (d * 100, d * 100 + 99)
        } else if let Some((a, b)) = p.split_once('-') {
            let (a, b): (u16, u16) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
            (a, b)
        } else {
            let a: u16 = p.parse().ok()?;
            (a, a)
        };
        if r.0 > r.1 || r.1 > 999 || r.0 < 100 {
            return None;
        }
        out.push(r);
    }
    (!out.is_empty()).then_some(out)
}

/// Ranges back to their spec form.
pub(crate) fn statuses_text(v: &[(u16, u16)]) -> String {
    v.iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else if a % 100 == 0 && b == a + 99 {
                format!("{}xx", a / 100)
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join("|")
}

/// Every status of the ranges (for a [`super::Matcher`]).
pub(crate) fn statuses_list(v: &[(u16, u16)]) -> Vec<u16> {
    v.iter().flat_map(|&(a, b)| a..=b).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_rate_is_a_site_wide_sliding_log() {
        let s = LimitSpec::parse("1600/10m").unwrap();
        assert_eq!(s.algorithm, Algorithm::SlidingLog);
        assert_eq!(s.key, KeySpec::Site);
        assert_eq!(s.cost, CostKind::Requests);
        assert_eq!(s.burst(), 1600);
        assert!(
            s.describe()
                .contains("at most 1,600 requests in any 10 minutes"),
            "{}",
            s.describe()
        );
        assert!(s.describe().contains("site-wide"));
    }

    #[test]
    fn full_spec_round_trips() {
        for text in [
            "5/s,algo=nginx,burst=10,nodelay,key=ip",
            "30/m,algo=nginx,burst=12,delay=4,key=prefix/16",
            "1/5s,algo=token-bucket,burst=15,key=ip,name=per-ip",
            "300/s,algo=token-bucket,burst=1000,cost=request-time",
            "100/h,algo=gcra,key=agent,cost=bytes",
            "1600/10m,scope=anonymous-heavy",
            "10/s,algo=leaky-queue,burst=20",
        ] {
            let s = LimitSpec::parse(text).unwrap();
            assert_eq!(s.to_string(), text);
            assert_eq!(LimitSpec::parse(&s.to_string()).unwrap(), s);
            assert!(!s.describe().is_empty());
        }
        let s = LimitSpec::parse(" 5r/s , nodelay , burst=10 , algo=nginx , key=ip ").unwrap();
        assert_eq!(s.to_string(), "5/s,algo=nginx,burst=10,nodelay,key=ip");
        let q = LimitSpec::parse("5/s,algo=leaky-queue,queue=7").unwrap();
        assert_eq!(q.burst(), 7);
    }

    #[test]
    fn errors_say_what_and_show_an_example() {
        let cases = [
            ("", "empty"),
            ("burst=5", "must start with the rate"),
            ("1600", "COUNT/PERIOD"),
            ("1600/10x", "unknown unit `x`"),
            ("5r/s,algo=magic", "unknown algorithm `magic`"),
            ("5r/s,key=colour", "unknown key `colour`"),
            ("5r/s,cost=gold", "unknown cost"),
            ("5r/s,burst=lots", "expected a whole number"),
            ("5r/s,burst=5", "`burst` does not apply to sliding-log"),
            ("5r/s,nodelay", "nginx options"),
            ("5r/s,algo=nginx,burst=1,burst=2", "given twice"),
            ("5r/s,colour=red", "unknown option"),
            ("1/h,algo=nginx", "rounds to 0"),
            ("5r/s,algo=token-bucket,burst=0", "size 0"),
        ];
        for (spec, want) in cases {
            let e = LimitSpec::parse(spec).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains(want), "{spec}: {msg}");
            assert!(msg.contains("For example: `"), "{spec}: {msg}");
            let example = msg.split('`').rev().nth(1).unwrap();
            assert!(
                LimitSpec::parse(example).is_ok(),
                "example {example} must parse"
            );
        }
    }

    #[test]
    fn nginx_units() {
        let s = LimitSpec::parse("1r/m,algo=nginx").unwrap();
        assert_eq!(s.rate.nginx_milli(), 16);
        assert_eq!(s.burst(), 0);
        assert!(
            s.describe().contains("16 milli-requests/s"),
            "{}",
            s.describe()
        );
    }
}
