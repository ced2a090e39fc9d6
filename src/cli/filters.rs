//! Row selection and classification options shared by every report (and by `replay`
//! and `availability`): `--since/--until/--tz`, `--heavy`, `--anonymous`, `--status`,
//! `--path`, `--host`, `--client`, `--agent`, plus the classification settings
//! (`--rules FILE`, else [`rules_lookup`]), `--prefix-v4/--prefix-v6`, `--trust-proxy`,
//! `--session-cookie`).
//!
//! Use: `#[command(flatten)] filters: FilterArgs`, then [`FilterArgs::build`] gives a
//! [`Selection`]: the core [`Filter`], a [`Classifier`] and the report's [`Clock`]. Per
//! row: `let rc = sel.classifier.classify(batch, i); if sel.filter.matches(batch, i, &rc,
//! &sel.classifier) { … }`. Classification happens at report time, so changing the rules
//! needs no re-ingest.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use chrono::{Datelike, NaiveDate, NaiveDateTime, Offset, TimeZone};
use clap::Args;
use logscope_core::classify::config::{Overrides, parse_cidr};
use logscope_core::classify::{
    AgentSelector, Classifier, Config, Filter, HeavyClass, HostPattern, Identity, StatusSet,
};
use logscope_core::duration::{Duration, DurationError, Resolution};
use logscope_core::replay::Rate;
use logscope_core::{conf_file, escape};

use super::usage_error;

/// `--since`'s help, the same in every command.
pub const SINCE_HELP: &str = "Only requests at or after this time: a year (2026), a month \
(2026-09), a date (2026-09-25), a local time (2026-09-25T14:00 or \"2026-09-25 14:00\"; \
all in --tz) or RFC 3339 with an offset (2026-09-25T05:00:00Z).";

/// `--until`'s help, the same in every command: one meaning of `--until` everywhere.
pub const UNTIL_HELP: &str = "Only requests before this time (same forms as --since). A \
year, month or date includes all of it: --since 2026-09-25 --until 2026-09-25 is that \
whole day, --until 2026-09 ends at 2026-10-01 00:00; a time (2026-09-25T15:00) is \
exclusive.";

/// The config file looked for in the current directory when `--rules` is not given.
pub const DEFAULT_RULES: &str = "logscope.toml";

/// `--rules`'s help: where rules come from when it is not given.
pub const RULES_HELP: &str = "Classification rules (TOML: heavy classes, identity, agents, \
prefixes, proxies; see fixtures/logscope.toml). Without --rules, the first of: the file \
$LOGSCOPE_CONFIG names (it must exist), ./logscope.toml, \
$XDG_CONFIG_HOME/logscope/logscope.toml (default ~/.config/logscope/logscope.toml); \
none: the built-in rules. A regular file of at most 16 MiB.";

/// Where the rules come from without `--rules`: the file `$LOGSCOPE_CONFIG` names
/// (an error if it cannot be read), else `./logscope.toml`, else
/// `$XDG_CONFIG_HOME/logscope/logscope.toml` (`~/.config/logscope/logscope.toml` when
/// `XDG_CONFIG_HOME` is unset or empty), each only when it is a file; `None`: the
/// built-in rules. Empty variables count as unset.
pub fn rules_lookup() -> anyhow::Result<Option<PathBuf>> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = var("LOGSCOPE_CONFIG") {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!(
                "LOGSCOPE_CONFIG={}: not a readable file (unset it to use ./{DEFAULT_RULES} or \
                 $XDG_CONFIG_HOME/logscope/{DEFAULT_RULES})",
                p.display()
            );
        }
        return Ok(Some(p));
    }
    let here = PathBuf::from(DEFAULT_RULES);
    if here.is_file() {
        return Ok(Some(here));
    }
    let config = var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".config")));
    Ok(config
        .map(|c| c.join("logscope").join(DEFAULT_RULES))
        .filter(|p| p.is_file()))
}

/// Reads a rules file (`--rules FILE` or the one [`rules_lookup`] found; `what` names
/// it): a regular file of at most [`conf_file::CONFIG_CAP`]. A FIFO, a device, a
/// directory or a larger file is refused at once as a [`super::UsageError`] (exit 2);
/// a file the OS cannot read is an error (exit 1).
pub fn read_rules(p: &Path, what: &str) -> anyhow::Result<String> {
    let bytes = match conf_file::read(p, conf_file::CONFIG_CAP) {
        Ok(b) => b,
        Err(e) if e.is_refusal() => {
            return Err(usage_error(format!("{what}: {e}")));
        }
        Err(conf_file::ReadError::Io { source, .. }) => {
            return Err(anyhow::Error::new(source)
                .context(format!("{what}: cannot read {}", escape::path(p))));
        }
        Err(e) => return Err(anyhow::anyhow!("{what}: {e}")),
    };
    String::from_utf8(bytes).map_err(|_| {
        anyhow::anyhow!(
            "{what}: cannot read {}: stream did not contain valid UTF-8",
            escape::path(p)
        )
    })
}

/// Which requests a command looks at, and how requests are classified.
#[derive(Debug, Clone, Default, Args)]
pub struct FilterArgs {
    /// Start of the selection (see [`SINCE_HELP`]).
    #[arg(long, value_name = "TIME", help = SINCE_HELP, help_heading = "Selection")]
    pub since: Option<String>,

    /// End of the selection (see [`UNTIL_HELP`]).
    #[arg(long, value_name = "TIME", help = UNTIL_HELP, help_heading = "Selection")]
    pub until: Option<String>,

    /// Time zone for --since/--until and for time buckets: an IANA name (Asia/Seoul,
    /// Europe/Berlin), UTC, or a fixed offset (+09:00).
    #[arg(
        long,
        value_name = "ZONE",
        default_value = "UTC",
        help_heading = "Selection"
    )]
    pub tz: String,

    /// Only heavy requests (see --rules: MediaWiki search, diff, oldid, history, info by
    /// default).
    #[arg(long, help_heading = "Selection")]
    pub heavy: bool,

    /// Only requests the log shows as anonymous (never assumed: logs that cannot tell
    /// classify as "unknown").
    #[arg(long, help_heading = "Selection")]
    pub anonymous: bool,

    /// Only these statuses: 429, 5xx, 200-299, or a comma-separated list.
    #[arg(long, value_name = "STATUS", help_heading = "Selection")]
    pub status: Option<String>,

    /// Only paths (without query string) matching this regex, e.g. '^/index\.php$'.
    #[arg(long, value_name = "REGEX", help_heading = "Selection")]
    pub path: Option<String>,

    /// Only this Host (case-insensitive, port ignored; *.example.org for a domain and
    /// everything under it).
    #[arg(long, value_name = "HOST", help_heading = "Selection")]
    pub host: Option<String>,

    /// Only clients in this network (CIDR or address); repeat or comma-separate for several.
    #[arg(
        long = "client",
        value_name = "CIDR",
        value_delimiter = ',',
        help_heading = "Selection"
    )]
    pub clients: Vec<String>,

    /// Only agents of this class: ios, android, mobile, desktop, browser, tool, bot,
    /// crawler, ai, search, seo, social, monitor, scanner, unknown, or a name (GPTBot,
    /// curl, Chrome); comma-separated for several.
    #[arg(long, value_name = "CLASS", help_heading = "Selection")]
    pub agent: Option<String>,

    /// Classification rules (see [`RULES_HELP`]: the lookup order without it).
    #[arg(long, value_name = "FILE", help = RULES_HELP, help_heading = "Classification")]
    pub rules: Option<PathBuf>,

    /// IPv4 prefix length for networks [default: 24].
    #[arg(long, value_name = "BITS", value_parser = clap::value_parser!(u8).range(0..=32), help_heading = "Classification")]
    pub prefix_v4: Option<u8>,

    /// IPv6 prefix length for networks [default: 48].
    #[arg(long, value_name = "BITS", value_parser = clap::value_parser!(u8).range(0..=128), help_heading = "Classification")]
    pub prefix_v6: Option<u8>,

    /// Trusted proxy network: when the logged client is in it, the real client is the
    /// right-most X-Forwarded-For address outside every trusted network. Repeat or
    /// comma-separate.
    #[arg(
        long,
        value_name = "CIDR",
        value_delimiter = ',',
        help_heading = "Classification"
    )]
    pub trust_proxy: Vec<String>,

    /// Session cookie that marks logged-in users. Caddy logs record only whether a
    /// Cookie header was sent (values are REDACTED), so with this set any Cookie header
    /// counts as identified.
    #[arg(long, value_name = "NAME", help_heading = "Classification")]
    pub session_cookie: Option<String>,
}

/// What [`FilterArgs::build`] gives.
pub struct Selection {
    /// The row filter.
    pub filter: Filter,
    /// The classifier (rules and caches).
    pub classifier: Classifier,
    /// The report's clock (time zone).
    pub clock: Clock,
    /// The rules file used, if any.
    pub rules_file: Option<PathBuf>,
}

/// What [`Selection::prep`] works out for a batch where it is decoded.
#[derive(Debug, Default)]
pub struct Prepped {
    /// The heavy class of each row, when the report uses it.
    pub heavy: Option<Vec<HeavyClass>>,
    /// The rows in the period whose client is inside the `--client` networks, in
    /// order (rows outside need no classifying), when that can be told from the logged
    /// address alone.
    pub client_rows: Option<Vec<u32>>,
}

/// Networks as ranges of integers, to test an address with two comparisons a network
/// (what `IpNet::contains` answers: an IPv4 network holds IPv4 addresses, an IPv6 one
/// IPv6 addresses, an IPv4-mapped address counting as IPv4).
struct NetRanges {
    v4: Vec<(u32, u32)>,
    v6: Vec<(u128, u128)>,
}

impl NetRanges {
    fn of(nets: &[ipnet::IpNet]) -> NetRanges {
        let mut r = NetRanges {
            v4: Vec::new(),
            v6: Vec::new(),
        };
        for n in nets {
            match n {
                ipnet::IpNet::V4(n) => r.v4.push((n.network().into(), n.broadcast().into())),
                ipnet::IpNet::V6(n) => r.v6.push((n.network().into(), n.broadcast().into())),
            }
        }
        r
    }

    #[inline]
    fn contains(&self, ip: Option<std::net::IpAddr>) -> bool {
        match ip.map(logscope_core::net::canonical) {
            Some(std::net::IpAddr::V4(a)) => {
                let x = u32::from(a);
                self.v4.iter().any(|&(lo, hi)| lo <= x && x <= hi)
            }
            Some(std::net::IpAddr::V6(a)) => {
                let x = u128::from(a);
                self.v6.iter().any(|&(lo, hi)| lo <= x && x <= hi)
            }
            None => false,
        }
    }
}

impl Selection {
    /// Calls `f(i, class, classifier, clock)` for each row of `b` in the period that
    /// the filter selects, classifying per distinct value where the batch is coded
    /// (the select-and-classify loop every report shares).
    pub fn each_selected(
        &mut self,
        b: &logscope_core::batch::Batch,
        f: impl FnMut(usize, &logscope_core::classify::RowClass, &Classifier, &Clock),
    ) {
        self.each_selected_with(b, None, f)
    }

    /// The work of [`Selection::each_selected`] that needs no state of the selection, to
    /// run on the threads that decode the dataset ([`super::rows::for_each_batch_with`]):
    /// the heavy class of each row when the report uses it, and which rows' clients are
    /// inside the `--client` networks when the filter names some and the client is the
    /// logged address (no trusted proxies), so that the caller classifies only those.
    pub fn prep(&self) -> impl Fn(&logscope_core::batch::Batch) -> Prepped + Sync + use<> {
        let rules = self
            .classifier
            .needs
            .heavy
            .then(|| self.classifier.heavy_rules().clone());
        let nets = (!self.filter.clients.is_empty() && self.classifier.trust.is_empty())
            .then(|| NetRanges::of(&self.filter.clients));
        let (since, until) = self.period();
        move |b| Prepped {
            heavy: rules
                .as_ref()
                .map(|r| logscope_core::classify::heavy_classes(r, b)),
            client_rows: nets.as_ref().map(|nets| {
                let in_period =
                    |t: i64| since.is_none_or(|s| t >= s) && until.is_none_or(|u| t < u);
                let rows = b.ip.iter().zip(&b.ts_ms).enumerate();
                rows.filter(|&(_, (ip, &t))| nets.contains(*ip) && in_period(t))
                    .map(|(i, _)| i as u32)
                    .collect()
            }),
        }
    }

    /// [`Selection::each_selected`] with what [`Selection::prep`] worked out for `b`.
    pub fn each_selected_with(
        &mut self,
        b: &logscope_core::batch::Batch,
        pre: Option<&Prepped>,
        mut f: impl FnMut(usize, &logscope_core::classify::RowClass, &Classifier, &Clock),
    ) {
        let pre_heavy = pre.and_then(|p| p.heavy.as_deref());
        let client_rows = pre
            .and_then(|p| p.client_rows.as_deref())
            .filter(|r| r.last().is_none_or(|&i| (i as usize) < b.len()));
        let mut bc = self.classifier.batch_with(b, pre_heavy);
        // With --client most rows are outside: only the prepared rows (in the period)
        // are looked at.
        let all = client_rows.is_none();
        // A filter of the period alone selects the rows of the period: checked once.
        let whole = all && self.filter.selects_whole_period();
        let mut each = |i: usize| {
            if all && !self.filter.in_period(b.ts_ms[i]) {
                return;
            }
            let rc = bc.classify(&mut self.classifier, i);
            if whole || self.filter.matches(b, i, &rc, &self.classifier) {
                f(i, &rc, &self.classifier, &self.clock);
            }
        };
        match client_rows {
            Some(rows) => rows.iter().for_each(|&i| each(i as usize)),
            None => (0..b.len()).for_each(each),
        }
        self.classifier.end_batch(bc);
    }

    /// Whether a batch can be counted on the thread that decoded it (`TopPart`,
    /// `HeavyPart`, `ConcentrationPart`): the selection keeps every row of its period and
    /// the client is the logged address (no trusted proxies).
    pub fn counts_where_decoded(&self) -> bool {
        self.filter.selects_whole_period() && self.classifier.trust.is_empty()
    }

    /// `--since`/`--until` as UTC ms, for [`super::rows::for_each_batch`]'s pruning.
    pub fn period(&self) -> (Option<i64>, Option<i64>) {
        (self.filter.since_ms, self.filter.until_ms)
    }

    /// The selection, described for report headers (filters, period and zone).
    pub fn describe(&self) -> String {
        let mut s = self.filter.describe();
        let fmt = |ms: i64| {
            logscope_core::time::local_rfc3339(self.clock.local(ms), self.clock.local(ms) - ms)
        };
        match (self.filter.since_ms, self.filter.until_ms) {
            (Some(a), Some(b)) => s.push_str(&format!(", from {} to {}", fmt(a), fmt(b))),
            (Some(a), None) => s.push_str(&format!(", from {}", fmt(a))),
            (None, Some(b)) => s.push_str(&format!(", before {}", fmt(b))),
            (None, None) => {}
        }
        if let Some(f) = &self.rules_file {
            s.push_str(&format!(" (rules: {})", f.display()));
        }
        s
    }
}

impl FilterArgs {
    /// Checks the options and builds the filter, classifier and clock. A bad value is
    /// a [`UsageError`] (exit 2) naming the flag, with an example.
    pub fn build(&self) -> anyhow::Result<Selection> {
        let clock = Clock::parse(&self.tz)?;
        let rules_file = match &self.rules {
            Some(p) => Some(p.clone()),
            None => rules_lookup()?,
        };
        let config = match &rules_file {
            Some(p) => {
                let what = if self.rules.is_some() {
                    "--rules"
                } else {
                    "rules"
                };
                let text = read_rules(p, what)?;
                Config::from_toml(&text).with_context(|| format!("{}", p.display()))?
            }
            None => Config::default(),
        };
        let mut trust = Vec::new();
        for t in &self.trust_proxy {
            trust.push(parse_cidr(t).map_err(|e| usage_error(format!("--trust-proxy: {e}")))?);
        }
        let overrides = Overrides {
            v4: self.prefix_v4,
            v6: self.prefix_v6,
            trust_proxy: trust,
            session_cookie: self.session_cookie.clone(),
        };
        let classifier = config.classifier(&overrides).with_context(|| {
            rules_file
                .as_deref()
                .map_or_else(|| "classification".to_string(), |p| p.display().to_string())
        })?;
        let (since, until) = self.period(&clock)?;
        let mut filter = Filter::with_period(since, until);
        filter.heavy = self.heavy.then_some(true);
        filter.identity = self.anonymous.then_some(Identity::Anonymous);
        if let Some(s) = &self.status {
            filter.status =
                Some(StatusSet::parse(s).map_err(|e| usage_error(format!("--status: {e}")))?);
        }
        if let Some(p) = &self.path {
            filter.path = Some(regex::Regex::new(p).map_err(|e| {
                usage_error(format!(
                    "--path: bad regex {p:?}: {} (e.g. '^/index\\.php$')",
                    regex_problem(&e)
                ))
            })?);
        }
        if let Some(h) = &self.host {
            filter.host = Some(HostPattern::parse(h));
        }
        for c in &self.clients {
            filter
                .clients
                .push(parse_cidr(c).map_err(|e| usage_error(format!("--client: {e}")))?);
        }
        if let Some(a) = &self.agent {
            let names: Vec<&str> = config.agent.iter().map(|r| r.name.as_str()).collect();
            filter.agent = Some(
                AgentSelector::parse_with_names(a, &names)
                    .map_err(|e| usage_error(format!("--agent: {e}")))?,
            );
        }
        Ok(Selection {
            filter,
            classifier,
            clock,
            rules_file,
        })
    }

    /// `--since`/`--until` as UTC ms in `clock`'s zone (`--until` a date, month or year:
    /// the end of it), checked to be in order.
    pub fn period(&self, clock: &Clock) -> anyhow::Result<(Option<i64>, Option<i64>)> {
        let since = self
            .since
            .as_deref()
            .map(|s| clock.parse_time(s, false))
            .transpose()
            .map_err(|e| usage_error(format!("--since: {e}")))?;
        let until = self
            .until
            .as_deref()
            .map(|s| clock.parse_time(s, true))
            .transpose()
            .map_err(|e| usage_error(format!("--until: {e}")))?;
        if let (Some(a), Some(b)) = (since, until)
            && a >= b
        {
            return Err(usage_error(format!(
                "--until must be after --since (e.g. --since {0} --until {0} for one whole day)",
                self.since.as_deref().unwrap_or("2026-09-25").trim()
            )));
        }
        Ok((since, until))
    }
}

/// A regex error on one line (the syntax error's last line: `unclosed group`), for
/// one-line usage messages.
pub fn regex_problem(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    last.trim().trim_start_matches("error: ").to_string()
}

/// A duration flag in whole seconds (`--by`, `--expect-every`, …): the one grammar of
/// [`logscope_core::duration`] (`90s`, `10m`, `1h30m`, `2hours`, `1w`).
pub fn duration_arg(s: &str) -> Result<Duration, DurationError> {
    Duration::parse(s, Resolution::Seconds)
}

/// An `N/DURATION` flag (`--capacity`, `--per-prefix-limit`): a rate in the grammar of
/// `--limit` (the period in the one duration grammar, milliseconds allowed).
pub fn rate_arg(s: &str) -> Result<Rate, String> {
    Rate::parse(s).map_err(|e| format!("{e}; a capacity or limit is N/WINDOW, e.g. 1610/10m"))
}

/// A report's clock: UTC, a fixed offset, or an IANA zone (offsets cached per 15 minutes).
#[derive(Clone)]
pub struct Clock {
    zone: Zone,
    name: String,
    cache: std::cell::Cell<(i64, i64)>,
}

#[derive(Clone)]
enum Zone {
    Fixed(i64),
    Tz(chrono_tz::Tz),
}

const SLOT_MS: i64 = 15 * 60_000;

/// A [`Clock`]'s zone, shared between threads ([`Clock::shared`]).
#[derive(Clone)]
pub struct ClockZone(Zone);

impl ClockZone {
    /// A clock of this zone (unnamed: for [`Clock::local`]).
    pub fn clock(&self) -> Clock {
        Clock {
            zone: self.0.clone(),
            name: String::new(),
            cache: std::cell::Cell::new((i64::MIN, 0)),
        }
    }
}

impl Clock {
    /// Parses `UTC`, `+09:00`/`-0330`, or an IANA name.
    pub fn parse(s: &str) -> anyhow::Result<Clock> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("utc") || t.eq_ignore_ascii_case("z") {
            return Ok(Clock::fixed(0, "UTC"));
        }
        if let Some(secs) = logscope_core::time::parse_offset(t.replace(':', "").as_bytes()) {
            return Ok(Clock::fixed(i64::from(secs) * 1000, t));
        }
        let tz: chrono_tz::Tz = t.parse().map_err(|_| {
            usage_error(format!(
                "--tz: {t:?} is not a time zone (e.g. UTC, Asia/Seoul, Europe/Berlin or +09:00)"
            ))
        })?;
        Ok(Clock {
            zone: Zone::Tz(tz),
            name: tz.name().to_string(),
            cache: std::cell::Cell::new((i64::MIN, 0)),
        })
    }

    fn fixed(offset_ms: i64, name: &str) -> Clock {
        Clock {
            zone: Zone::Fixed(offset_ms),
            name: name.to_string(),
            cache: std::cell::Cell::new((i64::MIN, 0)),
        }
    }

    /// The clock's zone without its cache, to give to the threads that decode the
    /// dataset ([`ClockZone::clock`] makes each its own clock).
    pub fn shared(&self) -> ClockZone {
        ClockZone(self.zone.clone())
    }

    /// The zone's name as given (`UTC`, `Asia/Seoul`, `+09:00`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Local wall-clock ms for a UTC instant.
    #[inline]
    pub fn local(&self, utc_ms: i64) -> i64 {
        match &self.zone {
            Zone::Fixed(o) => utc_ms + o,
            Zone::Tz(tz) => {
                let slot = utc_ms.div_euclid(SLOT_MS);
                let (s, o) = self.cache.get();
                if s == slot {
                    return utc_ms + o;
                }
                let o = chrono::DateTime::from_timestamp_millis(slot * SLOT_MS)
                    .map(|t| {
                        i64::from(
                            tz.offset_from_utc_datetime(&t.naive_utc())
                                .fix()
                                .local_minus_utc(),
                        ) * 1000
                    })
                    .unwrap_or(0);
                self.cache.set((slot, o));
                utc_ms + o
            }
        }
    }

    /// The first instant at or after local time `naive`: the earlier of two when the
    /// clock was turned back, the first valid minute after a skipped hour (a midnight
    /// that does not exist starts the day at the first minute that does).
    fn utc_of_local(&self, naive: NaiveDateTime) -> anyhow::Result<i64> {
        match &self.zone {
            Zone::Fixed(o) => Ok(naive.and_utc().timestamp_millis() - o),
            Zone::Tz(tz) => resolve_local(*tz, naive)
                .ok_or_else(|| anyhow::anyhow!("{naive} does not exist in {}", self.name)),
        }
    }

    /// The zone for chrono, for code that needs calendar arithmetic (availability's
    /// periods).
    pub fn zone(&self) -> ChronoZone {
        match &self.zone {
            Zone::Fixed(o) => ChronoZone::Fixed(
                chrono::FixedOffset::east_opt((o / 1000) as i32)
                    .unwrap_or_else(|| chrono::FixedOffset::east_opt(0).expect("UTC")),
            ),
            Zone::Tz(tz) => ChronoZone::Tz(*tz),
        }
    }

    /// Parses a `--since`/`--until` value: a year (`2026`), a month (`2026-09`), a date
    /// (`2026-09-25`), a local time (`2026-09-25T14:00`, `2026-09-25 14:00:30`), all in
    /// this zone, or RFC 3339 with an offset. `end`: a year, month or date means its end
    /// (for `--until`, which is exclusive: the whole of it is included).
    pub fn parse_time(&self, s: &str, end: bool) -> anyhow::Result<i64> {
        let t = s.trim();
        if let Ok(d) = chrono::DateTime::parse_from_rfc3339(t) {
            return Ok(d.timestamp_millis());
        }
        let calendar = if t.len() == 4 && t.bytes().all(|b| b.is_ascii_digit()) {
            t.parse::<i32>().ok().and_then(|y| {
                let a = NaiveDate::from_ymd_opt(y, 1, 1)?;
                Some((a, NaiveDate::from_ymd_opt(y + 1, 1, 1)?))
            })
        } else if let Ok(a) = NaiveDate::parse_from_str(&format!("{t}-01"), "%Y-%m-%d")
            && t.len() <= 7
        {
            let (y, m) = if a.month() == 12 {
                (a.year() + 1, 1)
            } else {
                (a.year(), a.month() + 1)
            };
            NaiveDate::from_ymd_opt(y, m, 1).map(|z| (a, z))
        } else if let Ok(a) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
            a.succ_opt().map(|z| (a, z))
        } else {
            None
        };
        if let Some((a, z)) = calendar {
            let d = if end { z } else { a };
            return self.utc_of_local(d.and_hms_opt(0, 0, 0).expect("midnight"));
        }
        for f in [
            "%Y-%m-%dT%H:%M:%S%.f",
            "%Y-%m-%d %H:%M:%S%.f",
            "%Y-%m-%dT%H:%M",
            "%Y-%m-%d %H:%M",
        ] {
            if let Ok(n) = NaiveDateTime::parse_from_str(t, f) {
                return self.utc_of_local(n);
            }
        }
        bail!(
            "cannot read {t:?} as a time (e.g. 2026-09, 2026-09-25, 2026-09-25T14:00, or RFC 3339 like 2026-09-25T05:00:00Z)"
        )
    }
}

/// The first instant (UTC ms) at or after local time `naive` in `tz`: the earlier of
/// two when the clock was turned back, the first valid minute after a skipped hour when
/// it was turned forward.
pub fn resolve_local<Z: TimeZone>(tz: Z, naive: NaiveDateTime) -> Option<i64> {
    for step in 0..=24 * 60 {
        let n = naive + chrono::Duration::minutes(step);
        match tz.from_local_datetime(&n) {
            chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => {
                return Some(t.timestamp_millis());
            }
            chrono::LocalResult::None => {}
        }
    }
    None
}

/// A [`Clock`]'s zone as chrono sees it.
#[derive(Clone, Copy, Debug)]
pub enum ChronoZone {
    /// A fixed offset (`+09:00`, UTC).
    Fixed(chrono::FixedOffset),
    /// An IANA zone.
    Tz(chrono_tz::Tz),
}

/// Row columns a report reads when it does not narrow them with
/// [`super::rows::columns_for`] (request line, identity, agent, host and XFF).
pub const REPORT_COLUMNS: crate::store::scan::Columns = crate::store::scan::Columns {
    protocol: false,
    referer: false,
    sizes: false,
    timing: false,
    ..crate::store::scan::Columns::ALL
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows [`Selection::prep`]'s client mask lets through to classification are
    /// selected exactly as without it: IPv4, IPv6, IPv4-mapped IPv6 and host names.
    #[test]
    fn the_client_mask_selects_what_the_filter_selects() {
        use logscope_core::batch::Batch;
        use logscope_core::record::Record;
        let clients = [
            "20.171.3.4",
            "20.172.0.1",
            "::ffff:20.171.9.9",
            "2001:db8::7",
            "2001:db9::7",
            "crawler.example.net",
            "66.249.66.1",
        ];
        let mut b = Batch::default();
        for (n, c) in clients.iter().cycle().take(50).enumerate() {
            let r = Record {
                ts_ms: n as i64 * 1000,
                client: c.as_bytes(),
                ip: c.parse().ok(),
                ..Record::default()
            };
            b.push(&r, n as u64 + 1);
        }
        for nets in [
            vec!["20.171.0.0/16"],
            vec!["2001:db8::/32", "66.249.66.1/32"],
            vec!["20.171.3.4/32", "2001:db9::/32"],
            vec!["0.0.0.0/0"],
            vec!["::/0"],
            vec!["::ffff:0:0/96", "20.172.0.0/24"],
            vec!["20.171.255.255/32", "20.171.3.0/24"],
        ] {
            let mut filter = Filter::with_period(Some(3_000), Some(45_000));
            filter.clients = nets.iter().map(|n| n.parse().unwrap()).collect();
            let mut sel = Selection {
                filter,
                classifier: Classifier::default(),
                clock: Clock::parse("UTC").unwrap(),
                rules_file: None,
            };
            let pre = sel.prep()(&b);
            assert!(pre.client_rows.is_some(), "{nets:?}");
            let mut plain = Vec::new();
            sel.each_selected_with(&b, None, |i, _, _, _| plain.push(i));
            let mut masked = Vec::new();
            sel.each_selected_with(&b, Some(&pre), |i, _, _, _| masked.push(i));
            assert!(!plain.is_empty(), "{nets:?}");
            assert_eq!(plain, masked, "{nets:?}");
        }
    }

    #[test]
    fn clocks_and_times() {
        let seoul = Clock::parse("Asia/Seoul").unwrap();
        let utc = Clock::parse("UTC").unwrap();
        let t = utc.parse_time("2026-09-25T05:00:00Z", false).unwrap();
        assert_eq!(seoul.parse_time("2026-09-25 14:00", false).unwrap(), t);
        assert_eq!(seoul.local(t) - t, 9 * 3_600_000);
        let day = seoul.parse_time("2026-09-25", false).unwrap();
        let end = seoul.parse_time("2026-09-25", true).unwrap();
        assert_eq!(end - day, 86_400_000);
        let fixed = Clock::parse("+03:30").unwrap();
        assert_eq!(fixed.local(0), 3 * 3_600_000 + 1_800_000);
        assert!(Clock::parse("Mars/Olympus").is_err());
        assert!(utc.parse_time("yesterday", false).is_err());
        // Berlin switches offsets: the cache follows.
        let berlin = Clock::parse("Europe/Berlin").unwrap();
        let winter = utc.parse_time("2026-01-15T12:00:00Z", false).unwrap();
        let summer = utc.parse_time("2026-07-15T12:00:00Z", false).unwrap();
        assert_eq!(berlin.local(winter) - winter, 3_600_000);
        assert_eq!(berlin.local(summer) - summer, 7_200_000);
    }

    #[test]
    fn build_checks_everything() {
        let mut a = FilterArgs {
            tz: "UTC".into(),
            status: Some("5xx".into()),
            clients: vec!["10.0.0.0/8".into()],
            agent: Some("mobile".into()),
            ..FilterArgs::default()
        };
        let sel = a.build().unwrap();
        assert!(sel.filter.status.is_some());
        assert_eq!(sel.classifier.v4_len, 24);
        a.path = Some("(".into());
        assert!(a.build().is_err());
        a.path = None;
        a.since = Some("2026-02-01".into());
        a.until = Some("2026-01-01".into());
        assert!(a.build().is_err());
        // One meaning of --until: a date includes that whole day.
        a.until = Some("2026-02-01".into());
        let (s, u) = a.build().unwrap().period();
        assert_eq!(u.unwrap() - s.unwrap(), 86_400_000);
        for bad in [("6xx", 0), ("robots", 1)] {
            let mut b = FilterArgs {
                tz: "UTC".into(),
                ..FilterArgs::default()
            };
            if bad.1 == 0 {
                b.status = Some(bad.0.into());
            } else {
                b.agent = Some(bad.0.into());
            }
            let e = b.build().err().unwrap();
            assert_eq!(crate::cli::exit_code_of(&e), 2, "{e:#}");
        }
    }

    #[test]
    fn instants() {
        let ms = |s: &str| {
            chrono::DateTime::parse_from_rfc3339(s)
                .unwrap()
                .timestamp_millis()
        };
        let seoul = Clock::parse("Asia/Seoul").unwrap();
        let t = |s: &str, end: bool| seoul.parse_time(s, end).unwrap();
        assert_eq!(t("2025-06", false), ms("2025-05-31T15:00:00Z"));
        assert_eq!(t("2025-06", true), ms("2025-06-30T15:00:00Z"));
        assert_eq!(t("2025-12", true), ms("2025-12-31T15:00:00Z"));
        assert_eq!(t("2025", false), ms("2024-12-31T15:00:00Z"));
        assert_eq!(t("2025", true), ms("2025-12-31T15:00:00Z"));
        assert_eq!(t("2025-06-02", false), ms("2025-06-01T15:00:00Z"));
        assert_eq!(t("2025-06-02", true), ms("2025-06-02T15:00:00Z"));
        assert_eq!(t("2025-06-02T01:30", true), ms("2025-06-01T16:30:00Z"));
        assert_eq!(t("2025-06-02 01:30:15", false), ms("2025-06-01T16:30:15Z"));
        assert_eq!(t("2025-06-02T01:30:00Z", true), ms("2025-06-02T01:30:00Z"));
        assert!(seoul.parse_time("June", false).is_err());
        assert!(seoul.parse_time("2025-13", false).is_err());
        assert!(seoul.parse_time("2025-06-02-01", false).is_err());
        // A skipped local time resolves to the first valid minute after it.
        let berlin = Clock::parse("Europe/Berlin").unwrap();
        assert_eq!(
            berlin.parse_time("2025-03-30T02:30", false).unwrap(),
            ms("2025-03-30T01:00:00Z")
        );
        let e = Clock::parse("Mars/Olympus").err().unwrap();
        assert_eq!(crate::cli::exit_code_of(&e), 2);
        assert!(format!("{e}").contains("--tz") && format!("{e}").contains("e.g."));
    }
}
