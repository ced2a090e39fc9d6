//! A zone: one limit's parameters plus the per-key state of its algorithm; the low-level
//! entry point `Zone::check(now, key, cost)` for callers with their own keys.

use super::ban::{BanZone, CountFilter};
use super::caddy::caddy;
use super::fixed_window::FixedWindow;
use super::gcra::Gcra;
use super::haproxy::{HaproxyRate, StickTable};
use super::leaky_queue::LeakyQueue;
use super::nginx::{NODELAY_MILLI, NginxLimit, NginxZone, NgxRc};
use super::sliding_log::SlidingLog;
use super::sliding_window::SlidingWindow;
use super::spec::{Algorithm, LimitSpec, NginxDelay, SpecError};
use super::store::{Lookup, Store};
use super::token_bucket::TokenBucket;

pub use super::decision::ZoneId;

enum Kind {
    Nginx(NginxZone),
    Log(Store<SlidingLog>),
    Token(Store<TokenBucket>),
    Gcra(Store<Gcra>),
    Fixed(Store<FixedWindow>),
    Sliding(Store<SlidingWindow>),
    Leaky(Store<LeakyQueue>),
    Haproxy(Store<HaproxyRate>),
    /// A haproxy.cfg stick table, driven by its policy's program.
    Table(StickTable),
    /// `algo=ban`: bans and their log.
    Ban(Box<BanZone>),
}

macro_rules! each_store {
    ($kind:expr, $s:ident => $e:expr, $n:ident => $ne:expr) => {
        match $kind {
            Kind::Nginx($n) => $ne,
            Kind::Table($n) => $ne,
            Kind::Ban($n) => $ne,
            Kind::Haproxy($s) => $e,
            Kind::Log($s) => $e,
            Kind::Token($s) => $e,
            Kind::Gcra($s) => $e,
            Kind::Fixed($s) => $e,
            Kind::Sliding($s) => $e,
            Kind::Leaky($s) => $e,
        }
    };
}

/// What one zone decided for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Passed at once.
    Admit,
    /// Passed after waiting this many ms.
    Delay(u32),
    /// Refused.
    Refuse,
}

/// Per-zone tallies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneCounters {
    /// Requests this zone judged (key present).
    pub checked: u64,
    /// Requests it let through (including delayed ones).
    pub passed: u64,
    /// Requests it delayed.
    pub delayed: u64,
    /// Requests it refused.
    pub refused: u64,
    /// Requests it skipped because their key was empty or missing.
    pub skipped: u64,
    /// Cost it charged.
    pub cost_charged: u64,
    /// Requests whose cost field was missing (charged 0).
    pub cost_missing: u64,
    /// nginx zones: decisions that would flip with a 1 ms longer or shorter interval
    /// (where a log replay can disagree with the real server; see [`super::Verdict`]).
    pub boundary: u64,
}

/// One limit with its per-key state.
pub struct Zone {
    name: String,
    spec: LimitSpec,
    kind: Kind,
    default_limit: NginxLimit,
    pub(crate) counters: ZoneCounters,
    /// Set by a lookup on a boundary; the policy reads and clears it.
    pub(crate) boundary: bool,
    /// Set by a ban zone's lookup that challenged; the policy reads and clears it.
    pub(crate) challenged: bool,
    /// Ban zones: which requests count toward a ban (`None`: every one).
    count: Option<Box<CountFilter>>,
}

impl Zone {
    /// A zone for `spec`.
    pub fn new(name: impl Into<String>, spec: LimitSpec) -> Result<Zone, SpecError> {
        Zone::with_max_keys(name, spec, None)
    }

    /// Like [`Zone::new`], with a node cap for nginx zones: a stand-in for the zone's
    /// shared-memory size; when full, the least recently used node is freed by force, as
    /// nginx does (`None` = unbounded). Other algorithms ignore it.
    pub fn with_max_keys(
        name: impl Into<String>,
        spec: LimitSpec,
        max_keys: Option<usize>,
    ) -> Result<Zone, SpecError> {
        spec.validate().map_err(|problem| SpecError {
            spec: spec.to_string(),
            problem,
        })?;
        let (n, w) = spec.rate.reduced();
        let b = spec.burst();
        let kind = match spec.algorithm {
            Algorithm::Nginx => Kind::Nginx(NginxZone::new(spec.rate.nginx_milli(), max_keys)),
            Algorithm::SlidingLog => Kind::Log(Store::new(SlidingLog::new(
                spec.rate.count(),
                spec.rate.window_ms(),
            ))),
            Algorithm::Caddy => {
                Kind::Log(Store::new(caddy(spec.rate.count(), spec.rate.window_ms())))
            }
            Algorithm::TokenBucket => Kind::Token(Store::new(TokenBucket::new(n, w, b))),
            Algorithm::Gcra => Kind::Gcra(Store::new(Gcra::new(n, w, b))),
            Algorithm::FixedWindow => Kind::Fixed(Store::new(FixedWindow::new(
                spec.rate.count(),
                spec.rate.window_ms(),
            ))),
            Algorithm::SlidingWindow => Kind::Sliding(Store::new(SlidingWindow::new(
                spec.rate.count(),
                spec.rate.window_ms(),
            ))),
            Algorithm::LeakyQueue => Kind::Leaky(Store::new(LeakyQueue::new(n, w, b))),
            Algorithm::Haproxy => Kind::Haproxy(Store::new(HaproxyRate::new(
                spec.rate.count(),
                spec.rate.window_ms(),
                spec.expire_ms(),
            ))),
            Algorithm::Ban => Kind::Ban(Box::new(BanZone::new(
                spec.rate,
                spec.ban.clone().unwrap_or_default(),
            ))),
        };
        let default_limit = nginx_limit(b, spec.delay);
        Ok(Zone {
            name: name.into(),
            spec,
            kind,
            default_limit,
            counters: ZoneCounters::default(),
            boundary: false,
            challenged: false,
            count: None,
        })
    }

    /// A haproxy.cfg stick table as a zone: `spec` describes it (its rate is the
    /// period; its key the first tracker's), `table` holds the entries.
    pub fn stick_table(name: impl Into<String>, spec: LimitSpec, table: StickTable) -> Zone {
        Zone {
            name: name.into(),
            spec,
            kind: Kind::Table(table),
            default_limit: nginx_limit(0, NginxDelay::Default),
            counters: ZoneCounters::default(),
            boundary: false,
            challenged: false,
            count: None,
        }
    }

    /// What a client sending `key` a request costing `cost` would be told at `now`, from
    /// this zone's state (`None`: a haproxy.cfg stick table, driven by its program);
    /// without `full` only the `Retry-After` is sure to be computed.
    pub fn client_view(
        &self,
        now: i64,
        key: &[u8],
        cost: u64,
        lim: &NginxLimit,
        full: bool,
    ) -> Option<super::ClientView> {
        Some(match &self.kind {
            Kind::Nginx(z) => z.client_view(now, key, cost, lim),
            Kind::Log(s) => s.client_view(now, key, cost, full),
            Kind::Token(s) => s.client_view(now, key, cost, full),
            Kind::Gcra(s) => s.client_view(now, key, cost, full),
            Kind::Fixed(s) => s.client_view(now, key, cost, full),
            Kind::Sliding(s) => s.client_view(now, key, cost, full),
            Kind::Leaky(s) => s.client_view(now, key, cost, full),
            Kind::Haproxy(s) => s.client_view(now, key, cost, full),
            Kind::Ban(z) => z.client_view(now, key),
            Kind::Table(_) => return None,
        })
    }

    /// The zone's clock for `req` decided at `now`: a fail2ban jail reads the log
    /// line's own stamp (the whole second, where the replay spread the second).
    #[inline]
    pub(crate) fn clock(&self, req: &super::Request<'_>, now: i64) -> i64 {
        match &self.kind {
            Kind::Ban(z) if req.whole_second && z.reads_lines() => now - now.rem_euclid(1000),
            _ => now,
        }
    }

    /// A request the zone sees without looking a key up (exempt, or without the key):
    /// a fail2ban jail still reads its line.
    pub(crate) fn note_line(&mut self, now: i64) {
        if let Kind::Ban(z) = &mut self.kind {
            z.note_line(now);
        }
    }

    /// A ban zone's bans and tallies.
    pub fn ban(&self) -> Option<&BanZone> {
        match &self.kind {
            Kind::Ban(b) => Some(b),
            _ => None,
        }
    }

    /// Sets which requests count toward this zone's bans (ban zones only; the others
    /// ignore it).
    pub fn set_count_filter(&mut self, f: CountFilter) {
        self.count = Some(Box::new(f));
    }

    /// The count filter, if any.
    pub fn count_filter(&self) -> Option<&CountFilter> {
        self.count.as_deref()
    }

    /// Whether `req` counts toward this zone (a ban zone's count filter; always true
    /// for other zones).
    #[inline]
    pub(crate) fn counts(&mut self, req: &super::Request<'_>) -> bool {
        self.count.as_mut().is_none_or(|c| c.counts(req))
    }

    /// The stick table of a haproxy.cfg zone.
    pub fn table(&self) -> Option<&StickTable> {
        match &self.kind {
            Kind::Table(t) => Some(t),
            _ => None,
        }
    }

    pub(crate) fn table_mut(&mut self) -> Option<&mut StickTable> {
        match &mut self.kind {
            Kind::Table(t) => Some(t),
            _ => None,
        }
    }

    /// The zone's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The zone's limit.
    pub fn spec(&self) -> &LimitSpec {
        &self.spec
    }

    /// Binds the zone's `field:NAME` key to the slot its log format captures it into
    /// ([`KeySpec::bind_field`](super::KeySpec::bind_field)); other keys stay as they
    /// are.
    pub fn bind_field(&mut self, slot: u8, header: Option<&str>) {
        self.spec.key.bind_field(slot, header);
    }

    /// Binds the zone's `key=asn` to the network database; other keys stay as they are.
    pub fn bind_networks(&mut self, db: &std::sync::Arc<crate::forensics::netdb::NetworkDb>) {
        self.spec.key.bind_networks(db);
    }

    /// Tallies so far.
    pub fn counters(&self) -> &ZoneCounters {
        &self.counters
    }

    /// Keys held now (memory is proportional to this).
    pub fn live_keys(&self) -> usize {
        each_store!(&self.kind, s => s.live_keys(), n => n.live_keys())
    }

    /// Most keys held at once.
    pub fn peak_keys(&self) -> usize {
        each_store!(&self.kind, s => s.peak_keys(), n => n.peak_keys())
    }

    /// Judges one request at `now_ms` for `key` (empty = the site-wide bucket) costing
    /// `cost`, and charges it if admitted. Times must not go backwards by much (a
    /// decision-time ordered stream); the counters are not touched.
    pub fn check(&mut self, now_ms: i64, key: &[u8], cost: u64) -> Outcome {
        let lim = self.default_limit;
        match self.lookup(now_ms, key, cost, &lim, true) {
            Lookup::Admit(0) => Outcome::Admit,
            Lookup::Admit(d) => Outcome::Delay(d),
            _ => Outcome::Refuse,
        }
    }

    /// The default nginx parameters of this zone (`burst`, `delay`).
    pub(crate) fn default_limit(&self) -> NginxLimit {
        self.default_limit
    }

    pub(crate) fn is_nginx(&self) -> bool {
        matches!(self.kind, Kind::Nginx(_))
    }

    #[inline]
    pub(crate) fn lookup(
        &mut self,
        now: i64,
        key: &[u8],
        cost: u64,
        lim: &NginxLimit,
        account: bool,
    ) -> Lookup {
        match &mut self.kind {
            Kind::Nginx(z) => {
                let (r, b) = match z.lookup(now, key, cost, lim, account) {
                    NgxRc::Ok(e, b) => (Lookup::Admit(clamp_ms(z.delay_ms(e, lim))), b),
                    NgxRc::Busy(b) => (Lookup::Busy, b),
                    NgxRc::Again(b) => (Lookup::Pending, b),
                };
                if b {
                    self.counters.boundary += 1;
                    self.boundary = true;
                }
                r
            }
            Kind::Log(s) => s.lookup(now, key, cost, account),
            Kind::Token(s) => s.lookup(now, key, cost, account),
            Kind::Gcra(s) => s.lookup(now, key, cost, account),
            Kind::Fixed(s) => s.lookup(now, key, cost, account),
            Kind::Sliding(s) => s.lookup(now, key, cost, account),
            Kind::Leaky(s) => s.lookup(now, key, cost, account),
            Kind::Haproxy(s) => s.lookup(now, key, cost, account),
            Kind::Ban(z) => {
                let r = z.lookup(now, key, cost, account);
                self.challenged = std::mem::take(&mut z.challenged);
                r
            }
            // Driven by the policy's program, never looked up.
            Kind::Table(_) => Lookup::Admit(0),
        }
    }

    /// Charges the pending request; returns its delay in ms.
    pub(crate) fn account(&mut self, now: i64, cost: u64, lim: &NginxLimit) -> u32 {
        match &mut self.kind {
            Kind::Nginx(z) => {
                let e = z.account(now, cost);
                clamp_ms(z.delay_ms(e, lim))
            }
            Kind::Log(s) => s.account(now, cost),
            Kind::Token(s) => s.account(now, cost),
            Kind::Gcra(s) => s.account(now, cost),
            Kind::Fixed(s) => s.account(now, cost),
            Kind::Sliding(s) => s.account(now, cost),
            Kind::Leaky(s) => s.account(now, cost),
            Kind::Haproxy(s) => s.account(now, cost),
            Kind::Ban(z) => {
                let d = z.account(now, cost);
                self.challenged = std::mem::take(&mut z.challenged);
                d
            }
            Kind::Table(_) => 0,
        }
    }

    /// Drops the pending request uncharged.
    pub(crate) fn release(&mut self) {
        if let Kind::Nginx(z) = &mut self.kind {
            z.release();
        }
    }
}

/// nginx's stored form of `burst`/`delay`.
pub(crate) fn nginx_limit(burst: u64, delay: NginxDelay) -> NginxLimit {
    NginxLimit {
        burst_milli: burst.saturating_mul(1000),
        delay_milli: match delay {
            NginxDelay::Default => 0,
            NginxDelay::NoDelay => NODELAY_MILLI,
            NginxDelay::Delay(d) => d.saturating_mul(1000).min(NODELAY_MILLI),
        },
    }
}

#[inline]
fn clamp_ms(ms: u64) -> u32 {
    ms.min(u32::MAX as u64) as u32
}
