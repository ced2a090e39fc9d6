//! Ban policies (`algo=ban`): more than N counted requests of a key in any W ms bans
//! the key for T; every request of a banned key is refused until the ban ends.
//! Optionally a softer class first (`challenge=M/W2`: counted requests over that rate,
//! but not banned, are challenged — passed, yet told apart), ban times that grow for
//! repeat offenders (`increment`, after fail2ban's `bantime.increment`), and bans that
//! last while the client keeps trying (`extend`). With `fail2ban` (every
//! `--fail2ban-jail` jail) the zone counts and bans as fail2ban does instead
//! ([`super::jail`]); this file's exact window is logscope's own.
//!
//! Semantics of the exact window (time is passed in):
//!
//! * Counted requests: those the zone's count filter accepts (the spec's `scope=`,
//!   `status=`, `path=`, or a jail's `failregex`); the others of the key are not counted
//!   but are refused during a ban. A request costing 0 is not counted.
//! * The window is half-open like the sliding log's: a request at `t` counts at `now`
//!   while `now − t < W` (fail2ban's findtime is not a window: see [`super::jail`]).
//!   The request that makes the count exceed N is refused and starts the ban (seed 001:
//!   "over 500/min → blocked for an hour"); with `reach` the request that makes the
//!   count reach N passes and the ban starts with it.
//! * A banned request does not count and does not extend the ban (a firewall drops it
//!   before the server logs it), unless `extend` is set: then every request of a banned
//!   key restarts the ban (HAProxy's "a ban lasts while the client keeps trying"). When
//!   a ban starts the key's counts are cleared.
//! * Challenged requests count toward the ban (they are attempts).
//! * Increments: the k-th ban (k earlier bans remembered) lasts `T` for k = 0, else
//!   `T·factor·multipliers[min(k, len−1)]` with multipliers, else
//!   `max(T, T·2^min(k,20)·factor)`; capped by `maxtime` (fail2ban's formula). While
//!   earlier bans are remembered, one counted request weighs `min(2^k/2 + 1, N)`
//!   rounded down. Earlier bans are forgotten one day after the last one ended.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::ban_log::{BanCounters, BanRecord, Ledger};
use super::increment::Increment;
use super::jail::Jail;
use super::key::KeySpec;
use super::matcher::Matcher;
use super::request::Request;
use super::store::{KeyMap, Lookup};
use crate::rate::Rate;

/// How long earlier bans are remembered for increments after the last one ended
/// (fail2ban's `dbpurgeage` default, 1 day).
pub const FORGET_MS: i64 = 86_400_000;

/// The ban options of an `algo=ban` limit (its rate is the ban threshold N/W).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BanOptions {
    /// How long a ban lasts, ms; `None` = for ever (fail2ban `bantime = -1`).
    pub ban_ms: Option<u64>,
    /// The softer class: counted requests over this rate (but not banned) are challenged.
    pub challenge: Option<Rate>,
    /// Every request of a banned key restarts its ban.
    pub extend: bool,
    /// Ban when the count reaches N (that request passes) instead of exceeding it.
    pub reach: bool,
    /// Growing ban times.
    pub increment: Option<Increment>,
    /// Count and ban as fail2ban does (`replay/jail.rs`): failure tickets rescaled as a
    /// rate past findtime, dropped at its cleanups, its ban database for increments;
    /// implies `reach`.
    pub fail2ban: bool,
}

/// The default ban length: fail2ban's `bantime` default, 10 minutes.
pub const DEFAULT_BAN_MS: u64 = 600_000;

impl Default for BanOptions {
    fn default() -> Self {
        BanOptions {
            ban_ms: Some(DEFAULT_BAN_MS),
            challenge: None,
            extend: false,
            reach: false,
            increment: None,
            fail2ban: false,
        }
    }
}

#[derive(Clone, Debug, Default)]
struct KeyState {
    ban: VecDeque<(i64, u64)>,
    ban_sum: u64,
    chal: VecDeque<(i64, u64)>,
    chal_sum: u64,
    /// End of the current ban (exclusive), `i64::MIN` when not banned.
    until: i64,
    /// Index of the current (or last) ban in the log.
    open: u32,
    /// Earlier bans remembered (for increments).
    bans: u32,
    /// When the last ban ended (for forgetting).
    last_end: i64,
    /// Length of the current ban, ms (for `extend`).
    len: u64,
}

/// A ban zone's per-key state and its ban log.
pub struct BanZone {
    n: u64,
    w: i64,
    challenge: Option<(u64, i64)>,
    opts: BanOptions,
    map: KeyMap<KeyState>,
    site: Option<KeyState>,
    ledger: Ledger,
    /// fail2ban's counting instead of the exact window (`fail2ban`).
    jail: Option<Box<Jail>>,
    pending: Vec<u8>,
    next_sweep: i64,
    sweep_len: usize,
    peak: usize,
    /// Set when the last lookup challenged; the zone reads and clears it.
    pub(crate) challenged: bool,
}

fn fresh_state() -> KeyState {
    KeyState {
        until: i64::MIN,
        last_end: i64::MIN,
        open: u32::MAX,
        ..KeyState::default()
    }
}

impl BanZone {
    /// A zone banning past `rate` with `opts`.
    pub fn new(rate: Rate, opts: BanOptions) -> BanZone {
        let jail = opts.fail2ban.then(|| {
            Box::new(Jail::new(
                rate.count(),
                rate.window_ms(),
                opts.ban_ms,
                opts.increment.clone(),
            ))
        });
        BanZone {
            n: rate.count(),
            w: rate.window_ms() as i64,
            challenge: opts.challenge.map(|c| (c.count(), c.window_ms() as i64)),
            opts,
            map: KeyMap::new(),
            site: None,
            ledger: Ledger::default(),
            jail,
            pending: Vec::new(),
            next_sweep: i64::MIN,
            sweep_len: 1024,
            peak: 0,
            challenged: false,
        }
    }

    /// Every ban so far, in the order they started.
    pub fn bans(&self) -> &[BanRecord] {
        &self.ledger.bans
    }

    /// Tallies so far.
    pub fn counters(&self) -> &BanCounters {
        &self.ledger.counters
    }

    /// The ban (index in [`BanZone::bans`]) that refused the last refused request.
    pub fn last_hit(&self) -> Option<u32> {
        self.ledger.last_hit
    }

    /// Keys held now.
    pub fn live_keys(&self) -> usize {
        match &self.jail {
            Some(j) => j.live_keys(),
            None => self.map.len() + usize::from(self.site.is_some()),
        }
    }

    /// Most keys held at once.
    pub fn peak_keys(&self) -> usize {
        match &self.jail {
            Some(j) => j.peak_keys(),
            None => self.peak,
        }
    }

    /// What a client sending `key` would be told at `now`: while banned, to come back
    /// when the ban ends; otherwise how many more counted requests it may send.
    pub(crate) fn client_view(&self, now: i64, key: &[u8]) -> super::ClientView {
        if let Some(j) = &self.jail {
            return j.client_view(now, key);
        }
        let st = if key.is_empty() {
            self.site.as_ref()
        } else {
            self.map.get(key)
        };
        let Some(st) = st else {
            let n = if self.opts.reach { self.n } else { self.n + 1 };
            return super::ClientView {
                remaining: n.min(super::REMAINING_CAP),
                reset_ms: 0,
                retry_after_ms: Some(0),
            };
        };
        if now < st.until {
            let left = (st.until != i64::MAX).then(|| (st.until - now) as u64);
            return super::ClientView {
                remaining: 0,
                reset_ms: left.unwrap_or(u64::MAX),
                retry_after_ms: left,
            };
        }
        let sum = live(&st.ban, st.ban_sum, now, self.w);
        let n = if self.opts.reach { self.n } else { self.n + 1 };
        super::ClientView {
            remaining: n.saturating_sub(sum).min(super::REMAINING_CAP),
            reset_ms: st
                .ban
                .back()
                .map_or(0, |&(t, _)| (t + self.w - now).max(0) as u64),
            retry_after_ms: Some(0),
        }
    }

    /// Whether the zone counts as fail2ban does, reading log lines (and their stamps).
    pub(crate) fn reads_lines(&self) -> bool {
        self.jail.is_some()
    }

    /// A request the zone sees without looking its key up (exempt, or without a key):
    /// a fail2ban jail still reads its line.
    pub(crate) fn note_line(&mut self, now: i64) {
        if let Some(j) = &mut self.jail {
            j.note_line(now);
        }
    }

    /// Looks `key` up at `now`, counting `cost` (0 = not counted). Without `account`
    /// only checks (a pending request; [`BanZone::account`] charges it).
    pub(crate) fn lookup(&mut self, now: i64, key: &[u8], cost: u64, account: bool) -> Lookup {
        if let Some(j) = &mut self.jail {
            return j.lookup(now, key, cost, account, &mut self.ledger);
        }
        if !account {
            let st = if key.is_empty() {
                self.site.as_ref()
            } else {
                self.map.get(key)
            };
            let fresh = fresh_state();
            let st = st.unwrap_or(&fresh);
            if now < st.until {
                return Lookup::Busy;
            }
            let w = self.weight(st, now, cost);
            let sum = live(&st.ban, st.ban_sum, now, self.w);
            if w > 0 && self.triggers(sum, w) && !self.opts.reach {
                return Lookup::Busy;
            }
            self.pending.clear();
            self.pending.extend_from_slice(key);
            return Lookup::Pending;
        }
        if key.is_empty() {
            let mut st = self.site.take().unwrap_or_else(fresh_state);
            let r = self.step(&mut st, now, key, cost);
            self.site = Some(st);
            self.peak = self.peak.max(1);
            return r;
        }
        self.sweep(now);
        // Take the state out so that `step` can borrow the zone.
        let mut st = self.map.remove(key).unwrap_or_else(fresh_state);
        let r = self.step(&mut st, now, key, cost);
        if !self.idle(&st, now) {
            self.map.insert(key, st);
            self.peak = self.peak.max(self.map.len());
        }
        r
    }

    /// Charges the pending request; its delay (always 0).
    pub(crate) fn account(&mut self, now: i64, cost: u64) -> u32 {
        if let Some(j) = &mut self.jail {
            return j.account(now, cost, &mut self.ledger);
        }
        let key = std::mem::take(&mut self.pending);
        let _ = self.lookup(now, &key, cost, true);
        self.pending = key;
        0
    }

    #[inline]
    fn triggers(&self, sum: u64, w: u64) -> bool {
        let after = sum.saturating_add(w);
        if self.opts.reach {
            after >= self.n
        } else {
            after > self.n
        }
    }

    /// What one counted request weighs: its cost, boosted for known offenders.
    #[inline]
    fn weight(&self, st: &KeyState, now: i64, cost: u64) -> u64 {
        if cost == 0 {
            return 0;
        }
        let k = remembered(st, now);
        if k == 0 || self.opts.increment.is_none() {
            return cost;
        }
        let boost = ((1u64 << k.min(20)) / 2 + 1).min(self.n.max(1));
        cost.saturating_mul(boost)
    }

    fn step(&mut self, st: &mut KeyState, now: i64, key: &[u8], cost: u64) -> Lookup {
        if now < st.until {
            let rec = &mut self.ledger.bans[st.open as usize];
            rec.lost += 1;
            if self.opts.extend && st.until != i64::MAX {
                st.until = now.saturating_add(st.len as i64);
                rec.end_ms = st.until;
                rec.extended += 1;
                st.last_end = st.until;
            }
            self.ledger.counters.lost += 1;
            self.ledger.last_hit = Some(st.open);
            return Lookup::Busy;
        }
        if st.bans > 0 && remembered(st, now) == 0 {
            st.bans = 0;
        }
        expire(&mut st.ban, &mut st.ban_sum, now, self.w);
        if let Some((_, cw)) = self.challenge {
            expire(&mut st.chal, &mut st.chal_sum, now, cw);
        }
        let w = self.weight(st, now, cost);
        if w == 0 {
            return Lookup::Admit(0);
        }
        self.ledger.counters.counted += 1;
        if self.triggers(st.ban_sum, w) {
            let base = self.opts.ban_ms;
            let len = match (&self.opts.increment, base) {
                (_, None) => None,
                (Some(inc), Some(b)) => Some(inc.ban_ms(b, st.bans)),
                (None, Some(b)) => Some(b),
            };
            st.bans = st.bans.saturating_add(1);
            st.len = len.unwrap_or(0);
            st.until = match len {
                None => i64::MAX,
                Some(l) => now
                    .saturating_add(l.min(i64::MAX as u64 / 2) as i64)
                    .max(now.saturating_add(1)),
            };
            st.last_end = st.until;
            st.open = self.ledger.bans.len().min(u32::MAX as usize - 1) as u32;
            st.ban.clear();
            st.ban_sum = 0;
            st.chal.clear();
            st.chal_sum = 0;
            let refused = !self.opts.reach;
            self.ledger.bans.push(BanRecord {
                key: key.into(),
                start_ms: now,
                end_ms: st.until,
                nth: st.bans,
                lost: u64::from(refused),
                extended: 0,
            });
            self.ledger.counters.bans += 1;
            if refused {
                self.ledger.counters.lost += 1;
                self.ledger.last_hit = Some(st.open);
                return Lookup::Busy;
            }
            return Lookup::Admit(0);
        }
        push(&mut st.ban, &mut st.ban_sum, now, w);
        if let Some((cn, _)) = self.challenge {
            push(&mut st.chal, &mut st.chal_sum, now, w);
            if st.chal_sum > cn {
                self.challenged = true;
                self.ledger.counters.challenged += 1;
            }
        }
        Lookup::Admit(0)
    }

    fn idle(&self, st: &KeyState, now: i64) -> bool {
        now >= st.until
            && remembered(st, now) == 0
            && st.ban.back().is_none_or(|&(t, _)| now - t >= self.w)
            && self
                .challenge
                .is_none_or(|(_, cw)| st.chal.back().is_none_or(|&(t, _)| now - t >= cw))
    }

    fn sweep(&mut self, now: i64) {
        if now < self.next_sweep && self.map.len() < self.sweep_len {
            return;
        }
        let (w, cw) = (self.w, self.challenge.map_or(0, |c| c.1));
        self.map.retain(|st| {
            !(now >= st.until
                && remembered(st, now) == 0
                && st.ban.back().is_none_or(|&(t, _)| now - t >= w)
                && st.chal.back().is_none_or(|&(t, _)| now - t >= cw))
        });
        self.next_sweep = now.saturating_add(w.max(cw).max(1000));
        self.sweep_len = (self.map.len() * 2).max(1024);
    }
}

/// Earlier bans still remembered at `now`.
#[inline]
fn remembered(st: &KeyState, now: i64) -> u32 {
    if st.bans == 0 || (st.last_end != i64::MAX && now.saturating_sub(st.last_end) > FORGET_MS) {
        0
    } else {
        st.bans
    }
}

#[inline]
fn expire(q: &mut VecDeque<(i64, u64)>, sum: &mut u64, now: i64, w: i64) {
    while let Some(&(t, c)) = q.front() {
        if now - t < w {
            break;
        }
        *sum -= c;
        q.pop_front();
    }
}

#[inline]
fn live(q: &VecDeque<(i64, u64)>, sum: u64, now: i64, w: i64) -> u64 {
    let mut s = sum;
    for &(t, c) in q {
        if now - t < w {
            break;
        }
        s -= c;
    }
    s
}

#[inline]
fn push(q: &mut VecDeque<(i64, u64)>, sum: &mut u64, now: i64, c: u64) {
    *sum += c;
    match q.back_mut() {
        Some((t, n)) if *t >= now => *n += c,
        _ => q.push_back((now, c)),
    }
}

/// Which requests count toward a ban: a matcher (scope, status, path) and, for a
/// fail2ban jail, `failregex`/`ignoreregex` applied to the request's log line rebuilt
/// from its fields ([`rebuild_line`]).
#[derive(Clone, Debug, Default)]
pub struct CountFilter {
    /// The conditions on fields (empty = every request).
    pub matcher: Matcher,
    /// fail2ban `failregex`: one must match the line (none given: not checked).
    pub fail: Vec<regex::bytes::Regex>,
    /// fail2ban `ignoreregex`: none may match.
    pub ignore: Vec<regex::bytes::Regex>,
    /// What counts, in words, when the matcher's own words are not enough (a jail's
    /// filter).
    pub note: Option<String>,
    buf: Vec<u8>,
}

impl CountFilter {
    /// A filter of field conditions only.
    pub fn of(matcher: Matcher) -> CountFilter {
        CountFilter {
            matcher,
            ..CountFilter::default()
        }
    }

    /// A filter with fail2ban regexes.
    pub fn with_regex(
        matcher: Matcher,
        fail: Vec<regex::bytes::Regex>,
        ignore: Vec<regex::bytes::Regex>,
    ) -> CountFilter {
        CountFilter {
            matcher,
            fail,
            ignore,
            note: None,
            buf: Vec::with_capacity(256),
        }
    }

    /// What counts, in words.
    pub fn describe(&self) -> String {
        if let Some(n) = &self.note {
            return n.clone();
        }
        let mut s = self.matcher.describe();
        if !self.fail.is_empty() {
            s.push_str(&format!(
                "; {} failregex on the line rebuilt from the stored fields",
                self.fail.len()
            ));
        }
        s
    }

    /// Whether the filter reads the log line (then every text field is needed).
    pub fn reads_line(&self) -> bool {
        !self.fail.is_empty() || !self.ignore.is_empty()
    }

    /// Whether `req` counts.
    pub fn counts(&mut self, req: &Request<'_>) -> bool {
        if !self.matcher.is_empty() && !self.matcher.matches(req) {
            return false;
        }
        if !self.reads_line() {
            return true;
        }
        rebuild_line(req, &mut self.buf);
        let line = self.buf.as_slice();
        (self.fail.is_empty() || self.fail.iter().any(|r| r.is_match(line)))
            && !self.ignore.iter().any(|r| r.is_match(line))
    }
}

/// The request as the combined-format line fail2ban's filters read, with the date cut
/// out as fail2ban's date detector cuts it (`[]` stays):
/// `CLIENT - USER [] "METHOD PATH?QUERY HTTP/1.1" STATUS BYTES "REFERER" "AGENT"`.
/// The protocol is not kept by the replay: it is written as `HTTP/1.1`; the ident field
/// is `-`; a missing field is `-` (a missing status `0`). Fields are the logged text
/// (a stored byte character is the byte again, `batch::stored_bytes`).
pub fn rebuild_line(req: &Request<'_>, buf: &mut Vec<u8>) {
    fn or_dash(buf: &mut Vec<u8>, v: Option<&[u8]>) {
        match v {
            Some(b) if !b.is_empty() => buf.extend_from_slice(b),
            _ => buf.push(b'-'),
        }
    }
    buf.clear();
    if req.client.is_empty() {
        match req.ip {
            Some(ip) => {
                use std::io::Write as _;
                let _ = write!(buf, "{ip}");
            }
            None => buf.push(b'-'),
        }
    } else {
        buf.extend_from_slice(req.client);
    }
    buf.extend_from_slice(b" - ");
    or_dash(buf, req.user);
    buf.extend_from_slice(b" [] \"");
    or_dash(buf, req.method);
    buf.push(b' ');
    or_dash(buf, req.path);
    if let Some(q) = req.query {
        buf.push(b'?');
        buf.extend_from_slice(q);
    }
    buf.extend_from_slice(b" HTTP/1.1\" ");
    let mut num = itoa_buf(u64::from(req.status));
    buf.extend_from_slice(num.as_bytes());
    buf.push(b' ');
    match req.bytes {
        Some(b) => {
            num = itoa_buf(b);
            buf.extend_from_slice(num.as_bytes());
        }
        None => buf.push(b'-'),
    }
    buf.extend_from_slice(b" \"");
    or_dash(buf, req.referer);
    buf.extend_from_slice(b"\" \"");
    or_dash(buf, req.user_agent);
    buf.push(b'"');
    if buf.windows(2).any(|w| w[0] == 0xEE && w[1] >= 0xBE)
        && let Ok(s) = std::str::from_utf8(buf)
        && let std::borrow::Cow::Owned(raw) = crate::batch::stored_bytes(s)
    {
        *buf = raw;
    }
}

fn itoa_buf(n: u64) -> Digits {
    let mut d = Digits([0; 20], 20);
    let mut n = n;
    loop {
        d.1 -= 1;
        d.0[d.1] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    d
}

struct Digits([u8; 20], usize);

impl Digits {
    fn as_bytes(&self) -> &[u8] {
        &self.0[self.1..]
    }
}

/// A key's bytes (as [`KeySpec::extract`] writes them) for people.
pub fn key_text(spec: &KeySpec, key: &[u8]) -> String {
    let ip = |b: &[u8]| -> Option<(String, usize)> {
        match b.first()? {
            4 if b.len() >= 5 => {
                let a: [u8; 4] = b[1..5].try_into().ok()?;
                Some((Ipv4Addr::from(a).to_string(), 5))
            }
            6 if b.len() >= 17 => {
                let a: [u8; 16] = b[1..17].try_into().ok()?;
                Some((Ipv6Addr::from(a).to_string(), 17))
            }
            _ => None,
        }
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match spec {
        KeySpec::Site => "site".into(),
        KeySpec::Ip => match ip(key) {
            Some((s, n)) if n == key.len() => s,
            _ => text(key.strip_prefix(b"h").unwrap_or(key)),
        },
        KeySpec::Prefix { .. } => match ip(key) {
            Some((s, n)) if n + 1 == key.len() => format!("{s}/{}", key[n]),
            _ => text(key.strip_prefix(b"h").unwrap_or(key)),
        },
        KeySpec::Status if key.len() == 2 => u16::from_be_bytes([key[0], key[1]]).to_string(),
        _ => text(key),
    }
}

/// A duration in fail2ban's words (`10m`, `1h`, `1d 12h`), for descriptions.
pub fn ban_length(ms: Option<u64>) -> String {
    match ms {
        None => "for ever".into(),
        Some(ms) => crate::rate::describe_period(ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::increment::{milli_text, parse_milli};

    fn zone(n: u64, w: u64, opts: BanOptions) -> BanZone {
        BanZone::new(Rate::new(n, w).unwrap(), opts)
    }

    #[test]
    fn bans_past_n_for_t_and_counts_lost() {
        let mut z = zone(
            3,
            1000,
            BanOptions {
                ban_ms: Some(10_000),
                ..BanOptions::default()
            },
        );
        let k = b"a";
        let d: Vec<bool> = [0, 10, 20, 30, 40, 5000, 10_029, 10_030]
            .iter()
            .map(|&t| z.lookup(t, k, 1, true) == Lookup::Busy)
            .collect();
        assert_eq!(d, [false, false, false, true, true, true, true, false]);
        assert_eq!(z.bans().len(), 1);
        let b = &z.bans()[0];
        assert_eq!((b.start_ms, b.end_ms, b.lost), (30, 10_030, 4));
    }

    #[test]
    fn reach_passes_the_trigger_and_increments_grow() {
        let mut z = zone(
            2,
            1000,
            BanOptions {
                ban_ms: Some(1000),
                reach: true,
                increment: Some(Increment::doubling()),
                ..BanOptions::default()
            },
        );
        assert_eq!(z.lookup(0, b"k", 1, true), Lookup::Admit(0));
        assert_eq!(z.lookup(1, b"k", 1, true), Lookup::Admit(0));
        assert_eq!(z.lookup(2, b"k", 1, true), Lookup::Busy);
        // Ban 1 ends at 1001; a known offender's one failure counts 2: banned again.
        assert_eq!(z.lookup(1001, b"k", 1, true), Lookup::Admit(0));
        assert_eq!(z.bans()[1].end_ms, 1001 + 2000);
        assert_eq!(z.bans()[1].nth, 2);
    }

    #[test]
    fn multipliers_and_maxtime() {
        let inc = Increment {
            factor_milli: 1000,
            multipliers: vec![1, 5, 30],
            max_ms: Some(20_000),
        };
        assert_eq!(inc.ban_ms(1000, 0), 1000);
        assert_eq!(inc.ban_ms(1000, 1), 5000);
        assert_eq!(inc.ban_ms(1000, 2), 20_000);
        assert_eq!(inc.ban_ms(1000, 9), 20_000);
        assert_eq!(Increment::doubling().ban_ms(600, 3), 4800);
    }

    #[test]
    fn rebuilt_line_and_key_text() {
        let req = Request {
            client: b"192.0.2.1",
            method: Some(b"GET"),
            path: Some(b"/wp-login.php"),
            status: 404,
            bytes: Some(12),
            user_agent: Some(b"curl/8"),
            ..Default::default()
        };
        let mut b = Vec::new();
        rebuild_line(&req, &mut b);
        assert_eq!(
            String::from_utf8(b).unwrap(),
            "192.0.2.1 - - [] \"GET /wp-login.php HTTP/1.1\" 404 12 \"-\" \"curl/8\""
        );
        let mut k = Vec::new();
        let r = Request {
            ip: "203.0.113.9".parse().ok(),
            ..Default::default()
        };
        KeySpec::Ip.extract(&r, &mut k);
        assert_eq!(key_text(&KeySpec::Ip, &k), "203.0.113.9");
        let p = KeySpec::parse("prefix").unwrap();
        p.extract(&r, &mut k);
        assert_eq!(key_text(&p, &k), "203.0.113.0/24");
        assert_eq!(parse_milli("1.5"), Some(1500));
        assert_eq!(milli_text(1500), "1.5");
    }
}
