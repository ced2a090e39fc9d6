//! A batch's rows tallied per bucket where the batch is decoded ([`HeavyPart`]), and
//! their addition to the report ([`HeavyAcc::add_part`]): one update of a bucket per
//! distinct client, prefix and agent value instead of one per row.

use rustc_hash::FxHashMap;

use super::HeavyAcc;
use crate::batch::{Batch, NULL_CODE};
use crate::classify::agent::NO_AGENT;
use crate::classify::{AgentId, ClientKey, HeavyClass};
use crate::time::align;

/// No key yet.
const UNSET: u32 = u32::MAX;

/// What a [`HeavyPart`] is worked out for: the report's buckets and capacity window
/// (local ms), prefix lengths and period (UTC ms, half-open, either end open).
#[derive(Clone, Copy, Debug)]
pub struct PartSpec {
    /// Bucket width.
    pub width_ms: i64,
    /// The capacity's window, when the report has a capacity.
    pub window_ms: Option<i64>,
    /// IPv4 prefix length.
    pub v4_len: u8,
    /// IPv6 prefix length.
    pub v6_len: u8,
    /// First instant of the period.
    pub since: Option<i64>,
    /// End of the period (excluded).
    pub until: Option<i64>,
}

/// A run of a batch's rows in one bucket.
#[derive(Clone, Copy, Debug)]
struct Seg {
    /// The bucket's start (local ms) and the offset of its first row.
    start: i64,
    offset_ms: i64,
    /// The run's first row in the batch.
    first_row: u32,
    requests: u64,
    heavy: u64,
    /// Where the run's clients, prefixes and agents end in the part's lists (each
    /// run's follow the previous run's).
    ends: (u32, u32, u32),
}

/// The tallies of one batch's rows, worked out on the thread that decoded the batch:
/// per run of rows in one bucket, its requests and heavy requests, the distinct clients
/// of the heavy ones, their rows per prefix and per User-Agent slot; the heavy rows per
/// class and per capacity window. Rows without an address (host names) are left to the
/// caller ([`HeavyPart::rest`]), which classifies them as any row. Valid for a
/// selection that keeps every row of its period and takes the client from the logged
/// address (no trusted proxies).
#[derive(Debug, Default)]
pub struct HeavyPart {
    segs: Vec<Seg>,
    clients: Vec<ClientKey>,
    prefixes: Vec<(ClientKey, u64)>,
    /// User-Agent slot ([`NULL_CODE`]: none) and heavy rows.
    agents: Vec<(u32, u64)>,
    /// Heavy rows per class id.
    classes: Vec<u64>,
    /// Heavy rows per capacity window (local start), a window once per run of rows.
    windows: Vec<(i64, u64)>,
    /// Rows in the period without an address, in row order, for the caller.
    pub rest: Vec<u32>,
}

/// The distinct clients and prefixes of a batch, and the run each was last counted in.
#[derive(Default)]
struct Keys {
    /// Per client: its key, its prefix's index and the stamp of the last run it was in.
    clients: Vec<(ClientKey, u32, u32)>,
    /// Per prefix: its key, the stamp of the last run it was in and its rows in it.
    prefixes: Vec<(ClientKey, u32, u64)>,
    prefix_of: FxHashMap<ClientKey, u32>,
}

impl Keys {
    /// A new client of address `ip`.
    fn add(&mut self, ip: std::net::IpAddr, spec: &PartSpec) -> u32 {
        let p = ClientKey::prefix(ip, spec.v4_len, spec.v6_len);
        let n = self.prefixes.len() as u32;
        let pi = *self.prefix_of.entry(p).or_insert(n);
        if pi == n {
            self.prefixes.push((p, 0, 0));
        }
        self.clients.push((ClientKey::addr(ip), pi, 0));
        (self.clients.len() - 1) as u32
    }
}

/// The run of rows being tallied: its sums, and where each client, prefix and
/// User-Agent slot was last counted (`stamp` numbers the runs).
#[derive(Default)]
struct Run {
    stamp: u32,
    requests: u64,
    heavy: u64,
    keys: Keys,
    /// Per User-Agent slot (the last: null): the stamp of its run and its rows.
    agents: Vec<(u32, u64)>,
    touched_prefixes: Vec<u32>,
    touched_agents: Vec<u32>,
}

impl Run {
    /// Counts a heavy row of client `k` and User-Agent slot `a` (the last: null).
    #[inline]
    fn add(&mut self, part: &mut HeavyPart, k: u32, a: usize) {
        let stamp = self.stamp;
        let client = &mut self.keys.clients[k as usize];
        if client.2 != stamp {
            client.2 = stamp;
            part.clients.push(client.0);
        }
        let p = client.1;
        let prefix = &mut self.keys.prefixes[p as usize];
        if prefix.1 != stamp {
            *prefix = (prefix.0, stamp, 0);
            self.touched_prefixes.push(p);
        }
        prefix.2 += 1;
        let agent = &mut self.agents[a];
        if agent.0 != stamp {
            *agent = (stamp, 0);
            self.touched_agents.push(a as u32);
        }
        agent.1 += 1;
    }

    /// Ends the run: its sums, and its prefixes' and agents' rows into `part`'s lists.
    fn close(&mut self, part: &mut HeavyPart) {
        let Some(seg) = part.segs.last_mut() else {
            return;
        };
        (seg.requests, seg.heavy) = (self.requests, self.heavy);
        (self.requests, self.heavy) = (0, 0);
        let null = self.agents.len() - 1;
        for p in self.touched_prefixes.drain(..) {
            let (k, _, rows) = self.keys.prefixes[p as usize];
            part.prefixes.push((k, rows));
        }
        for a in self.touched_agents.drain(..) {
            let slot = if a as usize == null { NULL_CODE } else { a };
            part.agents.push((slot, self.agents[a as usize].1));
        }
        seg.ends = (
            part.clients.len() as u32,
            part.prefixes.len() as u32,
            part.agents.len() as u32,
        );
    }
}

impl HeavyPart {
    /// Tallies the rows of `b` in `spec`'s period, `heavy` their classes and `local`
    /// the report's clock (UTC ms → local ms). `None` where the batch's addresses or
    /// User-Agents are not coded (the caller goes row by row).
    pub fn of(
        b: &Batch,
        heavy: &[HeavyClass],
        spec: &PartSpec,
        mut local: impl FnMut(i64) -> i64,
    ) -> Option<HeavyPart> {
        let n = b.len();
        let ips = b.ip_codes.as_ref().filter(|c| c.codes.len() == n)?;
        let ua = b.user_agent.codes().filter(|c| c.len() == n)?;
        if heavy.len() != n || b.ts_ms.len() != n || b.ip.len() != n {
            return None;
        }
        let nua = b.user_agent.slots();
        let w = spec.width_ms.max(1);
        let mut part = HeavyPart::default();
        let mut run = Run {
            agents: vec![(0, 0); nua + 1],
            ..Run::default()
        };
        let mut key_of_code = vec![UNSET; ips.slots];
        let mut key_of_other: FxHashMap<ClientKey, u32> = FxHashMap::default();
        // The open run's bucket, [lo, hi) in local ms (none yet: empty).
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        let bounded = spec.since.is_some() || spec.until.is_some();
        for i in 0..n {
            let ts = b.ts_ms[i];
            if bounded
                && (spec.since.is_some_and(|s| ts < s) || spec.until.is_some_and(|u| ts >= u))
            {
                continue;
            }
            if b.ip[i].is_none() {
                part.rest.push(i as u32);
                continue;
            }
            let l = local(ts);
            if !(lo <= l && l < hi) {
                run.close(&mut part);
                let s = align(l, w);
                (lo, hi) = (s, s.saturating_add(w));
                run.stamp += 1;
                part.segs.push(Seg {
                    start: s,
                    offset_ms: l - ts,
                    first_row: i as u32,
                    requests: 0,
                    heavy: 0,
                    ends: (0, 0, 0),
                });
            }
            run.requests += 1;
            let h = heavy[i];
            if !h.is_heavy() {
                continue;
            }
            run.heavy += 1;
            let c = usize::from(h.0);
            if c >= part.classes.len() {
                part.classes.resize(c + 1, 0);
            }
            part.classes[c] += 1;
            if let Some(cw) = spec.window_ms {
                let ws = align(l, cw);
                match part.windows.last_mut() {
                    Some((s, k)) if *s == ws => *k += 1,
                    _ => part.windows.push((ws, 1)),
                }
            }
            // The client: by its code, the address read only for a code's first row.
            let k = match key_of_code.get_mut(ips.codes[i] as usize) {
                Some(k) if *k != UNSET => *k,
                coded => {
                    let Some(ip) = b.ip[i] else {
                        continue;
                    };
                    match coded {
                        Some(k) => {
                            *k = run.keys.add(ip, spec);
                            *k
                        }
                        None => *key_of_other
                            .entry(ClientKey::addr(ip))
                            .or_insert_with(|| run.keys.add(ip, spec)),
                    }
                }
            };
            run.add(&mut part, k, (ua[i] as usize).min(nua));
        }
        run.close(&mut part);
        Some(part)
    }

    /// The agent class of each of the part's User-Agent entries, in order, by
    /// `agent_of(slot)` (`None`: no User-Agent).
    pub fn agent_ids(&self, mut agent_of: impl FnMut(Option<u32>) -> AgentId) -> Vec<AgentId> {
        self.agents
            .iter()
            .map(|&(slot, _)| agent_of((slot != NULL_CODE).then_some(slot)))
            .collect()
    }
}

impl HeavyAcc {
    /// Adds a batch's [`HeavyPart`], `agent_ids` its [`HeavyPart::agent_ids`], and its
    /// rows without an address by `rest(acc, row)` (in row order among the part's runs,
    /// so that a bucket is opened by the same row as when every row is added).
    pub fn add_part(
        &mut self,
        part: &HeavyPart,
        agent_ids: &[AgentId],
        mut rest: impl FnMut(&mut HeavyAcc, u32),
    ) {
        let mut rest_rows = part.rest.iter().copied().peekable();
        let (mut c0, mut p0, mut a0) = (0usize, 0usize, 0usize);
        for seg in &part.segs {
            while let Some(i) = rest_rows.next_if(|&i| i < seg.first_row) {
                rest(self, i);
            }
            let (c1, p1, a1) = (
                seg.ends.0 as usize,
                seg.ends.1 as usize,
                seg.ends.2 as usize,
            );
            self.requests += seg.requests;
            self.heavy += seg.heavy;
            // A part's buckets are the width or (automatic width) a width it is a
            // multiple of: the run lies in one bucket of the width.
            self.note(seg.start);
            let w = self.width_ms;
            let b = self.bucket(align(seg.start, w), seg.offset_ms);
            b.requests += seg.requests;
            b.heavy += seg.heavy;
            b.ips.extend(part.clients[c0..c1].iter().copied());
            for &(k, rows) in &part.prefixes[p0..p1] {
                *b.prefixes.entry(k).or_default() += rows;
            }
            for (j, &(_, rows)) in part.agents.iter().enumerate().take(a1).skip(a0) {
                let id = agent_ids.get(j).copied().unwrap_or(NO_AGENT);
                *b.agents.entry(id).or_default() += rows;
            }
            (c0, p0, a0) = (c1, p1, a1);
        }
        for i in rest_rows {
            rest(self, i);
        }
        if part.classes.len() > self.classes.len() {
            self.classes.resize(part.classes.len(), 0);
        }
        for (total, n) in self.classes.iter_mut().zip(&part.classes) {
            *total += n;
        }
        if self.capacity.is_some() {
            for &(ws, rows) in &part.windows {
                *self.windows.entry(ws).or_default() += rows;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::{AUTO_MAX_BUCKETS, AUTO_WIDTHS};
    use super::*;
    use crate::batch::IpCodes;
    use crate::classify::{Classifier, heavy_classes};
    use crate::rate::Rate;
    use crate::record::Record;

    const QUERIES: [Option<&str>; 5] = [
        None,
        Some("title=A&diff=2"),
        Some("title=Special:Search&search=x"),
        Some("title=B"),
        Some("action=history"),
    ];
    const AGENTS: [Option<&str>; 3] = [None, Some("curl/8"), Some("Googlebot/2.1")];

    proptest! {
        /// Tallying batches where they are decoded ([`HeavyPart`], host names left to
        /// the caller) gives the report of adding their rows one by one, byte for byte:
        /// rows out of time order, a clock with an offset that changes inside a bucket,
        /// addresses with and without codes, a period and a capacity.
        #[test]
        fn parts_give_the_row_by_row_report(
            rows in prop::collection::vec(
                (0u16..400, 0usize..5, 0usize..3, 0i64..30_000_000),
                1..1200,
            ),
            width in prop::sample::select(vec![60_000i64, 600_000, 3_600_000, 86_400_000]),
            capacity in any::<bool>(),
            coded_ua in any::<bool>(),
            cut in 0usize..1200,
            period in prop::option::of((0i64..10_000_000, 10_000_000i64..30_000_001)),
        ) {
            // Offsets that change at 5 h, inside a bucket of a day (a clock turned back).
            let local = |t: i64| if t < 18_000_000 { t + 3_600_000 } else { t };
            let batch_of = |rows: &[(u16, usize, usize, i64)]| {
                let mut b = Batch::default();
                let owned: Vec<String> = rows
                    .iter()
                    .map(|&(c, ..)| match c % 40 {
                        0 => format!("host{}.example", c % 3),
                        1 => format!("2001:db8:{c:x}::1"),
                        _ => format!("10.{}.{}.7", c % 5, c),
                    })
                    .collect();
                for (n, (&(_, q, a, t), ip)) in rows.iter().zip(&owned).enumerate() {
                    b.push(&Record {
                        ts_ms: t,
                        client: ip.as_bytes(),
                        ip: ip.parse().ok(),
                        method: Some(b"GET"),
                        path: Some(b"/w/index.php"),
                        query: QUERIES[q].map(str::as_bytes),
                        user_agent: AGENTS[a].map(str::as_bytes),
                        ..Record::default()
                    }, n as u64);
                }
                if coded_ua {
                    b.code_text();
                }
                b.ip_codes = Some(IpCodes::for_test(&owned));
                b
            };
            let cut = cut.min(rows.len());
            let batches = [batch_of(&rows[..cut]), batch_of(&rows[cut..])];
            let (since, until) = period.map_or((None, None), |(s, u)| (Some(s), Some(u)));
            let cap = capacity.then(|| Rate::new(3, 300_000).unwrap());
            let in_period = |t: i64| since.is_none_or(|s| t >= s) && until.is_none_or(|u| t < u);
            let mut cls = Classifier::default();
            let mut plain = HeavyAcc::new(width, cap);
            for b in &batches {
                for i in 0..b.len() {
                    let t = b.ts_ms[i];
                    if in_period(t) {
                        let rc = cls.classify(b, i);
                        plain.add(t, local(t), &rc);
                    }
                }
            }
            let spec = PartSpec {
                width_ms: width,
                window_ms: cap.map(|c| c.window_ms() as i64),
                v4_len: cls.v4_len,
                v6_len: cls.v6_len,
                since,
                until,
            };
            let mut tallied = HeavyAcc::new(width, cap);
            let mut parts = 0;
            for b in &batches {
                let heavy = heavy_classes(cls.heavy_rules(), b);
                let Some(part) = HeavyPart::of(b, &heavy, &spec, local) else {
                    prop_assert!(!coded_ua, "only an uncoded batch has no part");
                    for i in 0..b.len() {
                        let t = b.ts_ms[i];
                        if in_period(t) {
                            let rc = cls.classify(b, i);
                            tallied.add(t, local(t), &rc);
                        }
                    }
                    continue;
                };
                parts += 1;
                let mut bc = cls.batch_with(b, Some(&heavy));
                let ids = part.agent_ids(|slot| bc.agent_of_code(&mut cls, slot));
                tallied.add_part(&part, &ids, |acc, i| {
                    let rc = bc.classify(&mut cls, i as usize);
                    let t = b.ts_ms[i as usize];
                    acc.add(t, local(t), &rc);
                });
                cls.end_batch(bc);
            }
            prop_assert!(!coded_ua || parts == 2);
            let report = |acc: HeavyAcc| {
                serde_json::to_string(&acc.finish(&cls, "UTC", "all", "test")).unwrap()
            };
            prop_assert_eq!(report(plain), report(tallied));
        }
    }

    /// A batch of `rows` (client, query, agent, time) with coded addresses, and coded
    /// User-Agents when `coded_ua`.
    fn batch_of(rows: &[(u16, usize, usize, i64)], coded_ua: bool) -> Batch {
        let mut b = Batch::default();
        let owned: Vec<String> = rows
            .iter()
            .map(|&(c, ..)| match c % 40 {
                0 => format!("host{}.example", c % 3),
                1 => format!("2001:db8:{c:x}::1"),
                _ => format!("10.{}.{}.7", c % 5, c),
            })
            .collect();
        for (n, (&(_, q, a, t), ip)) in rows.iter().zip(&owned).enumerate() {
            b.push(
                &Record {
                    ts_ms: t,
                    client: ip.as_bytes(),
                    ip: ip.parse().ok(),
                    method: Some(b"GET"),
                    path: Some(b"/w/index.php"),
                    query: QUERIES[q].map(str::as_bytes),
                    user_agent: AGENTS[a].map(str::as_bytes),
                    ..Record::default()
                },
                n as u64,
            );
        }
        if coded_ua {
            b.code_text();
        }
        b.ip_codes = Some(IpCodes::for_test(&owned));
        b
    }

    proptest! {
        /// An automatic width ([`HeavyAcc::auto`]) gives, byte for byte, the report of
        /// a fixed width at the width it chose — row by row or by parts, rows out of
        /// time order, a clock whose offset changes, spans from minutes to years, with
        /// and without a capacity (which sets the narrowest width) — and the width is
        /// [`super::super::auto_width`] of the rows' span.
        #[test]
        fn an_automatic_width_gives_the_report_of_the_width_it_chose(
            rows in prop::collection::vec(
                (0u16..400, 0usize..5, 0usize..3, 0i64..30_000_000),
                1..600,
            ),
            scale in prop::sample::select(vec![1i64, 3, 10, 100, 1000, 5000]),
            capacity in prop::sample::select(vec![None, Some(300_000u64), Some(3_600_000)]),
            coded_ua in any::<bool>(),
            cut in 0usize..600,
        ) {
            let rows: Vec<(u16, usize, usize, i64)> = rows
                .into_iter()
                .map(|(c, q, a, t)| (c, q, a, 1_700_000_000_000 + t * scale))
                .collect();
            let turn = 1_700_000_000_000 + 15_000_000 * scale;
            let local = move |t: i64| if t < turn { t + 3_600_000 } else { t };
            let cut = cut.min(rows.len());
            let batches = [batch_of(&rows[..cut], coded_ua), batch_of(&rows[cut..], coded_ua)];
            let cap = capacity.map(|w| Rate::new(3, w).unwrap());
            let mut cls = Classifier::default();
            let by_rows = |acc: &mut HeavyAcc, cls: &mut Classifier| {
                for b in &batches {
                    for i in 0..b.len() {
                        let rc = cls.classify(b, i);
                        acc.add(b.ts_ms[i], local(b.ts_ms[i]), &rc);
                    }
                }
            };
            let mut auto = HeavyAcc::auto(cap);
            by_rows(&mut auto, &mut cls);
            let width = auto.width_ms();
            let (lo, hi) = rows
                .iter()
                .map(|r| local(r.3))
                .fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
            prop_assert_eq!(width, super::super::auto_width(lo, hi, super::super::auto_floor(cap)));
            let mut fixed = HeavyAcc::new(width, cap);
            by_rows(&mut fixed, &mut cls);
            let spec = PartSpec {
                width_ms: super::super::auto_floor(cap),
                window_ms: cap.map(|c| c.window_ms() as i64),
                v4_len: cls.v4_len,
                v6_len: cls.v6_len,
                since: None,
                until: None,
            };
            let mut parted = HeavyAcc::auto(cap);
            for b in &batches {
                let heavy = heavy_classes(cls.heavy_rules(), b);
                let Some(part) = HeavyPart::of(b, &heavy, &spec, local) else {
                    for i in 0..b.len() {
                        let rc = cls.classify(b, i);
                        parted.add(b.ts_ms[i], local(b.ts_ms[i]), &rc);
                    }
                    continue;
                };
                let mut bc = cls.batch_with(b, Some(&heavy));
                let ids = part.agent_ids(|slot| bc.agent_of_code(&mut cls, slot));
                parted.add_part(&part, &ids, |acc, i| {
                    let rc = bc.classify(&mut cls, i as usize);
                    let t = b.ts_ms[i as usize];
                    acc.add(t, local(t), &rc);
                });
                cls.end_batch(bc);
            }
            let report = |acc: HeavyAcc| {
                let r = acc.finish(&cls, "UTC", "all", "test");
                prop_assert!(r.buckets.len() as i64 <= AUTO_MAX_BUCKETS || width == AUTO_WIDTHS[8]);
                Ok(serde_json::to_string(&r).unwrap())
            };
            let want = report(fixed)?;
            prop_assert_eq!(report(auto)?, want.clone());
            prop_assert_eq!(report(parted)?, want);
        }
    }
}
