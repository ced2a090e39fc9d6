//! Row selection and classification options shared by every report (and by `replay`
//! and `availability`): `--since/--until/--tz`, `--heavy`, `--anonymous`, `--status`,
//! `--path`, `--host`, `--client`, `--agent`, plus the classification settings
//! (`--rules FILE`, else [`rules_lookup`]), `--prefix-v4/--prefix-v6`, `--trust-proxy`,
//! `--session-cookie`).
//!
//! Use: `#[command(flatten)] filters: FilterArgs`, then [`FilterArgs::build`] gives a
//! [`Selection`]: the core filter, a classifier and the report's [`Clock`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use logscope_core::classify::config::{Overrides, parse_cidr};
use logscope_core::classify::{AgentSelector, Config, Filter, HostPattern, Identity, StatusSet};
use logscope_core::duration::{Duration, DurationError, Resolution};
use logscope_core::forensics::crawlers::{Crawler, CrawlerRanges};
use logscope_core::forensics::hosting::HostingAsns;
use logscope_core::forensics::netdb::{NetworkDb, NetworkFilter};
use logscope_core::replay::Rate;
use logscope_core::{conf_file, escape};

use super::usage_error;
use crate::engine::clock::Clock;
use crate::engine::selection::Selection;

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
prefixes, proxies; `logscope rules --example` prints a commented one). Without --rules, the first of: the file \
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
    /// Europe/Berlin), UTC, or a fixed offset (+09:00, -04:00).
    #[arg(
        long,
        value_name = "ZONE",
        default_value = "UTC",
        // `--tz -04:00`: a negative offset is a value, not a flag.
        allow_hyphen_values = true,
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

    /// Only clients in this network (CIDR or address), or logged as this host name;
    /// repeat or comma-separate for several.
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

    /// Only clients whose address is announced by one of these autonomous systems in
    /// --asn-db (`AS64496` or `64496`); comma-separate for several.
    #[arg(
        long,
        value_name = "ASN",
        value_delimiter = ',',
        help_heading = "Selection"
    )]
    pub asn: Vec<String>,

    /// Only clients whose address is in one of these countries in --asn-db (ISO 3166
    /// codes: `DE`, `kr`); comma-separate for several.
    #[arg(
        long,
        value_name = "CC",
        value_delimiter = ',',
        help_heading = "Selection"
    )]
    pub country: Vec<String>,

    /// The network database for --asn, --country and the `asn`/`country` breakdowns:
    /// iptoasn's TSV (ip2asn-combined.tsv) or a MaxMind-format .mmdb (GeoLite2-ASN,
    /// -Country or -City, DB-IP or IPinfo lite), a regular file of at most 256 MiB;
    /// nothing is downloaded. Without it: the file $LOGSCOPE_ASN_DB names, else
    /// $XDG_DATA_HOME/logscope/asn-db (~/.local/share/logscope/asn-db) if it exists.
    #[arg(long, value_name = "FILE", help_heading = "Classification")]
    pub asn_db: Option<PathBuf>,

    /// The --asn-db database once read (a command builds its selection several times).
    #[arg(skip)]
    pub networks: std::sync::OnceLock<Arc<NetworkDb>>,

    /// A crawler operator's published IP ranges, as NAME=FILE (googlebot=googlebot.json,
    /// gptbot=gptbot.json): the JSON Google, Bing, OpenAI and Common Crawl publish
    /// (`prefixes` with `ipv4Prefix`/`ipv6Prefix`). A request whose User-Agent claims
    /// NAME (or NAME-variant) is verified inside them and an impostor outside; repeat
    /// for several crawlers.
    #[arg(long, value_name = "NAME=FILE", help_heading = "Classification")]
    pub crawler_ranges: Vec<String>,

    /// The --crawler-ranges once read.
    #[arg(skip)]
    pub crawlers: std::sync::OnceLock<Arc<CrawlerRanges>>,

    /// Only impostors: requests whose User-Agent claims a crawler of --crawler-ranges
    /// from an address outside its published ranges.
    #[arg(long, help_heading = "Selection")]
    pub impostors: bool,

    /// Autonomous systems of hosting and cloud providers, one AS number a line (14061 or
    /// AS14061; the bad-asn-list CSV works too): with --asn-db, networks are classed
    /// hosting or other.
    #[arg(long, value_name = "FILE", help_heading = "Classification")]
    pub hosting_asns: Option<PathBuf>,

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

impl FilterArgs {
    /// Checks the options and builds the filter, classifier and clock. A bad value is
    /// a [`super::UsageError`] (exit 2) naming the flag, with an example.
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
            match parse_cidr(c) {
                Ok(net) => filter.clients.push(net),
                Err(_) if is_host_name(c.trim()) => {
                    filter.client_names.push(c.trim().to_ascii_lowercase())
                }
                Err(e) => {
                    return Err(usage_error(format!(
                        "--client: {e}, or a host name as logged (e.g. --client www-relay.pa-x.dec.com)"
                    )));
                }
            }
        }
        if let Some(a) = &self.agent {
            let names: Vec<&str> = config.agent.iter().map(|r| r.name.as_str()).collect();
            filter.agent = Some(
                AgentSelector::parse_with_names(a, &names)
                    .map_err(|e| usage_error(format!("--agent: {e}")))?,
            );
        }
        let networks = self.network_db()?;
        let (asns, countries) = (self.asns()?, self.countries()?);
        if !asns.is_empty() || !countries.is_empty() {
            let Some(db) = &networks else {
                let flag = if asns.is_empty() {
                    "--country"
                } else {
                    "--asn"
                };
                return Err(usage_error(format!(
                    "{flag} needs a network database: e.g. --asn-db ip2asn-combined.tsv {flag} {}",
                    if asns.is_empty() { "DE" } else { "AS64496" }
                )));
            };
            filter.networks = Some(NetworkFilter::new(db.clone(), asns, countries));
        }
        let crawlers = self.crawler_ranges()?;
        if self.impostors {
            let Some(c) = &crawlers else {
                return Err(usage_error(
                    "--impostors needs the crawlers' published ranges: e.g. --crawler-ranges googlebot=googlebot.json --impostors",
                ));
            };
            filter.impostors = Some(c.clone());
        }
        let hosting = self.hosting_asns()?;
        if hosting.is_some() && networks.is_none() {
            return Err(usage_error(
                "--hosting-asns needs a network database: e.g. --asn-db ip2asn-combined.tsv --hosting-asns hosting-asns.txt",
            ));
        }
        Ok(Selection {
            filter,
            classifier,
            clock,
            rules_file,
            networks,
            crawlers,
            hosting,
        })
    }

    /// The --crawler-ranges, read once (`None`: none given).
    pub fn crawler_ranges(&self) -> anyhow::Result<Option<Arc<CrawlerRanges>>> {
        if self.crawler_ranges.is_empty() {
            return Ok(None);
        }
        if let Some(c) = self.crawlers.get() {
            return Ok(Some(c.clone()));
        }
        let mut all = CrawlerRanges::default();
        for arg in &self.crawler_ranges {
            let Some((name, file)) = arg.split_once('=') else {
                return Err(usage_error(format!(
                    "--crawler-ranges: {} is not NAME=FILE (e.g. --crawler-ranges googlebot=googlebot.json)",
                    escape::terminal_str(arg, 60)
                )));
            };
            let path = Path::new(file);
            let bytes = super::db_file::read("--crawler-ranges", path, conf_file::CONFIG_CAP)?;
            let c = Crawler::parse(name, &bytes).map_err(|e| {
                usage_error(format!("--crawler-ranges {}: {e}", escape::path(path)))
            })?;
            all.push(c)
                .map_err(|e| usage_error(format!("--crawler-ranges: {e}")))?;
        }
        let all = Arc::new(all);
        Ok(Some(self.crawlers.get_or_init(|| all).clone()))
    }

    /// The --hosting-asns list (`None`: none given).
    pub fn hosting_asns(&self) -> anyhow::Result<Option<Arc<HostingAsns>>> {
        let Some(path) = &self.hosting_asns else {
            return Ok(None);
        };
        let bytes = super::db_file::read("--hosting-asns", path, conf_file::CONFIG_CAP)?;
        let text = String::from_utf8_lossy(&bytes);
        let list = HostingAsns::parse(&text)
            .map_err(|e| usage_error(format!("--hosting-asns {}: {e}", escape::path(path))))?;
        Ok(Some(Arc::new(list)))
    }

    /// The network database, read once: `--asn-db`, else the file `$LOGSCOPE_ASN_DB`
    /// names (an error if it is missing), else `$XDG_DATA_HOME/logscope/asn-db`
    /// (`~/.local/share/logscope/asn-db`) when that file exists (a copy of or link to
    /// the TSV or .mmdb you keep there).
    pub fn network_db(&self) -> anyhow::Result<Option<Arc<NetworkDb>>> {
        let Some(path) = self
            .asn_db
            .clone()
            .map(Ok)
            .or_else(asn_db_lookup)
            .transpose()?
        else {
            return Ok(None);
        };
        let path = &path;
        if let Some(db) = self.networks.get() {
            return Ok(Some(db.clone()));
        }
        let db = Arc::new(super::db_file::network_db(path)?);
        Ok(Some(self.networks.get_or_init(|| db).clone()))
    }

    /// `--asn` as AS numbers.
    fn asns(&self) -> anyhow::Result<Vec<u32>> {
        self.asn
            .iter()
            .map(|a| {
                let t = a.trim();
                let n = t
                    .strip_prefix("AS")
                    .or_else(|| t.strip_prefix("as"))
                    .unwrap_or(t);
                n.parse::<u32>().map_err(|_| {
                    usage_error(format!(
                        "--asn: {} is not an AS number (e.g. --asn AS64496,64497)",
                        escape::terminal_str(t, 40)
                    ))
                })
            })
            .collect()
    }

    /// `--country` as upper-case ISO 3166 codes.
    fn countries(&self) -> anyhow::Result<Vec<String>> {
        self.country
            .iter()
            .map(|c| {
                let t = c.trim();
                if t.len() == 2 && t.bytes().all(|b| b.is_ascii_alphabetic()) {
                    Ok(t.to_ascii_uppercase())
                } else {
                    Err(usage_error(format!(
                        "--country: {} is not a two-letter country code (e.g. --country DE,KR)",
                        escape::terminal_str(t, 40)
                    )))
                }
            })
            .collect()
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

/// A share flag (`--target 90%`, `--max-collateral 0.5%`, or a fraction `0.9`): 0–1.
pub fn share_arg(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    };
    match v {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err("a share from 0% to 100%, e.g. 90% or 0.9".to_string()),
    }
}

/// A period flag, `SINCE..UNTIL` (`--baseline 2026-11-03..2026-11-03`), each end in
/// --since/--until's forms and meaning (a date as UNTIL includes that day), or one
/// year, month or date alone (`--baseline 2026-10`: that month), as UTC ms.
pub fn span_arg(flag: &str, s: &str, clock: &Clock) -> anyhow::Result<(i64, i64)> {
    let example = || {
        format!(
            "e.g. {flag} 2026-11-03..2026-11-03 (one whole day) or {flag} 2026-11-03T13:00..2026-11-03T15:00"
        )
    };
    // One year, month or date alone is that whole period.
    let (a, b) = s.split_once("..").unwrap_or((s, s));
    let since = clock
        .parse_time(a.trim(), false)
        .map_err(|e| usage_error(format!("{flag}: {e} ({})", example())))?;
    let until = clock
        .parse_time(b.trim(), true)
        .map_err(|e| usage_error(format!("{flag}: {e} ({})", example())))?;
    if since >= until {
        return Err(usage_error(format!(
            "{flag}: UNTIL must be after SINCE ({})",
            example()
        )));
    }
    Ok((since, until))
}

/// Where the network database is without `--asn-db` (see
/// [`FilterArgs::network_db`]).
fn asn_db_lookup() -> Option<anyhow::Result<PathBuf>> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = var("LOGSCOPE_ASN_DB") {
        let p = PathBuf::from(p);
        if !p.is_file() {
            return Some(Err(usage_error(format!(
                "LOGSCOPE_ASN_DB={}: not a readable file (unset it, or point it at an iptoasn TSV or an .mmdb)",
                escape::path(&p)
            ))));
        }
        return Some(Ok(p));
    }
    let data = var("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    let p = data.join("logscope").join("asn-db");
    p.is_file().then_some(Ok(p))
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

/// A bucket width flag that may be chosen from the span (`report --by`, `timeline
/// --by`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// Chosen from the span of the selected rows.
    Auto,
    /// As given.
    Fixed(Duration),
}

impl Width {
    /// The width as given, `None` for `auto`.
    pub fn fixed(self) -> Option<Duration> {
        match self {
            Width::Auto => None,
            Width::Fixed(d) => Some(d),
        }
    }
}

/// `--by`: `auto` or a duration.
pub fn width_arg(s: &str) -> Result<Width, String> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(Width::Auto);
    }
    duration_arg(s)
        .map(Width::Fixed)
        .map_err(|e| format!("{e}; or auto (the default: a width from the span)"))
}

/// An `N/DURATION` flag (`--capacity`, `--per-prefix-limit`): a rate in the grammar of
/// `--limit` (the period in the one duration grammar, milliseconds allowed).
pub fn rate_arg(s: &str) -> Result<Rate, String> {
    Rate::parse(s).map_err(|e| format!("{e}; a capacity or limit is N/WINDOW, e.g. 1610/10m"))
}

/// Whether `s` reads as a host name a server logged in place of an address
/// (`www-relay.pa-x.dec.com`): letters, digits, `-`, `_` and `.`, at least one letter.
fn is_host_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && s.bytes().any(|b| b.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
