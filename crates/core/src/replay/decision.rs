//! What a candidate did with one request: the [`Decision`], the [`Verdict`] that carries
//! its cause (zone, rule), and the [`ZoneId`] and [`RuleId`] naming a zone and a rule. Shared by the engine, the
//! policies that decide and the report that tallies, so none of them imports another.

/// Index of a zone inside its policy.
pub type ZoneId = u16;

/// Index of a rule inside its policy.
pub type RuleId = u16;

/// What a candidate would have done with one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Decision {
    /// No rule of the candidate covers the request (or every key was empty).
    #[default]
    OutOfScope,
    /// Covered, but exempt (CIDR, agent, identity); not counted.
    Exempt,
    /// Passed at once.
    Admit,
    /// Passed after waiting this many ms (nginx without `nodelay`, leaky queue).
    Delay(u32),
    /// Refused.
    Refuse,
    /// Passed, but challenged (a ban policy's softer class, `challenge=`): over the
    /// challenge rate, under the ban threshold.
    Challenge,
}

impl Decision {
    /// Whether the candidate limited this request in any way (covered, not exempt).
    pub fn in_scope(&self) -> bool {
        matches!(
            self,
            Decision::Admit | Decision::Delay(_) | Decision::Refuse | Decision::Challenge
        )
    }

    /// Whether the request got through (admitted, delayed, exempt or out of scope).
    pub fn passed(&self) -> bool {
        !matches!(self, Decision::Refuse)
    }

    /// A short word: `out-of-scope`, `exempt`, `admit`, `delay`, `refuse`, `challenge`.
    pub fn word(&self) -> &'static str {
        match self {
            Decision::OutOfScope => "out-of-scope",
            Decision::Exempt => "exempt",
            Decision::Admit => "admit",
            Decision::Delay(_) => "delay",
            Decision::Refuse => "refuse",
            Decision::Challenge => "challenge",
        }
    }
}

/// A decision with what caused it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Verdict {
    /// The decision.
    pub decision: Decision,
    /// The zone that refused, or that imposed the (largest) delay.
    pub zone: Option<ZoneId>,
    /// The rule that applied (nginx: the location; Caddy: the refusing or delaying
    /// zone's rule, else the first that matched).
    pub rule: Option<RuleId>,
    /// nginx zones: the admit/refuse decision would flip if the interval since the key's
    /// last accepted request were 1 ms longer or shorter. nginx measures that interval
    /// on its monotonic clock while the log is stamped from the wall clock, so these are
    /// the decisions a replay can get wrong (about 1 in 7 of them on the oracle's
    /// natural-clock run); everything else replays exactly.
    pub boundary: bool,
}

impl Verdict {
    /// Not covered by any rule.
    pub const OUT_OF_SCOPE: Verdict = Verdict {
        decision: Decision::OutOfScope,
        zone: None,
        rule: None,
        boundary: false,
    };
}
