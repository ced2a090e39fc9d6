//! fail2ban's own counting and banning (`algo=ban,fail2ban`, and every `--fail2ban-jail`
//! jail): a key is banned when its failure ticket reaches `maxretry`, counted as
//! fail2ban 1.0 counts, not over a sliding window. Time is passed in; state per key.
//!
//! What fail2ban does, from its source, and what is replayed (times in seconds as
//! fail2ban holds them, as `f64`, so the arithmetic is Python's):
//!
//! * **A failure ticket, not a window** (`server/ticket.py`, `FailTicket.adjustTime`):
//!   a key's first failure opens a ticket `(first, last, retry = 1)`; each later one
//!   adds 1, but first, once the ticket spans more than findtime (`first < t −
//!   findtime`), its count is rescaled as a rate, `retry = round(retry / (t − first) ·
//!   findtime)` (round half to even), and `first = t − findtime`. A failure exactly
//!   findtime old still counts. The ban starts with the failure that makes `retry ≥
//!   maxretry`; that request was served (fail2ban reads it from the log).
//! * **Tickets are dropped only at a cleanup** (`failmanager.py` `cleanup`,
//!   `filter.py` `performSvc`): after every 100th line the jail reads and after every
//!   ban, at most once in 5 s, the tickets whose *last* failure is findtime old or older
//!   are deleted. A ticket not yet cleaned up keeps its count, rescaled.
//! * **A ban** lasts `bantime` from the failure that triggered it, its end included
//!   (fail2ban unbans once now > end). Requests of a banned key are refused and never
//!   seen by the jail (the firewall drops them before the server logs them): they do
//!   not count, do not count as lines, and do not extend the ban.
//! * **`bantime.increment`** (`observer.py`, `database.py`): every ban is written to
//!   the ban database (`bips`: time of ban, ban time, ban count). While the key's row is
//!   there, its n-th ban lasts `evformula(bantime, count)` and each of its failures
//!   after the last ban weighs `min(2^count / 2 + 1, maxretry)` (2, 3, 5, 9…). The
//!   database is purged hourly from the start of the log (the daemon's first hour):
//!   a row goes once `timeofban + 3·bantime < now − dbpurgeage` (1 day), so an address
//!   back a day after a short ban is still a repeat offender.
//! * The ban number is fail2ban's ban count: 1 without increments, the database's
//!   count + 1 with them.
//!
//! Timing-dependent in a real daemon, and the choice made: the filter, the observer
//! and the actions keep up with the log (each line is fully handled before the next);
//! the purge timer starts with the first line.

use super::ban_log::{BanRecord, Ledger};
use super::increment::Increment;
use super::store::{KeyMap, Lookup};

/// Lines between two service calls (`Filter.processLineAndAdd`: `procLines % 100`).
const SVC_LINES: u64 = 100;
/// The least time between two cleanups, s (`Filter.performSvc`).
const SVC_GAP_S: f64 = 5.0;
/// The ban database purge interval, ms (`ObserverThread.__db_purge_interval`).
const PURGE_EVERY_MS: i64 = 3_600_000;
/// `dbpurgeage` (fail2ban.conf's default, 1 day), s.
const PURGE_AGE_S: i64 = 86_400;
/// `Fail2BanDb._outDatedFactor`.
const OUTDATED_FACTOR: f64 = 3.0;

/// One key's failure ticket (`FailTicket`).
#[derive(Clone, Copy, Debug)]
struct Ticket {
    first: f64,
    last: f64,
    retry: f64,
    /// The ban count the observer gave the ticket's first failure (`setBanCount`).
    ban_count: u32,
}

impl Ticket {
    /// `FailTicket.adjustTime`.
    fn adjust(&mut self, t: f64, findtime: f64) {
        if t > self.last {
            if self.first < t - findtime {
                self.retry = (self.retry / (t - self.first) * findtime).round_ties_even();
                self.first = t - findtime;
            }
            self.last = t;
        }
    }
}

/// The key's row in the ban database (`bips`).
#[derive(Clone, Copy, Debug)]
struct Bip {
    /// `int(round(ticket time))`, s.
    time_s: i64,
    /// Its ban time, s; `None` = permanent.
    ban_s: Option<f64>,
    count: u32,
}

#[derive(Clone, Debug, Default)]
struct Host {
    ticket: Option<Ticket>,
    /// The current ban: its end (inclusive, ms; `i64::MAX` = never) and its index in
    /// the ban log.
    ban: Option<(i64, u32)>,
    bip: Option<Bip>,
}

/// A jail: its failure manager, ban manager and ban database.
pub(crate) struct Jail {
    maxretry: f64,
    findtime: f64,
    ban_ms: Option<u64>,
    increment: Option<Increment>,
    map: KeyMap<Host>,
    /// Lines read (requests not dropped by a ban).
    lines: u64,
    next_svc: f64,
    /// When the last cleanup ran, s.
    cleaned: Option<f64>,
    /// The first line's time, ms (the purge timer's start).
    start: Option<i64>,
    next_sweep: i64,
    sweep_len: usize,
    peak: usize,
    pending: Vec<u8>,
}

impl Jail {
    /// A jail banning at `maxretry` failures with findtime `findtime_ms`, for `ban_ms`
    /// (`None`: for ever), with optional increments.
    pub(crate) fn new(
        maxretry: u64,
        findtime_ms: u64,
        ban_ms: Option<u64>,
        increment: Option<Increment>,
    ) -> Jail {
        Jail {
            maxretry: maxretry as f64,
            findtime: findtime_ms as f64 / 1000.0,
            ban_ms,
            increment,
            map: KeyMap::new(),
            lines: 0,
            next_svc: f64::NEG_INFINITY,
            cleaned: None,
            start: None,
            next_sweep: i64::MIN,
            sweep_len: 1024,
            peak: 0,
            pending: Vec::new(),
        }
    }

    /// Keys held now.
    pub(crate) fn live_keys(&self) -> usize {
        self.map.len()
    }

    /// Most keys held at once.
    pub(crate) fn peak_keys(&self) -> usize {
        self.peak
    }

    /// A line the jail reads without looking its key up (an exempt address, a request
    /// without one): it counts toward the cleanup cadence.
    pub(crate) fn note_line(&mut self, now: i64) {
        self.start.get_or_insert(now);
        self.line_read(secs(now));
    }

    /// What a client sending `key` would be told at `now`: while banned, to come back
    /// once the ban's end second is past; otherwise how many more failures it may make
    /// (the one that reaches maxretry passes and bans).
    pub(crate) fn client_view(&self, now: i64, key: &[u8]) -> super::ClientView {
        let h = self.map.get(key);
        if let Some((end, _)) = h.and_then(|h| h.ban)
            && now <= end
        {
            let left = (end != i64::MAX).then(|| (end - now) as u64 + 1);
            return super::ClientView {
                remaining: 0,
                reset_ms: left.unwrap_or(u64::MAX),
                retry_after_ms: left,
            };
        }
        let (retry, last) = h
            .and_then(|h| h.ticket)
            .map_or((0.0, None), |tk| (tk.retry, Some(tk.last)));
        super::ClientView {
            remaining: ((self.maxretry - retry).ceil().max(0.0) as u64).min(super::REMAINING_CAP),
            reset_ms: last.map_or(0, |l| {
                ((l + self.findtime - secs(now)) * 1000.0).max(0.0) as u64
            }),
            retry_after_ms: Some(0),
        }
    }

    /// Looks `key` up at `now`, counting a failure when `cost > 0`. Without `account`
    /// only checks (a pending request; [`Jail::account`] charges it).
    pub(crate) fn lookup(
        &mut self,
        now: i64,
        key: &[u8],
        cost: u64,
        account: bool,
        ledger: &mut Ledger,
    ) -> Lookup {
        if !account {
            if let Some(h) = self.map.get(key)
                && let Some((end, _)) = h.ban
                && now <= end
            {
                return Lookup::Busy;
            }
            self.pending.clear();
            self.pending.extend_from_slice(key);
            return Lookup::Pending;
        }
        self.start.get_or_insert(now);
        self.sweep(now);
        let mut h = self.map.remove(key).unwrap_or_default();
        let r = self.step(&mut h, now, key, cost, ledger);
        if !self.forgettable(&h, now) {
            self.map.insert(key, h);
            self.peak = self.peak.max(self.map.len());
        }
        r
    }

    /// Charges the pending request; its delay (always 0).
    pub(crate) fn account(&mut self, now: i64, cost: u64, ledger: &mut Ledger) -> u32 {
        let key = std::mem::take(&mut self.pending);
        let _ = self.lookup(now, &key, cost, true, ledger);
        self.pending = key;
        0
    }

    fn step(
        &mut self,
        h: &mut Host,
        now: i64,
        key: &[u8],
        cost: u64,
        ledger: &mut Ledger,
    ) -> Lookup {
        if let Some((end, rec)) = h.ban {
            if now <= end {
                ledger.bans[rec as usize].lost += 1;
                ledger.counters.lost += 1;
                ledger.last_hit = Some(rec);
                return Lookup::Busy;
            }
            h.ban = None;
        }
        let t = secs(now);
        self.expire(h, now);
        let mut opened = false;
        if cost > 0 {
            ledger.counters.counted += 1;
            opened = false;
            // The filter: `FailManager.addFailure`.
            let retry = match &mut h.ticket {
                Some(tk) => {
                    tk.adjust(t, self.findtime);
                    tk.retry += 1.0;
                    tk.retry
                }
                None => {
                    h.ticket = Some(Ticket {
                        first: t,
                        last: t,
                        retry: 1.0,
                        ban_count: 0,
                    });
                    opened = true;
                    1.0
                }
            };
            if retry >= self.maxretry {
                self.ban(h, now, key, ledger);
            }
        }
        self.line_read(t);
        // The observer: a known offender's failure weighs more (`failureFound`).
        if cost > 0
            && self.increment.is_some()
            && let (Some(tk), Some(bip)) = (&mut h.ticket, h.bip)
            && t > bip.time_s as f64
        {
            let boost = ((1u64 << bip.count.min(20)) as f64 / 2.0 + 1.0).min(self.maxretry);
            if boost > 1.0 {
                tk.retry += boost - 1.0;
                if opened {
                    // The line's ticket is the one kept: it takes the row's count.
                    tk.ban_count = tk.ban_count.max(bip.count);
                }
                if tk.retry >= self.maxretry {
                    self.ban(h, now, key, ledger);
                }
            }
        }
        Lookup::Admit(0)
    }

    /// Bans the key's ticket now (`performBan`, the actions' `__checkBan`, the
    /// observer's `banFound`), then services the filter.
    fn ban(&mut self, h: &mut Host, now: i64, key: &[u8], ledger: &mut Ledger) {
        // `BanManager.addBanTicket` counts the ban on the ticket; the observer's
        // `incrBanTime` raises it past the database's and lengthens the ban by it.
        let counted = h
            .ticket
            .take()
            .map_or(0, |tk| tk.ban_count)
            .saturating_add(1);
        let known = self.increment.as_ref().and_then(|inc| Some((inc, h.bip?)));
        let (nth, len) = match (known, self.ban_ms) {
            (_, None) => (counted, None),
            (Some((inc, bip)), Some(base)) => (
                counted.max(bip.count.saturating_add(1)),
                Some(inc.ban_ms(base, bip.count)),
            ),
            (None, Some(base)) => (counted, Some(base)),
        };
        let end = match len {
            None => i64::MAX,
            Some(l) => now.saturating_add(l.min(i64::MAX as u64 / 2) as i64),
        };
        if self.increment.is_some() {
            h.bip = Some(Bip {
                time_s: secs(now).round_ties_even() as i64,
                ban_s: len.map(|l| l as f64 / 1000.0),
                count: nth,
            });
        }
        let rec = ledger.bans.len().min(u32::MAX as usize - 1) as u32;
        h.ban = Some((end, rec));
        ledger.bans.push(BanRecord {
            key: key.into(),
            start_ms: now,
            end_ms: end,
            nth,
            lost: 0,
            extended: 0,
        });
        ledger.counters.bans += 1;
        self.service(secs(now));
    }

    /// One more line read; every 100th services the filter.
    fn line_read(&mut self, t: f64) {
        self.lines += 1;
        if self.lines.is_multiple_of(SVC_LINES) {
            self.service(t);
        }
    }

    /// `Filter.performSvc`: a cleanup at most every 5 s. Tickets are dropped lazily
    /// ([`Jail::expire`]): the latest cleanup decides, its cut-off being the highest.
    fn service(&mut self, t: f64) {
        if t >= self.next_svc {
            self.next_svc = t + SVC_GAP_S;
            self.cleaned = Some(t);
        }
    }

    /// Drops what fail2ban would have dropped by now: the ticket at the latest cleanup,
    /// the database row at the latest purge.
    fn expire(&self, h: &mut Host, now: i64) {
        expire(h, self.cleaned, self.findtime, self.start, now);
    }

    /// Whether the key's state is gone for good at `now`: not banned, no ticket (a
    /// ticket lasts until a cleanup drops it), no database row.
    fn forgettable(&self, h: &Host, now: i64) -> bool {
        h.ban.is_none_or(|(end, _)| now > end) && h.bip.is_none() && h.ticket.is_none()
    }

    fn sweep(&mut self, now: i64) {
        if now < self.next_sweep && self.map.len() < self.sweep_len {
            return;
        }
        let (cleaned, findtime, start) = (self.cleaned, self.findtime, self.start);
        self.map.retain(|h| {
            expire(h, cleaned, findtime, start, now);
            !(h.ban.is_none_or(|(end, _)| now > end) && h.bip.is_none() && h.ticket.is_none())
        });
        self.next_sweep = now
            .saturating_add((findtime * 1000.0) as i64)
            .max(now.saturating_add(1000));
        self.sweep_len = (self.map.len() * 2).max(1024);
    }
}

/// [`Jail::expire`]: a ticket whose last failure was findtime old at the latest cleanup
/// is gone (the latest has the highest cut-off); a database row the latest hourly purge
/// at or before `now` matched is gone (`Fail2BanDb._purge_bips`).
fn expire(h: &mut Host, cleaned: Option<f64>, findtime: f64, start: Option<i64>, now: i64) {
    if let (Some(tk), Some(c)) = (h.ticket, cleaned)
        && tk.last <= c - findtime
    {
        h.ticket = None;
    }
    if let (Some(bip), Some(start)) = (h.bip, start) {
        let k = now.saturating_sub(start) / PURGE_EVERY_MS;
        if k >= 1 {
            let at = start.saturating_add(k.saturating_mul(PURGE_EVERY_MS));
            let cut = at.div_euclid(1000) - PURGE_AGE_S;
            if let Some(b) = bip.ban_s
                && bip.time_s < cut
                && (bip.time_s as f64 + b * OUTDATED_FACTOR) < cut as f64
            {
                h.bip = None;
            }
        }
    }
}

/// ms → fail2ban's seconds.
#[inline]
fn secs(ms: i64) -> f64 {
    ms as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jail(maxretry: u64, findtime_ms: u64, ban_ms: u64, inc: bool) -> (Jail, Ledger) {
        (
            Jail::new(
                maxretry,
                findtime_ms,
                Some(ban_ms),
                inc.then(Increment::doubling),
            ),
            Ledger::default(),
        )
    }

    #[test]
    fn findtime_is_a_rate_not_a_window() {
        // One failure every 2.1 s never puts 30 in a 60 s window, but fail2ban rescales
        // the ticket once it spans more than 60 s: 29 · 60 / 60.9 → 29, +1 = 30: banned.
        let (mut j, mut l) = jail(30, 60_000, 600_000, false);
        let mut banned_at = None;
        for k in 0..40i64 {
            let now = k * 2100;
            j.lookup(now, b"a", 1, true, &mut l);
            if banned_at.is_none() && !l.bans.is_empty() {
                banned_at = Some(now);
            }
        }
        assert_eq!(banned_at, Some(60_900));
        assert_eq!(l.bans[0].nth, 1);
        assert_eq!(l.bans[0].end_ms, 60_900 + 600_000);
    }

    #[test]
    fn a_failure_exactly_findtime_old_counts_and_the_end_is_banned() {
        let (mut j, mut l) = jail(3, 10_000, 5_000, false);
        for t in [0, 5_000, 10_000] {
            assert_eq!(j.lookup(t, b"a", 1, true, &mut l), Lookup::Admit(0));
        }
        assert_eq!(l.bans.len(), 1);
        // Banned through its end second, free after.
        assert_eq!(j.lookup(15_000, b"a", 0, true, &mut l), Lookup::Busy);
        assert_eq!(j.lookup(15_001, b"a", 0, true, &mut l), Lookup::Admit(0));
    }

    #[test]
    fn a_ticket_lasts_until_a_cleanup() {
        // 4 failures of 5, then nothing for 61 s: no cleanup ran (fewer than 100 lines,
        // no ban), so the ticket is still there, rescaled: round(4 / 61 · 60) = 4, +1 = 5.
        let (mut j, mut l) = jail(5, 60_000, 600_000, false);
        for t in [0, 0, 0, 0] {
            j.lookup(t, b"a", 1, true, &mut l);
        }
        j.lookup(61_000, b"a", 1, true, &mut l);
        assert_eq!(l.bans.len(), 1);
        // With 100 lines read in between, the 100th at 61 s cleans the ticket up.
        let (mut j, mut l) = jail(5, 60_000, 600_000, false);
        for t in [0, 0, 0, 0] {
            j.lookup(t, b"a", 1, true, &mut l);
        }
        for _ in 0..96 {
            j.lookup(61_000, b"b", 0, true, &mut l);
        }
        j.lookup(61_000, b"a", 1, true, &mut l);
        assert!(l.bans.is_empty());
    }

    #[test]
    fn repeat_offenders_as_the_ban_database_remembers_them() {
        // maxretry 3, bantime 10 min, increments. Ban 1 at 0 s; its row is purged once
        // 0 + 3·600 < purge time − 86,400: by the hourly purge at 90,000 s.
        let (mut j, mut l) = jail(3, 60_000, 600_000, true);
        for _ in 0..3 {
            j.lookup(0, b"a", 1, true, &mut l);
        }
        assert_eq!(l.bans.len(), 1);
        // Back a day later: a known offender's failure weighs 2^1/2 + 1 = 2; the next
        // makes 3: ban 2, doubled.
        j.lookup(86_401_000, b"a", 1, true, &mut l);
        assert_eq!(l.bans.len(), 1);
        j.lookup(86_402_000, b"a", 1, true, &mut l);
        assert_eq!(l.bans.len(), 2);
        assert_eq!(l.bans[1].nth, 2);
        assert_eq!(l.bans[1].end_ms - l.bans[1].start_ms, 1_200_000);
        // Ban 2 (86,402 s, 1,200 s) is purged once 86,402 + 3,600 < P − 86,400: not by
        // the purge at 176,400 s. A failure weighs 3 = maxretry: ban 3 at once.
        j.lookup(176_401_000, b"a", 1, true, &mut l);
        assert_eq!(l.bans.len(), 3);
        assert_eq!(
            (l.bans[2].nth, l.bans[2].end_ms - l.bans[2].start_ms),
            (3, 2_400_000)
        );
    }

    #[test]
    fn forgotten_between_two_failures() {
        // fail2ban's own quirk: the first failure of a new ticket meets the database row
        // (the ticket takes its ban count), the row is purged before the ban: ban 2 by
        // number, not doubled (bantime 600 s, purge at 90,000 s).
        let (mut j, mut l) = jail(5, 60_000, 600_000, true);
        for _ in 0..5 {
            j.lookup(0, b"a", 1, true, &mut l);
        }
        j.lookup(89_999_000, b"a", 1, true, &mut l);
        for t in 90_000..90_003 {
            j.lookup(t * 1000, b"a", 1, true, &mut l);
        }
        assert_eq!(l.bans.len(), 2);
        assert_eq!(l.bans[1].nth, 2);
        assert_eq!(l.bans[1].end_ms - l.bans[1].start_ms, 600_000);
        assert_eq!(l.bans[1].start_ms, 90_002_000);
    }
}
