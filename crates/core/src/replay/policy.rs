//! A candidate limiter configuration (policy): zones, rules that send requests to them,
//! exemptions, and the dialect that says how several limits on one request combine.

use std::fmt::Write as _;

use super::client_view::ClientView;
use super::decision::{Decision, RuleId, Verdict};
use super::haproxy_program::{Program, Scratch};
use super::key::FieldKey;
use super::matcher::{Exempt, Matcher};
use super::nginx::NginxLimit;
use super::request::Request;
use super::spec::{LimitSpec, NginxDelay, SpecError, SpecScope};
use super::store::Lookup;
use super::zone::{Zone, ZoneId, nginx_limit};

/// How the limits that apply to one request combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Dialect {
    /// nginx: rules are locations — the first rule that matches is the only one that
    /// applies; its limits are all-or-nothing: all but the last are looked up and held
    /// pending, a refusal by any charges none, otherwise all are charged and the longest
    /// delay wins.
    #[default]
    Nginx,
    /// Caddy (mholt/caddy-ratelimit): every rule that matches applies (each is a Caddy
    /// zone with its own matcher); their limits are tried most permissive first
    /// (`events/window` descending; ties in config order, Caddy leaves them unordered),
    /// each admitting one takes its slot at once, the first refusal refuses the request
    /// and earlier zones keep what they took.
    Caddy,
}

impl Dialect {
    /// Parses `nginx` or `caddy`.
    pub fn parse(s: &str) -> Option<Dialect> {
        match s.trim().to_ascii_lowercase().as_str() {
            "nginx" => Some(Dialect::Nginx),
            "caddy" => Some(Dialect::Caddy),
            _ => None,
        }
    }

    /// The name.
    pub fn name(&self) -> &'static str {
        match self {
            Dialect::Nginx => "nginx",
            Dialect::Caddy => "caddy",
        }
    }
}

/// One limit of a rule: a zone, and for nginx zones the `limit_req` burst and delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleLimit {
    /// The zone.
    pub zone: ZoneId,
    pub(crate) nginx: NginxLimit,
}

/// Requests matched by `matcher` (minus exemptions) go through `limits`.
#[derive(Clone, Debug)]
pub struct Rule {
    /// A label (an nginx location, a Caddy zone name…).
    pub name: String,
    /// Which requests the rule covers.
    pub matcher: Matcher,
    /// Which of those it lets through uncounted.
    pub exempt: Exempt,
    /// The limits, in order. Empty = the requests are covered but not limited.
    pub limits: Vec<RuleLimit>,
    match_all: bool,
}

/// A limit as a rule lists it when building a policy by hand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitRef {
    /// The zone.
    pub zone: ZoneId,
    /// nginx only: `burst=` for this location (default: the zone's).
    pub burst: Option<u64>,
    /// nginx only: `nodelay`/`delay=` for this location (default: the zone's).
    pub delay: Option<NginxDelay>,
}

/// A candidate: one or more zones and the rules that feed them. Build from a spec with
/// [`Policy::from_spec`], from TOML with [`Policy::from_toml`], or by hand.
pub struct Policy {
    name: String,
    description: Option<String>,
    dialect: Dialect,
    zones: Vec<Zone>,
    rules: Vec<Rule>,
    exempt: Exempt,
    rank: Vec<u32>,
    boundary: bool,
    key: Vec<u8>,
    plan: Vec<(u16, u16)>,
    pending: Vec<(u16, u64)>,
    program: Option<Box<Program>>,
    scratch: Scratch,
    challenge: bool,
    /// Requests judged although they named exempt credentials: the server refused them.
    credentials_refused: u64,
    /// When the last request was judged (ms).
    now: i64,
}

/// A rule or limit that does not fit the policy.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The zone index does not exist.
    #[error("rule `{rule}` names zone #{zone}, which does not exist")]
    NoSuchZone {
        /// The rule.
        rule: String,
        /// The zone index.
        zone: ZoneId,
    },
    /// burst/delay on a non-nginx zone.
    #[error(
        "rule `{rule}` sets burst/delay on zone `{zone}`, which is not an nginx zone (set them on the zone)"
    )]
    NotNginx {
        /// The rule.
        rule: String,
        /// The zone name.
        zone: String,
    },
    /// Too many zones or rules.
    #[error("a policy holds at most 65,535 zones and rules")]
    TooMany,
}

impl Policy {
    /// An empty policy.
    pub fn new(name: impl Into<String>, dialect: Dialect) -> Policy {
        Policy {
            name: name.into(),
            description: None,
            dialect,
            zones: Vec::new(),
            rules: Vec::new(),
            exempt: Exempt::default(),
            rank: Vec::new(),
            boundary: false,
            key: Vec::with_capacity(64),
            plan: Vec::new(),
            pending: Vec::new(),
            program: None,
            scratch: Scratch::default(),
            challenge: false,
            credentials_refused: 0,
            now: i64::MIN,
        }
    }

    /// A one-zone policy from a spec string (`1600/10m`, `5r/s,algo=nginx,burst=10,key=ip`).
    /// It covers every request (or those named by `scope=`).
    pub fn from_spec(spec: &str) -> Result<Policy, SpecError> {
        Policy::from_limit(LimitSpec::parse(spec)?)
    }

    /// A one-zone policy from a parsed limit, named by its label.
    pub fn from_limit(spec: LimitSpec) -> Result<Policy, SpecError> {
        let label = spec.label();
        let scope = spec.scope;
        // `status=`/`path=` narrow what is counted; a ban zone counts through its own
        // filter and covers every request (a banned key is refused everywhere).
        let ban = spec.algorithm == super::spec::Algorithm::Ban;
        let mut matcher = Matcher {
            status: super::spec::statuses_list(&spec.status),
            path_prefix: spec.path.iter().map(|p| p.as_bytes().to_vec()).collect(),
            ..Matcher::default()
        };
        let mut p = Policy::new(label.clone(), Dialect::Nginx);
        let z = p
            .add_zone(Zone::new(label.clone(), spec)?)
            .expect("first zone");
        match scope {
            SpecScope::All => {}
            SpecScope::Heavy => matcher.heavy = Some(true),
            SpecScope::Anonymous => matcher.anonymous = Some(true),
            SpecScope::AnonymousHeavy => {
                matcher.heavy = Some(true);
                matcher.anonymous = Some(true);
            }
        }
        if ban {
            let count = std::mem::take(&mut matcher);
            if !count.is_empty() {
                p.zones[z as usize].set_count_filter(super::ban::CountFilter::of(count));
            }
        }
        let lim = LimitRef {
            zone: z,
            burst: None,
            delay: None,
        };
        p.add_rule(label, matcher, Exempt::default(), &[lim])
            .expect("zone exists");
        Ok(p)
    }

    /// Makes this a haproxy.cfg policy: `program` (frontends and their `http-request`
    /// rules over this policy's stick-table zones and rules) decides every request; the
    /// rules only name what it decided.
    pub fn set_program(&mut self, program: Program) {
        self.program = Some(Box::new(program));
    }

    /// The haproxy.cfg program, if this policy has one.
    pub fn program(&self) -> Option<&Program> {
        self.program.as_deref()
    }

    /// Whether the log should be replayed in file order with a clock that never goes
    /// back (HAProxy decides at accept time and, with one thread, logs in decision
    /// order): a haproxy.cfg policy or an `algo=haproxy` zone.
    pub fn log_order(&self) -> bool {
        self.program.is_some()
            || self
                .zones
                .iter()
                .any(|z| z.spec().algorithm == super::spec::Algorithm::Haproxy)
    }

    /// Sets a description shown by [`Policy::describe`].
    pub fn set_description(&mut self, d: impl Into<String>) {
        self.description = Some(d.into());
    }

    /// Renames the policy.
    pub fn set_name(&mut self, name: impl Into<String>) {
        self.name = name.into();
    }

    /// Requests exempt from every rule.
    pub fn set_exempt(&mut self, exempt: Exempt) {
        self.exempt = exempt;
    }

    /// The statuses that mean the server refused a request's credentials, for every
    /// exemption of the policy and of its rules ([`Exempt::credential_refusals`]).
    pub fn set_credential_refusals(&mut self, statuses: &[u16]) {
        self.exempt.credential_refusals = statuses.to_vec();
        for r in &mut self.rules {
            r.exempt.credential_refusals = statuses.to_vec();
        }
    }

    /// Adds a zone; returns its id.
    pub fn add_zone(&mut self, zone: Zone) -> Result<ZoneId, PolicyError> {
        if self.zones.len() >= u16::MAX as usize {
            return Err(PolicyError::TooMany);
        }
        self.zones.push(zone);
        self.rerank();
        Ok((self.zones.len() - 1) as ZoneId)
    }

    /// Adds a rule after the existing ones; returns its id.
    pub fn add_rule(
        &mut self,
        name: impl Into<String>,
        matcher: Matcher,
        exempt: Exempt,
        limits: &[LimitRef],
    ) -> Result<RuleId, PolicyError> {
        let name = name.into();
        if self.rules.len() >= u16::MAX as usize {
            return Err(PolicyError::TooMany);
        }
        let mut out = Vec::with_capacity(limits.len());
        for l in limits {
            let Some(zone) = self.zones.get(l.zone as usize) else {
                return Err(PolicyError::NoSuchZone {
                    rule: name,
                    zone: l.zone,
                });
            };
            if (l.burst.is_some() || l.delay.is_some()) && !zone.is_nginx() {
                return Err(PolicyError::NotNginx {
                    rule: name,
                    zone: zone.name().to_string(),
                });
            }
            let d = zone.default_limit();
            let nginx = NginxLimit {
                burst_milli: l.burst.map_or(d.burst_milli, |b| b.saturating_mul(1000)),
                delay_milli: l
                    .delay
                    .map_or(d.delay_milli, |dl| nginx_limit(0, dl).delay_milli),
            };
            out.push(RuleLimit {
                zone: l.zone,
                nginx,
            });
        }
        let match_all = matcher.is_empty();
        self.rules.push(Rule {
            name,
            matcher,
            exempt,
            limits: out,
            match_all,
        });
        Ok((self.rules.len() - 1) as RuleId)
    }

    fn rerank(&mut self) {
        let mut ids: Vec<usize> = (0..self.zones.len()).collect();
        // Most permissive first; stable, so ties keep config order.
        ids.sort_by(|&a, &b| {
            self.zones[b]
                .spec()
                .rate
                .cmp_permissive(&self.zones[a].spec().rate)
        });
        self.rank = vec![0; ids.len()];
        for (r, z) in ids.into_iter().enumerate() {
            self.rank[z] = r as u32;
        }
    }

    /// The name (a report's label for this candidate).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The description, if any.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The zones, by [`ZoneId`].
    pub fn zones(&self) -> &[Zone] {
        &self.zones
    }

    /// The zones, to set a ban zone's count filter ([`Zone::set_count_filter`]).
    pub fn zones_mut(&mut self) -> &mut [Zone] {
        &mut self.zones
    }

    /// The `field:NAME` keys of the zones, in zone order.
    pub fn field_keys(&self) -> impl Iterator<Item = &FieldKey> {
        self.zones.iter().filter_map(|z| z.spec().key.field())
    }

    /// Binds every `field:NAME` key of the zones to where its log format captures it:
    /// `bind` gives a name's slot and the request header it logs (`None`: the key is
    /// left as it is).
    pub fn bind_fields(&mut self, mut bind: impl FnMut(&str) -> Option<(u8, Option<String>)>) {
        for z in &mut self.zones {
            let Some(name) = z.spec().key.field().map(|f| f.name.clone()) else {
                continue;
            };
            if let Some((slot, header)) = bind(&name) {
                z.bind_field(slot, header.as_deref());
            }
        }
    }

    /// Whether a zone keys on the autonomous system (`key=asn`).
    pub fn keys_on_asn(&self) -> bool {
        self.zones
            .iter()
            .any(|z| matches!(z.spec().key, super::KeySpec::Asn(_)))
    }

    /// Binds every `key=asn` of the zones to the network database.
    pub fn bind_networks(&mut self, db: &std::sync::Arc<crate::forensics::netdb::NetworkDb>) {
        for z in &mut self.zones {
            z.bind_networks(db);
        }
    }

    /// The rules, by [`RuleId`].
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The policy-wide exemptions.
    pub fn exempt(&self) -> &Exempt {
        &self.exempt
    }

    /// In words: one line for a one-zone policy, else a line per zone and per rule.
    pub fn describe(&self) -> String {
        if self.program.is_some() {
            return self.describe_program();
        }
        if self.zones.len() == 1 && self.rules.len() == 1 && self.exempt.is_empty() {
            return self.zones[0].spec().describe();
        }
        let mut s = String::new();
        let how = match self.dialect {
            Dialect::Nginx => "the first matching rule applies; its limits are all-or-nothing",
            Dialect::Caddy => {
                "every matching rule applies; zones are tried most permissive first and keep their slot when a later one refuses"
            }
        };
        let _ = writeln!(
            s,
            "{} ({} dialect: {how}): {} zones, {} rules",
            self.name,
            self.dialect.name(),
            self.zones.len(),
            self.rules.len()
        );
        if let Some(d) = &self.description {
            let _ = writeln!(s, "  {d}");
        }
        for z in &self.zones {
            let _ = writeln!(s, "  zone {}: {}", z.name(), z.spec().describe_zone());
        }
        for r in &self.rules {
            let names: Vec<String> = r
                .limits
                .iter()
                .map(|l| {
                    let z = &self.zones[l.zone as usize];
                    if z.is_nginx() {
                        let delay = match l.nginx.delay_milli {
                            super::nginx::NODELAY_MILLI => " nodelay".to_string(),
                            0 => String::new(),
                            d => format!(" delay={}", d / 1000),
                        };
                        format!("{} burst={}{delay}", z.name(), l.nginx.burst_milli / 1000)
                    } else {
                        z.name().to_string()
                    }
                })
                .collect();
            let limits = if names.is_empty() {
                "not limited".to_string()
            } else {
                names.join(" + ")
            };
            let _ = writeln!(s, "  rule {} [{}]: {limits}", r.name, r.matcher.describe());
            if !r.exempt.is_empty() {
                let _ = writeln!(s, "    exempt: {}", r.exempt.describe());
            }
        }
        if !self.exempt.is_empty() {
            let _ = writeln!(s, "  exempt everywhere: {}", self.exempt.describe());
        }
        s.trim_end().to_string()
    }

    fn describe_program(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} (HAProxy: each frontend's http-request rules in order; every tracked request counts, refused or not): {} stick tables, {} frontends",
            self.name,
            self.zones.len(),
            self.program.as_ref().map_or(0, |p| p.frontends.len())
        );
        if let Some(d) = &self.description {
            let _ = writeln!(s, "  {d}");
        }
        for z in &self.zones {
            let _ = writeln!(s, "  table {}: {}", z.name(), z.spec().describe());
        }
        for r in &self.rules {
            let _ = writeln!(s, "  rule {}", r.name);
        }
        s.trim_end().to_string()
    }

    /// Whether a rule (or a ban's count filter) selects anonymous clients.
    pub fn needs_anonymous(&self) -> bool {
        self.rules.iter().any(|r| r.matcher.anonymous == Some(true))
            || self.zones.iter().any(|z| {
                z.count_filter()
                    .is_some_and(|f| f.matcher.anonymous == Some(true))
            })
    }

    /// What the client of `req` would have been told with verdict `v`, the last one this
    /// policy gave: the deciding zone (the refusing or delaying one, else the rule's
    /// first), its rate as `limit` and its state just after the decision. `None` for a
    /// request no rule limited, a key the request lacks, or a stick table.
    /// Without `full` only the `Retry-After` is sure to be computed.
    pub fn client_view(
        &self,
        v: &Verdict,
        req: &Request<'_>,
        full: bool,
    ) -> Option<(&LimitSpec, ClientView)> {
        let rule = v.rule.and_then(|r| self.rules.get(r as usize))?;
        let lim = match v.zone {
            Some(z) => rule.limits.iter().find(|l| l.zone == z).copied(),
            None => rule.limits.first().copied(),
        }?;
        let zone = self.zones.get(lim.zone as usize)?;
        let mut key = Vec::new();
        if !zone.spec().key.extract(req, &mut key) {
            return None;
        }
        let cost = zone.spec().cost.of(req).unwrap_or(1);
        let now = zone.clock(req, self.now);
        zone.client_view(now, &key, cost, &lim.nginx, full)
            .map(|c| (zone.spec(), c))
    }

    /// Requests judged although they named exempt credentials, because the server
    /// refused those credentials (their status is a credential refusal).
    pub fn credentials_refused(&self) -> u64 {
        self.credentials_refused
    }

    /// Judges one request at `now` (ms), charging the zones it passes.
    pub(crate) fn decide(&mut self, req: &Request<'_>, now: i64) -> Verdict {
        self.now = now;
        let v = self.judge(req, now);
        if !matches!(v.decision, Decision::Exempt | Decision::OutOfScope)
            && (self.exempt.refused_credentials(req)
                || v.rule
                    .and_then(|r| self.rules.get(r as usize))
                    .is_some_and(|r| r.exempt.refused_credentials(req)))
        {
            self.credentials_refused += 1;
        }
        v
    }

    fn judge(&mut self, req: &Request<'_>, now: i64) -> Verdict {
        if let Some(p) = &self.program {
            if exempt(&self.exempt, req) {
                return Verdict {
                    decision: Decision::Exempt,
                    ..Verdict::OUT_OF_SCOPE
                };
            }
            return p.decide(req, now, &mut self.zones, &mut self.scratch);
        }
        self.challenge = false;
        let mut v = match self.dialect {
            Dialect::Nginx => self.decide_nginx(req, now),
            Dialect::Caddy => self.decide_caddy(req, now),
        };
        v.boundary = std::mem::take(&mut self.boundary);
        if std::mem::take(&mut self.challenge) && v.decision == Decision::Admit {
            v.decision = Decision::Challenge;
        }
        v
    }

    fn decide_nginx(&mut self, req: &Request<'_>, now: i64) -> Verdict {
        let Some(ri) = self
            .rules
            .iter()
            .position(|r| r.match_all || r.matcher.matches(req))
        else {
            return Verdict::OUT_OF_SCOPE;
        };
        let rule = &self.rules[ri];
        let rid = Some(ri as RuleId);
        if exempt(&self.exempt, req) || exempt(&rule.exempt, req) {
            for lim in &rule.limits {
                let z = &mut self.zones[lim.zone as usize];
                let now = z.clock(req, now);
                z.note_line(now);
            }
            return Verdict {
                decision: Decision::Exempt,
                zone: None,
                rule: rid,
                boundary: false,
            };
        }
        let nl = rule.limits.len();
        self.pending.clear();
        let mut last: Option<(usize, u32)> = None;
        for (i, lim) in rule.limits.iter().enumerate() {
            let zone = &mut self.zones[lim.zone as usize];
            if !zone.spec().key.extract(req, &mut self.key) {
                zone.counters.skipped += 1;
                let now = zone.clock(req, now);
                zone.note_line(now);
                continue;
            }
            let cost = cost_of(zone, req);
            zone.counters.checked += 1;
            let now = zone.clock(req, now);
            let r = zone.lookup(now, &self.key, cost, &lim.nginx, i + 1 == nl);
            self.boundary |= std::mem::take(&mut zone.boundary);
            self.challenge |= std::mem::take(&mut zone.challenged);
            match r {
                Lookup::Busy => {
                    zone.counters.refused += 1;
                    for &(j, _) in &self.pending {
                        let z = rule.limits[j as usize].zone;
                        self.zones[z as usize].release();
                    }
                    return Verdict {
                        decision: Decision::Refuse,
                        zone: Some(lim.zone),
                        rule: rid,
                        boundary: false,
                    };
                }
                Lookup::Admit(d) => {
                    zone.counters.cost_charged = zone.counters.cost_charged.saturating_add(cost);
                    last = Some((i, d));
                }
                Lookup::Pending => self.pending.push((i as u16, cost)),
            }
        }
        if last.is_none() && self.pending.is_empty() {
            // Every key was empty: nginx declines, limit_req does not apply.
            return Verdict {
                decision: Decision::OutOfScope,
                zone: None,
                rule: rid,
                boundary: false,
            };
        }
        let (mut max_delay, mut limiting) = match last {
            Some((i, d)) => (d, i),
            None => (0, nl - 1),
        };
        for &(j, cost) in self.pending.iter().rev() {
            let lim = &rule.limits[j as usize];
            let zone = &mut self.zones[lim.zone as usize];
            let at = zone.clock(req, now);
            let d = zone.account(at, cost, &lim.nginx);
            self.challenge |= std::mem::take(&mut zone.challenged);
            zone.counters.cost_charged = zone.counters.cost_charged.saturating_add(cost);
            if d > max_delay {
                max_delay = d;
                limiting = j as usize;
            }
        }
        // Tally passes and delays per zone.
        if let Some((i, d)) = last {
            let z = &mut self.zones[rule.limits[i].zone as usize].counters;
            z.passed += 1;
            z.delayed += u64::from(d > 0);
        }
        for &(j, _) in &self.pending {
            let z = &mut self.zones[rule.limits[j as usize].zone as usize].counters;
            z.passed += 1;
        }
        if max_delay > 0 {
            let z = rule.limits[limiting].zone;
            if last.is_none_or(|(i, _)| i != limiting) {
                self.zones[z as usize].counters.delayed += 1;
            }
            Verdict {
                decision: Decision::Delay(max_delay),
                zone: Some(z),
                rule: rid,
                boundary: false,
            }
        } else {
            Verdict {
                decision: Decision::Admit,
                zone: None,
                rule: rid,
                boundary: false,
            }
        }
    }

    fn decide_caddy(&mut self, req: &Request<'_>, now: i64) -> Verdict {
        self.plan.clear();
        let mut first_rule: Option<RuleId> = None;
        let mut exempted: Option<RuleId> = None;
        for (ri, rule) in self.rules.iter().enumerate() {
            if !(rule.match_all || rule.matcher.matches(req)) {
                continue;
            }
            if exempt(&rule.exempt, req) {
                exempted.get_or_insert(ri as RuleId);
                continue;
            }
            first_rule.get_or_insert(ri as RuleId);
            for li in 0..rule.limits.len() {
                self.plan.push((ri as u16, li as u16));
            }
        }
        if first_rule.is_none() {
            return match exempted {
                Some(r) => Verdict {
                    decision: Decision::Exempt,
                    zone: None,
                    rule: Some(r),
                    boundary: false,
                },
                None => Verdict::OUT_OF_SCOPE,
            };
        }
        if exempt(&self.exempt, req) {
            return Verdict {
                decision: Decision::Exempt,
                zone: None,
                rule: first_rule,
                boundary: false,
            };
        }
        if self.plan.len() > 1 {
            let (rules, rank) = (&self.rules, &self.rank);
            self.plan.sort_by_key(|&(r, l)| {
                let z = rules[r as usize].limits[l as usize].zone;
                rank[z as usize]
            });
        }
        let mut any = false;
        let mut max_delay = 0u32;
        let mut limiting: Option<(RuleId, ZoneId)> = None;
        for &(ri, li) in &self.plan {
            let lim = self.rules[ri as usize].limits[li as usize];
            let zone = &mut self.zones[lim.zone as usize];
            if !zone.spec().key.extract(req, &mut self.key) {
                zone.counters.skipped += 1;
                continue;
            }
            any = true;
            let cost = cost_of(zone, req);
            zone.counters.checked += 1;
            let r = zone.lookup(now, &self.key, cost, &lim.nginx, true);
            self.boundary |= std::mem::take(&mut zone.boundary);
            self.challenge |= std::mem::take(&mut zone.challenged);
            match r {
                Lookup::Busy => {
                    zone.counters.refused += 1;
                    return Verdict {
                        decision: Decision::Refuse,
                        zone: Some(lim.zone),
                        rule: Some(ri),
                        boundary: false,
                    };
                }
                Lookup::Admit(d) => {
                    zone.counters.passed += 1;
                    zone.counters.cost_charged = zone.counters.cost_charged.saturating_add(cost);
                    if d > 0 {
                        zone.counters.delayed += 1;
                    }
                    if d > max_delay {
                        max_delay = d;
                        limiting = Some((ri, lim.zone));
                    }
                }
                Lookup::Pending => unreachable!("lookups with account never pend"),
            }
        }
        if !any {
            return Verdict {
                decision: Decision::OutOfScope,
                zone: None,
                rule: first_rule,
                boundary: false,
            };
        }
        match limiting {
            Some((r, z)) => Verdict {
                decision: Decision::Delay(max_delay),
                zone: Some(z),
                rule: Some(r),
                boundary: false,
            },
            None => Verdict {
                decision: Decision::Admit,
                zone: None,
                rule: first_rule,
                boundary: false,
            },
        }
    }
}

#[inline]
fn exempt(e: &Exempt, req: &Request<'_>) -> bool {
    !e.is_empty() && e.covers(req)
}

#[inline]
fn cost_of(zone: &mut Zone, req: &Request<'_>) -> u64 {
    if !zone.counts(req) {
        return 0;
    }
    match zone.spec().cost.of(req) {
        Some(c) => c,
        None => {
            zone.counters.cost_missing += 1;
            0
        }
    }
}
