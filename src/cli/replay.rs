//! `logscope replay`: replays the selected requests through one or more candidate rate
//! limiters (`--limit SPEC`, `--config limits.toml`) and reports, side by side, what each
//! would have admitted, delayed and refused, when, whom, and whether the passed load
//! stays under a capacity. The computation is `logscope_core::replay::report`; this file
//! parses the options, reads and classifies the rows, and writes the outputs.

use crate::engine::envelope::Envelope;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use logscope_core::classify::config::parse_cidr;
use logscope_core::duration::Duration;
use logscope_core::escape;
use logscope_core::parse::{CaptureError, Format};
use logscope_core::rate::Rate;
use logscope_core::replay::conf::{EmitSummary, NginxConf, emit_nginx};
use logscope_core::replay::fleet::{Balance, parse_servers};
use logscope_core::replay::report::{
    self, DecisionsWriter, InternalMarks, ReportOptions, SpillOptions,
};
use logscope_core::replay::sweep::{Sweep, summarise};
use logscope_core::replay::{Exempt, Policy, Replay, Shard, ShardFilter};

use super::filters::{FilterArgs, duration_arg, rate_arg};
use super::output::{self, AtomicFile, OutputArgs};
use super::rows::RowArgs;
use crate::engine;
use crate::engine::replay::{ReplayError, ReplayJob, Replayed};
use crate::engine::rows::RowSource;

const EXAMPLES: &str = "\
SPEC is RATE[,burst=N][,algo=A][,key=K][,cost=C][,scope=S][,name=X]:
  RATE   1600/10m, 300/min, 5r/s, 30r/m, 0.2/s, 100/1h
  algo   sliding-log (default: at most N in any window), nginx (limit_req, exactly; takes
         nodelay and delay=N), caddy (rate_limit), token-bucket, gcra, fixed-window,
         sliding-window (counter), leaky-queue (queue=N)
  key    site (default: one bucket), ip, prefix (/24, /48), prefix/N, prefix/N/M, agent,
         host, user, method, path, uri, query, status, referer, field:NAME (a field of
         the FILEs' --log-format: $http_x_api_key is field:http_x_api_key, Apache
         %{X-Api-Key}i is field:X-Api-Key; or a --json-map entry field:NAME=KEY; rows
         without it are not limited; not over the dataset, which keeps no such field),
         asn (the client's autonomous system in --asn-db; clients it does not place
         are not limited)
  cost   requests (default), request-time (ms of server time), bytes
  scope  all (default), heavy, anonymous, anonymous-heavy
  ban    with algo=ban: ban=1h|forever, challenge=100/1m, extend, reach, increment,
         factor=2, maxtime=1d, multipliers=1:5:30; fail2ban (count and ban as fail2ban
         does: findtime rescaled as a rate, its cleanups, its ban database);
         status=404|4xx and path=/wp- narrow what counts

Examples:
  # The wiki's fix: one site-wide cap on anonymous heavy requests, against capacity
  logscope replay --limit 1600/10m,scope=anonymous-heavy --capacity 1610/10m

  # Three candidates side by side, on a log file (nothing ingested)
  logscope replay --limit 600/10m --limit 1600/10m --limit 300/min,key=prefix access.log

  # nginx limit_req exactly, with every decision written out
  logscope replay --limit 5r/s,algo=nginx,burst=10,nodelay,key=ip --decisions decisions.csv

  # A whole limiter configuration (zones and rules, nginx or Caddy semantics)
  logscope replay --config fixtures/limits/nginx-oracle.toml access_msec.log

  # The nginx.conf you run, replayed as nginx would (includes, locations, map/geo keys)
  logscope replay --nginx-conf /etc/nginx/nginx.conf access.log

  # A tested limit written as nginx configuration to paste inside http { ... }
  logscope replay --limit 5r/s,algo=nginx,burst=10,nodelay,key=ip --emit nginx --out limits.conf

  # An HAProxy stick-table limit, tested, written as a frontend to paste into haproxy.cfg
  logscope replay --limit 20/10s,algo=haproxy,key=ip,expire=10s --emit haproxy --out limits.cfg

  # Per API key, a field the log format logs (nginx syntax; Apache: %{X-Api-Key}i)
  logscope replay --limit 600/1m,key=field:http_x_api_key --log-format '$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\" \"$http_x_api_key\"' access.log

  # Seed 001's policy: over 500/min banned for an hour, over 100/min challenged
  logscope replay --limit 500/1m,algo=ban,ban=1h,challenge=100/1m,key=ip access.log

  # A fail2ban jail and its filter.d, replayed on the access log
  logscope replay --fail2ban-jail /etc/fail2ban/jail.local access.log

  # Per-address limit; your own services exempt by credential, the rest named internal
  logscope replay --limit 300/min,key=ip --exempt-user svc-edge --internal 10.9.0.0/16

The report states the selection, each candidate's algorithm, key, cost and scope; counts
admitted, delayed and refused requests; refusals over time; the most refused networks,
addresses and agents with the share of their own traffic refused; refusals by class
(declared bots, anonymous browser-like, identified users, internal services: a loud
WARNING when the last two would be refused); and with --capacity the passed load per
window. Requests the log already shows as refused (--refusal-status, 429 by default) are
replayed and counted apart, or left out with --drop-logged-refusals. Logs with 1-second
timestamps (combined format) replay with an APPROXIMATE warning: log $msec and
$request_time (nginx) or use Caddy's JSON log for exact decisions.

Rows are collected (about 80 bytes each, plus the text fields a candidate reads), put
in decision-time order (arrival = completion - request time, stable by file and line)
and replayed in one pass through every candidate. Memory stays bounded whatever the
log's size. From the dataset, rows are replayed while they are read (on a thread of
their own), as soon as the time ranges it records show that no older row is still to
come. Otherwise (log files, or dataset parts that overlap in time) every 512 Ki rows
are sorted and written to an unnamed temporary file (--tmp-dir, about 25 bytes a row;
removed when logscope exits) while the next rows are read, and the runs are merged
back in exactly that order. The decisions are the same either way.

Configuration files (--config, --nginx-conf, --haproxy-cfg, --caddyfile, --fail2ban-jail)
must be regular files of at most 16 MiB. nginx blocks nest at most 100 deep (Caddyfile
blocks 32); one configuration with its includes, imports and interpolations loads at
most 4096 files and expands to at most 1,000,000 directives or substitutions and 64 MiB
(nginx map/geo keys: 100,000 cases and tests). Past a bound: exit 2, naming file:line.";

/// Arguments of `logscope replay`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct ReplayArgs {
    /// A candidate limit (see SPEC below); repeat for several candidates.
    #[arg(long = "limit", value_name = "SPEC", help_heading = "Candidates")]
    pub limits: Vec<String>,

    /// Choose the limit: a SPEC with LOW..HIGH in place of its count, e.g.
    /// 600..2400/10m,step=200,scope=heavy (step: a tenth of the range by default; at most
    /// 100 values). Every value is a candidate, all replayed in one pass; the report shows
    /// the trade-off (refused per class, the peak per window against --capacity, the waits
    /// with --workers) and names the smallest refusal that keeps every window under the
    /// capacity (`chosen`, which --emit writes) and the knee.
    #[arg(long, value_name = "RANGE-SPEC", help_heading = "Candidates")]
    pub sweep: Option<String>,

    /// A candidate limiter configuration in TOML (zones, rules, exemptions; nginx or
    /// Caddy semantics; see fixtures/limits/); repeat for several.
    #[arg(long = "config", value_name = "FILE", help_heading = "Candidates")]
    pub configs: Vec<PathBuf>,

    /// A real nginx configuration (nginx.conf and its includes): its limit_req_zone,
    /// limit_req, locations, servers and map/geo keys, replayed as nginx decides;
    /// repeat for several. What cannot be replayed is listed with file:line.
    #[arg(long = "nginx-conf", value_name = "FILE", help_heading = "Candidates")]
    pub nginx_confs: Vec<PathBuf>,

    /// A real haproxy.cfg: its stick tables and each frontend's http-request
    /// track-sc, sc-inc-gpc0 and deny rules, replayed as HAProxy 2.6 counts (requests go
    /// to the frontend the log names; file order, a clock that never goes back); repeat
    /// for several. What cannot be replayed is listed with file:line.
    #[arg(long = "haproxy-cfg", value_name = "FILE", help_heading = "Candidates")]
    pub haproxy_cfgs: Vec<PathBuf>,

    /// A real Caddyfile: its rate_limit handlers (mholt/caddy-ratelimit zones with
    /// match, key, events, window, ipv4_prefix/ipv6_prefix) in the handler order Caddy
    /// runs them, after the rewrites and responders before them; {$ENV:default} as Caddy
    /// reads it. Repeat for several. What cannot be replayed is listed with file:line.
    #[arg(long = "caddyfile", value_name = "FILE", help_heading = "Candidates")]
    pub caddyfiles: Vec<PathBuf>,

    /// A fail2ban jail file (jail.conf / jail.local), counted and banned as fail2ban
    /// does (see `fail2ban` under ban options): each enabled jail's maxretry,
    /// findtime, bantime (and bantime.increment), filter (filter.d/NAME.conf beside the
    /// file) or failregex, ignoreregex and ignoreip, replayed as a ban candidate; the
    /// failregex reads each request's line rebuilt in the combined format. Repeat for
    /// several. What cannot be replayed is listed with file:line.
    #[arg(
        long = "fail2ban-jail",
        value_name = "FILE",
        help_heading = "Candidates"
    )]
    pub fail2ban_jails: Vec<PathBuf>,

    /// Write the candidates as server configuration instead of the report (to stdout
    /// or --out): `nginx` (limit_req_zone, map/geo and a server with locations, to
    /// paste inside http { ... }), `caddy` (a rate_limit handler with one zone per
    /// zone, to paste inside a site block), `haproxy` (a frontend with track-sc/deny rules and
    /// its stick-table backends), with a comment on what was replayed and refused.
    #[arg(long, value_name = "SERVER", help_heading = "Report")]
    pub emit: Option<String>,

    /// Never limit clients in these networks (every candidate); repeat or comma-separate.
    #[arg(
        long = "exempt",
        value_name = "CIDR",
        value_delimiter = ',',
        help_heading = "Candidates"
    )]
    pub exempt: Vec<String>,

    /// Never limit agents matching this regex (every candidate).
    #[arg(long, value_name = "REGEX", help_heading = "Candidates")]
    pub exempt_agent: Option<String>,

    /// Never limit these authenticated users, e.g. a service's credential (every
    /// candidate); repeat or comma-separate.
    #[arg(
        long,
        value_name = "USER",
        value_delimiter = ',',
        help_heading = "Candidates"
    )]
    pub exempt_user: Vec<String>,

    /// Never limit identified (logged-in) clients (every candidate).
    #[arg(long, help_heading = "Candidates")]
    pub exempt_identified: bool,

    /// Statuses that mean the server refused a request's credentials: a user name
    /// logged with one of them exempts nothing (--exempt-user, --exempt-identified and
    /// the exemptions of --config rules); such requests are judged and counted
    /// (`credentials_refused`). Comma-separated, or `none` [default: 401,403,407]
    #[arg(long, value_name = "STATUSES", help_heading = "Candidates")]
    pub credential_refusals: Option<String>,

    /// Your own services' networks, for the report (a loud warning when a candidate
    /// refuses them); addresses a candidate exempts count too. Repeat or comma-separate.
    #[arg(
        long = "internal",
        value_name = "CIDR",
        value_delimiter = ',',
        help_heading = "Report"
    )]
    pub internal: Vec<String>,

    /// Your own services' agents (regex), for the report.
    #[arg(long, value_name = "REGEX", help_heading = "Report")]
    pub internal_agent: Option<String>,

    /// Your own services' user names, for the report; repeat or comma-separate.
    #[arg(
        long,
        value_name = "USER",
        value_delimiter = ',',
        help_heading = "Report"
    )]
    pub internal_user: Vec<String>,

    /// What the server can take, e.g. 1610/10m: the passed load per window is held
    /// against it, without and with each limit.
    #[arg(long, value_name = "N/WINDOW", value_parser = rate_arg, help_heading = "Report")]
    pub capacity: Option<Rate>,

    /// Replay the requests each candidate admits (and, as `none`, all of them) through a
    /// FIFO queue of C workers with service times taken from the log (the logged request
    /// time without its queueing, separated by the same C workers), and report the p50/p95
    /// wait and the utilisation per class, e.g. --workers 8.
    #[arg(long, value_name = "C", value_parser = clap::value_parser!(u32).range(1..=100_000), help_heading = "Report")]
    pub workers: Option<u32>,

    /// Width of the refusals-over-time buckets: 1m, 10m, 1h, 1d [default: the capacity
    /// window, else a width giving at most 48 rows].
    #[arg(long, value_name = "WIDTH", value_parser = duration_arg, help_heading = "Report")]
    pub by: Option<Duration>,

    /// Rows per most-refused list (networks, addresses, agents).
    #[arg(long, value_name = "N", default_value_t = 5, help_heading = "Report")]
    pub top: usize,

    /// Write one CSV row per limited request per candidate (file, line, arrival,
    /// candidate, key, decision, delay_ms, rule, zone, status, and what the client would
    /// have been told: limit as N;w=SECONDS, remaining, reset_s, retry_after_s on a
    /// refusal) to FILE. An existing FILE
    /// is replaced only if it ends in .csv, else only with --force; written to a new
    /// temporary file beside FILE, then renamed over it.
    #[arg(long, value_name = "FILE", help_heading = "Report")]
    pub decisions: Option<PathBuf>,

    /// Begin each --decisions row with seq, the row's place in one run's file (the
    /// request's place in decision order × the number of candidates + the candidate's
    /// place). It is the same in every --keys shard: the shards' rows merged by seq,
    /// without the column, are one unsharded run's file byte for byte
    /// (contrib/spark_replay.py merges them so).
    #[arg(long, requires = "decisions", help_heading = "Report")]
    pub decisions_seq: bool,

    /// Statuses that mean a deployed limiter refused the request in the log.
    #[arg(
        long,
        value_name = "STATUS",
        value_delimiter = ',',
        default_value = "429",
        help_heading = "Report"
    )]
    pub refusal_status: Vec<u16>,

    /// Leave out requests the log shows as refused already (--refusal-status).
    #[arg(long, help_heading = "Report")]
    pub drop_logged_refusals: bool,

    /// Directory for the temporary files of sorted rows when the selection does not
    /// fit in memory, and of the clients of rows replayed as read from the dataset
    /// [default: $TMPDIR or /tmp].
    #[arg(long, value_name = "DIR", help_heading = "Report")]
    pub tmp_dir: Option<PathBuf>,

    /// Also replay a fleet of N servers, each with its own counters (not shared), and
    /// report what the fleet admitted beyond the limit against one shared counter.
    #[arg(long, value_name = "N", help_heading = "Fleet")]
    pub servers: Option<String>,

    /// How the fleet's balancer picks a server: round-robin (default), ip-hash (one
    /// client, one server) or random:SEED (a seeded generator: the same on every run).
    #[arg(long, value_name = "RULE", help_heading = "Fleet")]
    pub balance: Option<String>,

    /// Replay only shard K of N of the keys (XXH3-64 of the key text mod N == K), so
    /// that N tasks of a cluster split a per-key replay; the shards' --decisions add up
    /// to one run's. Site-wide candidates cannot be sharded.
    #[arg(long, value_name = "K/N", help_heading = "Fleet")]
    pub keys: Option<String>,

    /// Which rows: the shared filters.
    #[command(flatten)]
    pub filters: Box<FilterArgs>,

    /// Where and how the report is written.
    #[command(flatten)]
    pub out: OutputArgs,

    /// Where rows come from: FILEs or the dataset.
    #[command(flatten)]
    pub rows: RowArgs,
}

/// A usage error: printed, exit status 2.
fn usage(msg: impl std::fmt::Display) -> anyhow::Result<i32> {
    Ok(output::usage(msg))
}

/// Runs `logscope replay`.
pub fn run(data: &Path, args: ReplayArgs) -> anyhow::Result<i32> {
    if let Some(e) = &args.emit {
        if !matches!(e.as_str(), "nginx" | "caddy" | "haproxy") {
            return usage(format_args!(
                "--emit {}: unknown server; give --emit nginx, caddy or haproxy",
                escape::message(e)
            ));
        }
        if let Some(p) = args.out.out_path()
            && let Err(m) = output::check_target(
                "--out",
                &p,
                match e.as_str() {
                    "haproxy" => "cfg",
                    "caddy" => "caddy",
                    _ => "conf",
                },
                args.out.force,
            )
        {
            return usage(m);
        }
    } else if let Err(m) = args.out.check() {
        return usage(m);
    }
    if let Some(d) = &args.decisions
        && let Err(m) = output::check_target("--decisions", d, "csv", args.out.force)
    {
        return usage(m);
    }
    let Replayed {
        report,
        replay,
        stats,
        timing,
        rows,
    } = match compute(data, &args)? {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    if args.emit.is_some() {
        emit_config(&args, &replay, &report)?;
        timing.lap("emit", rows);
        return Ok(stats.exit_code());
    }
    let env = Envelope::report("replay", &report.selection, &args.filters.tz, &stats);
    args.out.emit_report(&report, &env)?;
    timing.lap("report", rows);
    Ok(stats.exit_code())
}

fn usage_in<T>(msg: impl std::fmt::Display) -> anyhow::Result<Result<T, i32>> {
    Ok(Err(output::usage(msg)))
}

/// Replays the rows of `args` through its candidates (writing `--decisions` when given):
/// `Err(code)` after a usage message.
pub fn compute(data: &Path, args: &ReplayArgs) -> anyhow::Result<Result<Replayed, i32>> {
    let fleet = match fleet_args(args) {
        Ok(f) => f,
        Err(m) => return usage_in(m),
    };
    let mut policies = match candidates(args, false)? {
        Ok(p) => p,
        Err(code) => return Ok(Err(code)),
    };
    let mut source = args.rows.source(data)?;
    // `key=field:NAME`: the FILEs' format told to capture the fields the keys name.
    match bind_fields(args, source.format.as_ref(), &mut policies) {
        Ok(Some(f)) => source.format = Some(f),
        Ok(None) => {}
        Err(m) => return usage_in(m),
    }
    let shard = match args.keys.as_deref().map(Shard::parse).transpose() {
        Ok(s) => s,
        Err(e) => return usage_in(format_args!("--keys {e}")),
    };
    let shard_filter = match shard.map(|s| ShardFilter::new(s, &policies)).transpose() {
        Ok(f) => f,
        Err(e) => return usage_in(format_args!("--keys: {}", escape::message(&e.to_string()))),
    };
    let mut out = compute_with(args, policies, source, shard_filter, fleet)?;
    if let (Ok(r), Some(s)) = (out.as_mut(), &args.sweep)
        && let Ok(sweep) = Sweep::parse(s)
    {
        let first = args.limits.len();
        let cands = r
            .report
            .candidates
            .get(first..first + sweep.values.len())
            .unwrap_or(&[]);
        r.report.sweep = Some(summarise(&sweep.values, cands));
    }
    Ok(out)
}

/// `--servers N --balance RULE`, checked.
fn fleet_args(args: &ReplayArgs) -> Result<Option<(usize, Balance)>, String> {
    let m = |e: logscope_core::replay::fleet::FleetError| escape::message(&e.to_string());
    let balance = match &args.balance {
        Some(b) => Balance::parse(b).map_err(m)?,
        None => Balance::RoundRobin,
    };
    match &args.servers {
        Some(n) => Ok(Some((parse_servers(n).map_err(m)?, balance))),
        None if args.balance.is_some() => {
            Err(m(logscope_core::replay::fleet::FleetError::BalanceAlone))
        }
        None => Ok(None),
    }
}

/// The candidates of `args` (`--limit`, `--config`, `--nginx-conf`, …), exemptions
/// merged and names made unique; `quiet` leaves out the notes on stderr (the fleet's
/// copies of the same candidates). `Err(code)` after a usage message.
fn candidates(args: &ReplayArgs, quiet: bool) -> anyhow::Result<Result<Vec<Policy>, i32>> {
    let mut policies: Vec<Policy> = Vec::new();
    for spec in &args.limits {
        match Policy::from_spec(spec) {
            Ok(p) => policies.push(p),
            Err(e) => return usage_in(format_args!("--limit: {e}")),
        }
    }
    // The sweep's candidates follow the --limit ones (see `sweep_of`).
    if let Some(s) = &args.sweep {
        let sweep = match Sweep::parse(s) {
            Ok(s) => s,
            Err(e) => return usage_in(format_args!("--sweep: {e}")),
        };
        for spec in &sweep.specs {
            match Policy::from_spec(spec) {
                Ok(p) => policies.push(p),
                Err(e) => return usage_in(format_args!("--sweep: {spec}: {e}")),
            }
        }
    }
    for path in &args.configs {
        match Policy::from_toml_file(path) {
            Ok(p) => policies.push(p),
            Err(e) => return usage_in(format_args!("--config {}: {e}", escape::path(path))),
        }
    }
    for path in &args.nginx_confs {
        match NginxConf::read(path) {
            Ok(c) => {
                for n in c.notes.iter().filter(|_| !quiet) {
                    let at = if n.at.is_empty() {
                        String::new()
                    } else {
                        format!("{}: ", n.at)
                    };
                    eprintln!(
                        "logscope: --nginx-conf {}: {}",
                        escape::path(path),
                        escape::message(&format!("{at}not replayed as nginx would: {}", n.message))
                    );
                }
                policies.push(c.policy);
            }
            Err(e) => return usage_in(format_args!("--nginx-conf: {e}")),
        }
    }
    for path in &args.haproxy_cfgs {
        match logscope_core::replay::conf::haproxy_cfg::read_file(path) {
            Ok(c) => {
                for u in c.unsupported.iter().filter(|_| !quiet) {
                    eprintln!(
                        "logscope: --haproxy-cfg {}",
                        escape::message(&u.to_string())
                    );
                }
                policies.push(c.policy);
            }
            Err(e) => {
                return usage_in(format_args!(
                    "--haproxy-cfg {}",
                    escape::message(&e.to_string())
                ));
            }
        }
    }
    for path in &args.caddyfiles {
        let env = |k: &str| std::env::var(k).ok();
        match logscope_core::replay::conf::CaddyConf::read(path, &env) {
            Ok(c) => {
                for n in c.notes.iter().filter(|_| !quiet) {
                    let at = if n.at.is_empty() {
                        String::new()
                    } else {
                        format!("{}: ", n.at)
                    };
                    eprintln!(
                        "logscope: --caddyfile {}: {}",
                        escape::path(path),
                        escape::message(&format!("{at}{}", n.message))
                    );
                }
                policies.push(c.policy);
            }
            Err(e) => return usage_in(format_args!("--caddyfile: {e}")),
        }
    }
    for path in &args.fail2ban_jails {
        match logscope_core::replay::conf::fail2ban::read_file(path) {
            Ok(j) => {
                for n in &j.notes {
                    eprintln!(
                        "logscope: --fail2ban-jail {}: {}",
                        escape::path(path),
                        escape::message(&format!(
                            "{}: not replayed as fail2ban would: {}",
                            n.at, n.message
                        ))
                    );
                }
                if j.policies.is_empty() {
                    return usage_in(format_args!(
                        "--fail2ban-jail {}: no enabled jail could be replayed; for example: [nginx-botsearch] enabled = true, maxretry = 2, findtime = 10m, bantime = 1h",
                        escape::path(path)
                    ));
                }
                policies.extend(j.policies);
            }
            Err(e) => {
                return usage_in(format_args!(
                    "--fail2ban-jail {}",
                    escape::message(&e.to_string())
                ));
            }
        }
    }
    if policies.is_empty() {
        return usage_in(
            "no candidate: give --limit SPEC (e.g. --limit 1600/10m), --config FILE or --nginx-conf FILE; see logscope replay --help",
        );
    }
    let extra = match exemptions(args) {
        Ok(e) => e,
        Err(e) => return usage_in(e),
    };
    if !extra.is_empty() {
        for p in &mut policies {
            let merged = merge_exempt(p.exempt(), &extra);
            p.set_exempt(merged);
        }
    }
    if let Some(text) = &args.credential_refusals {
        let statuses = match credential_refusals(text) {
            Ok(s) => s,
            Err(e) => return usage_in(e),
        };
        for p in &mut policies {
            p.set_credential_refusals(&statuses);
        }
    }
    // `key=asn`: the --asn-db database, read once for every candidate.
    if policies.iter().any(Policy::keys_on_asn) {
        let Some(db) = args.filters.network_db()? else {
            return usage_in(
                "key=asn needs a network database: e.g. --asn-db ip2asn-combined.tsv --limit 3000/10m,key=asn",
            );
        };
        for p in &mut policies {
            p.bind_networks(&db);
        }
    }
    unique_names(&mut policies);
    Ok(Ok(policies))
}

/// The candidates' `key=field:NAME` keys bound to the fields the FILEs' `format`
/// (`--log-format`, `--json-map`) captures: `Ok(None)` when no key names a field, else
/// that format told to capture them, for the FILEs. `Err`: why the fields cannot be
/// read (over the dataset, a format without them, too many), for a usage message.
fn bind_fields(
    args: &ReplayArgs,
    format: Option<&Format>,
    policies: &mut [Policy],
) -> Result<Option<Format>, String> {
    let mut names: Vec<Box<str>> = Vec::new();
    for f in policies.iter().flat_map(Policy::field_keys) {
        if !names.iter().any(|n| n.eq_ignore_ascii_case(&f.name)) {
            names.push(f.name.clone());
        }
    }
    let Some(first) = names.first() else {
        return Ok(None);
    };
    let keys = names
        .iter()
        .map(|n| format!("key=field:{n}"))
        .collect::<Vec<_>>()
        .join(", ");
    if args.rows.files.is_empty() {
        let var = if first
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_')
        {
            first.to_string()
        } else {
            logscope_core::parse::header_variable(first)
        };
        return Err(format!(
            "{keys} reads a field of the log lines, and the dataset keeps only the built-in columns: replay the log FILEs, with the format that logs the field, e.g. logscope replay --limit 300/1m,key=field:{first} --log-format '$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\" \"${var}\"' access.log"
        ));
    }
    let wanted: Vec<&str> = names.iter().map(|n| &**n).collect();
    let Some(format) = format else {
        return Err(format!(
            "{keys} reads a field of the log lines, and the built-in formats (detected when no format is given) log none beyond their columns: give the format that logs it with --log-format (nginx or Apache syntax: $http_x_api_key, %{{X-Api-Key}}i) or --json-map (field:{first}=KEY)"
        ));
    };
    let (captured, at) = format.capture(&wanted).map_err(|e| match e {
        CaptureError::Unknown { ref known, .. } if known.is_empty() => format!(
            "{keys}: {e}; give the format that logs it with --log-format (nginx or Apache syntax: $http_x_api_key, %{{X-Api-Key}}i) or --json-map (field:{first}=KEY)"
        ),
        e => format!("{keys}: {e}"),
    })?;
    for p in policies.iter_mut() {
        p.bind_fields(|name| {
            let k = wanted.iter().position(|w| w.eq_ignore_ascii_case(name))?;
            at.get(k).map(|c| (c.slot, c.header.clone()))
        });
    }
    Ok(Some(captured))
}

/// [`compute`] once the candidates are built.
fn compute_with(
    args: &ReplayArgs,
    policies: Vec<Policy>,
    source: RowSource,
    shard_filter: Option<ShardFilter>,
    fleet: Option<(usize, Balance)>,
) -> anyhow::Result<Result<Replayed, i32>> {
    let mut marks = InternalMarks::from_policies(&policies);
    for c in &args.internal {
        match parse_cidr(c) {
            Ok(n) => marks.cidr.push(n),
            Err(e) => return usage_in(format_args!("--internal: {e}")),
        }
    }
    if let Some(re) = &args.internal_agent {
        match regex::bytes::Regex::new(re) {
            Ok(r) => marks.agents.push(r),
            Err(e) => return usage_in(format_args!("--internal-agent: bad regex {re:?}: {e}")),
        }
    }
    marks
        .users
        .extend(args.internal_user.iter().map(|u| u.as_bytes().to_vec()));

    if let Some(d) = &args.tmp_dir
        && !d.is_dir()
    {
        return usage_in(format_args!(
            "--tmp-dir {}: not a directory",
            escape::path(d)
        ));
    }
    let spill = match spill_options(args.tmp_dir.clone()) {
        Ok(s) => s,
        Err(m) => return usage_in(m),
    };
    let tmp_shown = escape::path(spill.dir.as_deref().unwrap_or(&std::env::temp_dir()));

    let mut sel = args.filters.build()?;
    let fleet = match fleet {
        None => None,
        Some((n, balance)) => {
            let mut copies = Vec::with_capacity(n + 1);
            for _ in 0..=n {
                match candidates(args, true)? {
                    Ok(mut p) => {
                        // Bound as the main copy was (same names, same format).
                        if let Err(m) = bind_fields(args, source.format.as_ref(), &mut p) {
                            return usage_in(m);
                        }
                        copies.push(p)
                    }
                    Err(code) => return Ok(Err(code)),
                }
            }
            Some((copies, balance))
        }
    };
    let job = ReplayJob {
        options: ReportOptions {
            capacity: args.capacity,
            // Without --by, the width the span of the rows replayed gives.
            bucket_ms: args.by.map(Duration::ms_i64),
            top: args.top,
            refusal_statuses: args.refusal_status.clone(),
            v4_len: sel.classifier.v4_len,
            v6_len: sel.classifier.v6_len,
            workers: args.workers.map(|c| c as usize),
        },
        policies,
        shard: shard_filter,
        fleet,
        marks,
        spill,
        drop_logged_refusals: args.drop_logged_refusals,
        lines: args.decisions.is_some(),
    };
    let decisions_shown = args.decisions.as_deref().map(escape::path);
    let decisions_context = || {
        format!(
            "--decisions: cannot write {}",
            decisions_shown.as_deref().unwrap_or("")
        )
    };
    let mut decisions = match &args.decisions {
        None => None,
        Some(path) => {
            let f = AtomicFile::create("--decisions", path)?;
            let names = job.policies.iter().map(|p| p.name().to_string()).collect();
            let out = BufWriter::with_capacity(1 << 20, f);
            let w = if args.decisions_seq {
                DecisionsWriter::with_seq(out, names)
            } else {
                DecisionsWriter::new(out, names)
            };
            Some(w.with_context(decisions_context)?)
        }
    };
    let replayed = match engine::replay::replay(&source, &mut sel, job, decisions.as_mut()) {
        Ok(r) => r,
        Err(e) => {
            return Err(match e {
                ReplayError::Rows(e) => e,
                ReplayError::Decisions(e) => anyhow::Error::new(e).context(decisions_context()),
                ReplayError::Thread(e) => {
                    anyhow::Error::new(e).context("cannot start the replay thread")
                }
                ReplayError::Spill(e) => anyhow::Error::new(e).context(format!(
                    "cannot write to a temporary file in {tmp_shown} (see --tmp-dir)"
                )),
                ReplayError::Sort(e) => anyhow::Error::new(e).context(format!(
                    "cannot write sorted rows to a temporary file in {tmp_shown} (see --tmp-dir)"
                )),
                ReplayError::ReadBack(e) => anyhow::Error::new(e)
                    .context(format!("cannot read back sorted rows in {tmp_shown}")),
                ReplayError::Fleet(e) => anyhow::anyhow!("--keys: {e}"),
            });
        }
    };
    if let Some(w) = decisions {
        let rows = w.rows();
        let f = w
            .finish()
            .and_then(|b| b.into_inner().map_err(|e| e.into_error()))
            .with_context(decisions_context)?;
        f.commit()?;
        eprintln!(
            "logscope: wrote {} decisions to {}",
            logscope_core::number::thousands(rows),
            decisions_shown.as_deref().unwrap_or("")
        );
    }
    Ok(Ok(replayed))
}

/// `--emit nginx`: the candidates as nginx configuration, to stdout or `--out`.
fn emit_config(
    args: &ReplayArgs,
    replay: &Replay,
    report: &report::ReplayReport,
) -> anyhow::Result<()> {
    let mut summary = EmitSummary {
        replayed: vec![
            format!("Replayed: {} ({})", report.origin, report.selection),
            format!(
                "{} requests, {} to {}",
                logscope_core::number::thousands(report.requests),
                report.first.as_deref().unwrap_or("-"),
                report.last.as_deref().unwrap_or("-")
            ),
        ],
        outcomes: Vec::new(),
    };
    for c in &report.candidates {
        summary.outcomes.push(vec![
            format!("Replayed as: {}", c.name),
            format!(
                "It would have refused {} ({:.1}%) and delayed {} of the {} requests it limits; admitted {}; {} exempt.",
                logscope_core::number::thousands(c.refused),
                c.refused_share * 100.0,
                logscope_core::number::thousands(c.delayed),
                logscope_core::number::thousands(c.in_scope),
                logscope_core::number::thousands(c.admitted),
                logscope_core::number::thousands(c.exempt)
            ),
        ]);
    }
    let mut policies: Vec<&Policy> = replay.policies().iter().collect();
    // A sweep writes the limit it chose, alone.
    if let Some(sw) = &report.sweep {
        let Some(chosen) = &sw.chosen else {
            anyhow::bail!(
                "--emit with --sweep writes the chosen limit, and none was chosen: give --capacity N/WINDOW, or sweep lower limits"
            );
        };
        let at = report
            .candidates
            .iter()
            .position(|c| &c.name == chosen)
            .unwrap_or(0);
        policies = policies.into_iter().skip(at).take(1).collect();
        summary.outcomes = summary.outcomes.into_iter().skip(at).take(1).collect();
    }
    let text = match args.emit.as_deref() {
        Some("haproxy") => {
            logscope_core::replay::conf::emit_haproxy::emit_haproxy(&policies, &summary)
        }
        Some("caddy") => logscope_core::replay::conf::emit_caddy(&policies, &summary),
        _ => emit_nginx(&policies, &summary),
    };
    match args.out.out_path() {
        None => {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
        Some(p) => {
            use std::io::Write as _;
            let mut f = AtomicFile::create("--out", &p)?;
            f.write_all(text.as_bytes())
                .with_context(|| format!("--out: cannot write {}", escape::path(&p)))?;
            f.commit()?;
            eprintln!("{}", args.out.wrote(&p));
        }
    }
    Ok(())
}

/// Where and when the rows spill: `--tmp-dir`, and `LOGSCOPE_REPLAY_RUN_ROWS` (rows per
/// sorted run; for tests and benchmarks) when set.
fn spill_options(dir: Option<PathBuf>) -> Result<SpillOptions, String> {
    let mut o = SpillOptions {
        dir,
        ..SpillOptions::default()
    };
    if let Some(v) = std::env::var_os("LOGSCOPE_REPLAY_RUN_ROWS").filter(|v| !v.is_empty()) {
        o.run_rows = v
            .to_str()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                format!(
                    "LOGSCOPE_REPLAY_RUN_ROWS={}: give a number of rows above 0",
                    escape::message(&v.to_string_lossy())
                )
            })?;
    }
    Ok(o)
}

/// The command line's exemptions.
fn exemptions(args: &ReplayArgs) -> Result<Exempt, String> {
    let mut e = Exempt {
        identified: args.exempt_identified,
        users: args
            .exempt_user
            .iter()
            .map(|u| u.as_bytes().to_vec())
            .collect(),
        ..Exempt::default()
    };
    for c in &args.exempt {
        e.cidr
            .push(parse_cidr(c).map_err(|m| format!("--exempt: {m}"))?);
    }
    if let Some(re) = &args.exempt_agent {
        e.ua_regex = Some(
            regex::bytes::Regex::new(re)
                .map_err(|m| format!("--exempt-agent: bad regex {re:?}: {m}"))?,
        );
    }
    Ok(e)
}

/// `--credential-refusals 401,403,407` (or `none`).
fn credential_refusals(text: &str) -> Result<Vec<u16>, String> {
    if text.trim() == "none" {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(|s| {
            s.trim()
                .parse::<u16>()
                .ok()
                .filter(|n| (100..=599).contains(n))
                .ok_or_else(|| {
                    format!(
                        "--credential-refusals: {s:?} is not an HTTP status; for example: --credential-refusals 401,403,407 (or none)"
                    )
                })
        })
        .collect()
}

/// A policy's exemptions plus the command line's.
fn merge_exempt(a: &Exempt, b: &Exempt) -> Exempt {
    let mut e = a.clone();
    e.cidr.extend(b.cidr.iter().copied());
    e.identified |= b.identified;
    e.users.extend(b.users.iter().cloned());
    e.ua_regex = match (&a.ua_regex, &b.ua_regex) {
        (Some(x), Some(y)) => {
            regex::bytes::Regex::new(&format!("(?:{})|(?:{})", x.as_str(), y.as_str())).ok()
        }
        (x, y) => x.clone().or_else(|| y.clone()),
    };
    e
}

/// Makes candidate names unique (`name`, `name (2)`, …) so that the decisions CSV can
/// tell them apart.
fn unique_names(policies: &mut [Policy]) {
    let mut seen: Vec<String> = Vec::new();
    for p in policies.iter_mut() {
        let base = p.name().to_string();
        let mut name = base.clone();
        let mut k = 2;
        while seen.contains(&name) {
            name = format!("{base} ({k})");
            k += 1;
        }
        if name != base {
            p.set_name(name.clone());
        }
        seen.push(name);
    }
}
