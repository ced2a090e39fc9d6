//! `--decisions FILE`: one CSV row per request a candidate limited (admitted, delayed,
//! refused or challenged), in decision-time order, candidates in command-line order, with
//! what the client would have been told ([`crate::replay::ClientView`]: `limit` as
//! `N;w=SECONDS`, `remaining`, `reset_s`, and `retry_after_s` on a refusal). Every text
//! cell goes through [`csv_cell`] (control characters escaped, formulas defused).
//!
//! With a leading `seq` column ([`DecisionsWriter::with_seq`], `--decisions-seq`) each row
//! also says where it stands in one run's file: the request's place among every request
//! fed (decision order) × the number of candidates + the candidate's place. A `--keys`
//! shard is fed every request in that order too (it only leaves the other shards' keys
//! undecided), so the shards' rows merged by `seq` are one unsharded run's rows, in its
//! order — which the CSV's own columns cannot give (within a millisecond the order also
//! depends on the request time, a refusal in the log and the input's order).

use std::io::{self, Write};

use super::labels::utc_ms_label;
use super::rows::RowMeta;
use crate::escape::csv_cell;
use crate::replay::{Decision, Policy, Request, Verdict};

/// The CSV header.
pub const HEADER: &str = "file,line,arrival,candidate,key,decision,delay_ms,rule,zone,status,limit,remaining,reset_s,retry_after_s";

/// Writes the decisions CSV.
pub struct DecisionsWriter<W: Write> {
    out: W,
    names: Vec<String>,
    rows: u64,
    /// With the `seq` column: the place of the request being written among those fed.
    seq: Option<u64>,
}

impl<W: Write> DecisionsWriter<W> {
    /// A writer for candidates with these names; writes the header.
    pub fn new(out: W, names: Vec<String>) -> io::Result<Self> {
        Self::start(out, names, None)
    }

    /// A writer whose rows begin with `seq` (see the module); writes the header.
    pub fn with_seq(out: W, names: Vec<String>) -> io::Result<Self> {
        Self::start(out, names, Some(0))
    }

    fn start(mut out: W, names: Vec<String>, seq: Option<u64>) -> io::Result<Self> {
        if seq.is_some() {
            write!(out, "seq,")?;
        }
        writeln!(out, "{HEADER}")?;
        let names = names.iter().map(|n| csv_cell(n)).collect();
        Ok(DecisionsWriter {
            out,
            names,
            rows: 0,
            seq,
        })
    }

    /// Ends the rows of one request (every request fed, limited or not): the next
    /// rows' `seq` is that of the next request.
    pub(super) fn next_request(&mut self) {
        if let Some(s) = self.seq.as_mut() {
            *s += 1;
        }
    }

    /// Writes the row of candidate `c` for one request, if the candidate limited it.
    /// `file` is the input's name; the key is the one of the zone that decided (the
    /// refusing or delaying zone, else the rule's first).
    pub fn write(
        &mut self,
        file: &str,
        meta: &RowMeta,
        req: &Request<'_>,
        c: usize,
        policy: &Policy,
        v: &Verdict,
    ) -> io::Result<()> {
        let (word, delay) = match v.decision {
            Decision::Admit => ("admit", 0),
            Decision::Delay(ms) => ("delay", ms),
            Decision::Refuse => ("refuse", 0),
            Decision::Challenge => ("challenge", 0),
            _ => return Ok(()),
        };
        let rule = v.rule.and_then(|r| policy.rules().get(r as usize));
        let zone = v
            .zone
            .or_else(|| rule.and_then(|r| r.limits.first()).map(|l| l.zone))
            .and_then(|z| policy.zones().get(z as usize));
        let key = zone
            .and_then(|z| z.spec().key.display(req))
            .unwrap_or_default();
        let (limit, remaining, reset, retry) = match policy.client_view(v, req, true) {
            Some((spec, c)) => (
                limit_text(spec.rate.count(), spec.rate.window_ms()),
                c.remaining.to_string(),
                c.reset_s().to_string(),
                match (v.decision, c.retry_after_s()) {
                    (Decision::Refuse, Some(s)) => s.to_string(),
                    _ => String::new(),
                },
            ),
            None => Default::default(),
        };
        if let Some(s) = self.seq {
            write!(self.out, "{},", s * self.names.len() as u64 + c as u64)?;
        }
        writeln!(
            self.out,
            "{},{},{},{},{},{word},{delay},{},{},{},{limit},{remaining},{reset},{retry}",
            csv_cell(file),
            meta.line,
            utc_ms_label(meta.arrival_ms),
            self.names[c],
            csv_cell(&key),
            csv_cell(rule.map_or("", |r| r.name.as_str())),
            csv_cell(zone.map_or("", |z| z.name())),
            meta.status
        )?;
        self.rows += 1;
        Ok(())
    }

    /// Rows written (without the header).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Flushes and hands the writer back.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// `N;w=SECONDS`, as the IETF RateLimit-Policy header writes a quota.
pub fn limit_text(count: u64, window_ms: u64) -> String {
    if window_ms.is_multiple_of(1000) {
        format!("{count};w={}", window_ms / 1000)
    } else {
        format!("{count};w={}", crate::replay::milli_text(window_ms))
    }
}
