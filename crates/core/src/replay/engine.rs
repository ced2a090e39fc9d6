//! The replay driver: feeds requests in decision-time order through several candidate
//! policies in one pass and returns, per request, one verdict per candidate.

// Re-exported for the report modules that still name them through `engine`.
pub(crate) use super::decision::{Decision, Verdict};
use super::policy::Policy;
use super::request::Request;
use super::shard::ShardFilter;
use super::spec::SpecError;

/// Tallies of one candidate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Requests fed.
    pub requests: u64,
    /// Requests a rule limited (admitted + delayed + refused + challenged).
    pub in_scope: u64,
    /// Passed at once.
    pub admitted: u64,
    /// Passed after a delay.
    pub delayed: u64,
    /// Refused.
    pub refused: u64,
    /// Covered but exempt.
    pub exempt: u64,
    /// Not covered.
    pub out_of_scope: u64,
    /// Sum of delays, ms.
    pub delay_ms_total: u64,
    /// Longest delay, ms.
    pub delay_ms_max: u32,
    /// Decisions on a 1 ms boundary ([`Verdict::boundary`]).
    pub boundary: u64,
    /// Passed but challenged (ban policies' `challenge=`).
    pub challenged: u64,
}

impl Counters {
    #[inline]
    fn add(&mut self, d: Decision) {
        self.requests += 1;
        match d {
            Decision::OutOfScope => self.out_of_scope += 1,
            Decision::Exempt => self.exempt += 1,
            Decision::Admit => {
                self.in_scope += 1;
                self.admitted += 1;
            }
            Decision::Delay(ms) => {
                self.in_scope += 1;
                self.delayed += 1;
                self.delay_ms_total += u64::from(ms);
                self.delay_ms_max = self.delay_ms_max.max(ms);
            }
            Decision::Refuse => {
                self.in_scope += 1;
                self.refused += 1;
            }
            Decision::Challenge => {
                self.in_scope += 1;
                self.challenged += 1;
            }
        }
    }
}

/// Several candidates replayed in one pass.
///
/// ```
/// use logscope_core::replay::{Decision, Replay, Request};
///
/// let mut replay = Replay::from_specs(&["2/s", "1/s,algo=token-bucket,burst=1,key=ip"]).unwrap();
/// let ip = "192.0.2.1".parse().ok();
/// let mut refused = [0, 0];
/// for (i, t) in [0, 10, 20].into_iter().enumerate() {
///     let req = Request { index: i as u64, arrival_ms: 1_700_000_000_000 + t, ip, ..Default::default() };
///     for (c, v) in replay.decide(&req).iter().enumerate() {
///         if v.decision == Decision::Refuse { refused[c] += 1; }
///     }
/// }
/// assert_eq!(refused, [1, 2]);
/// assert_eq!(replay.counters()[1].refused, 2);
/// ```
pub struct Replay {
    policies: Vec<Policy>,
    counters: Vec<Counters>,
    out: Vec<Verdict>,
    clock: i64,
    out_of_order: u64,
    shard: Option<ShardFilter>,
}

impl Replay {
    /// A replay of these candidates, in this order (verdicts come in the same order).
    pub fn new(policies: Vec<Policy>) -> Replay {
        let n = policies.len();
        Replay {
            policies,
            counters: vec![Counters::default(); n],
            out: vec![Verdict::default(); n],
            clock: i64::MIN,
            out_of_order: 0,
            shard: None,
        }
    }

    /// A replay of one candidate per spec string.
    pub fn from_specs<S: AsRef<str>>(specs: &[S]) -> Result<Replay, SpecError> {
        let ps = specs
            .iter()
            .map(|s| Policy::from_spec(s.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Replay::new(ps))
    }

    /// Judges one request under every candidate and returns the verdicts, one per
    /// candidate. Requests must come in decision-time order (see
    /// [`super::ReplayOrder`]); one that goes back in time is judged at the latest time
    /// seen so far and counted by [`Replay::out_of_order`].
    #[inline]
    pub fn decide(&mut self, req: &Request<'_>) -> &[Verdict] {
        let mut now = req.arrival_ms;
        if now < self.clock {
            self.out_of_order += 1;
            now = self.clock;
        } else {
            self.clock = now;
        }
        for (i, ((p, c), o)) in self
            .policies
            .iter_mut()
            .zip(self.counters.iter_mut())
            .zip(self.out.iter_mut())
            .enumerate()
        {
            if let Some(f) = &mut self.shard
                && !f.admits(i, req)
            {
                // Another shard's key (`--keys K/N`): not fed, not counted.
                *o = Verdict::OUT_OF_SCOPE;
                continue;
            }
            // Written in place and read back field by field: a copy of the whole
            // verdict just written field by field would wait for the stores.
            *o = p.decide(req, now);
            c.add(o.decision);
            c.boundary += u64::from(o.boundary);
        }
        &self.out
    }

    /// The verdicts of the last request [`Replay::decide`] judged, one per candidate.
    pub fn verdicts(&self) -> &[Verdict] {
        &self.out
    }

    /// Tallies per candidate, in candidate order.
    pub fn counters(&self) -> &[Counters] {
        &self.counters
    }

    /// The candidates (their zones carry per-zone tallies and key counts).
    pub fn policies(&self) -> &[Policy] {
        &self.policies
    }

    /// Requests that arrived earlier than one already judged.
    pub fn out_of_order(&self) -> u64 {
        self.out_of_order
    }

    /// Replays, for each candidate, only the requests whose key is in `filter`'s shard
    /// (`--keys K/N`, see [`super::Shard`]); the others get [`Verdict::OUT_OF_SCOPE`]
    /// and are not counted.
    pub fn set_shard(&mut self, filter: ShardFilter) {
        self.shard = Some(filter);
    }

    /// The shard filter, if any (its per-candidate counts of requests left out).
    pub fn shard(&self) -> Option<&ShardFilter> {
        self.shard.as_ref()
    }

    /// Hands the candidates back.
    pub fn into_policies(self) -> Vec<Policy> {
        self.policies
    }
}
