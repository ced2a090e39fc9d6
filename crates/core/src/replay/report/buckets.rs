//! The refusals-over-time buckets of the replay report, counted while the rows are fed
//! in decision-time order — also when their width is chosen from the span of the rows
//! ([`auto_bucket`]), which is known only after the last row.
//!
//! With an automatic width the rows are counted in buckets of the largest width that
//! every width still possible divides (the span so far only grows, so the possible
//! widths only shrink to larger ones: 5 minutes while 10 or 15 may still be chosen, a
//! day while 7 or 30 days may), and those are merged into wider ones as the span grows.
//! While the capacity window may still be the width (a span under 200 windows), a
//! second set is counted at that window. At most a few hundred buckets are held, and
//! the result is exactly that of counting at the final width from the start.

use std::collections::BTreeMap;

use super::model::TimeCell;
use super::options::{WIDTHS, auto_bucket};
use crate::rate::Rate;
use crate::time::align;

/// One bucket's counts.
#[derive(Default)]
pub(super) struct Bucket {
    /// The report clock's offset from UTC at the bucket's first row.
    pub(super) offset_ms: i64,
    /// Decision time (UTC ms) of the bucket's first row.
    first_ms: i64,
    pub(super) requests: u64,
    pub(super) cells: Vec<TimeCell>,
}

impl Bucket {
    /// Adds `b`'s counts; the offset stays that of the earlier first row.
    fn absorb(&mut self, b: Bucket) {
        if b.first_ms < self.first_ms {
            self.offset_ms = b.offset_ms;
            self.first_ms = b.first_ms;
        }
        self.requests += b.requests;
        for (o, n) in self.cells.iter_mut().zip(&b.cells) {
            o.covered += n.covered;
            o.refused += n.refused;
            o.passed += n.passed;
        }
    }
}

/// Buckets of one width, aligned on the report's clock; the one rows go to now is
/// kept aside (rows come in time order, so it changes seldom).
struct Layer {
    w: i64,
    map: BTreeMap<i64, Bucket>,
    cur: Option<(i64, Bucket)>,
}

impl Layer {
    fn new(w: i64) -> Layer {
        Layer {
            w: w.max(1),
            map: BTreeMap::new(),
            cur: None,
        }
    }

    #[inline]
    fn at(&mut self, local: i64, utc: i64, cands: usize) -> &mut Bucket {
        let start = align(local, self.w);
        if self.cur.as_ref().is_none_or(|(s, _)| *s != start) {
            self.close();
            let b = self.map.remove(&start).unwrap_or_else(|| Bucket {
                offset_ms: local - utc,
                first_ms: utc,
                requests: 0,
                cells: vec![TimeCell::default(); cands],
            });
            self.cur = Some((start, b));
        }
        &mut self.cur.as_mut().expect("set above").1
    }

    fn close(&mut self) {
        if let Some((s, b)) = self.cur.take() {
            merge(&mut self.map, s, b);
        }
    }

    /// The same counts in buckets of `w` (a multiple of the width).
    fn widen(&mut self, w: i64) {
        self.close();
        if w == self.w {
            return;
        }
        let mut wide = BTreeMap::new();
        for (s, b) in std::mem::take(&mut self.map) {
            merge(&mut wide, align(s, w), b);
        }
        self.map = wide;
        self.w = w;
    }
}

fn merge(map: &mut BTreeMap<i64, Bucket>, start: i64, b: Bucket) {
    match map.get_mut(&start) {
        None => {
            map.insert(start, b);
        }
        Some(old) => old.absorb(b),
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The refusals-over-time buckets: at a fixed width, or at the width [`auto_bucket`]
/// gives the span of the rows fed.
pub(super) struct TimeBuckets {
    /// Candidates (cells per bucket).
    cands: usize,
    /// `None`: a fixed width (the layer's).
    auto: Option<Auto>,
    layer: Layer,
    /// At the capacity window, while the span may still make it the width.
    window: Option<Layer>,
}

/// What an automatic width needs.
struct Auto {
    capacity: Option<Rate>,
    /// Decision time of the first row fed.
    first: Option<i64>,
    /// The span at which the possible widths change next.
    next: i64,
}

impl TimeBuckets {
    /// Buckets of `fixed` ms, or (`None`) of the width [`auto_bucket`] gives the span
    /// of the rows with `capacity`.
    pub(super) fn new(fixed: Option<i64>, capacity: Option<Rate>, cands: usize) -> TimeBuckets {
        match fixed {
            Some(w) => TimeBuckets {
                cands,
                auto: None,
                layer: Layer::new(w),
                window: None,
            },
            None => TimeBuckets {
                cands,
                auto: Some(Auto {
                    capacity,
                    first: None,
                    next: 0,
                }),
                layer: Layer::new(WIDTHS[0]),
                window: capacity.map(|c| Layer::new(c.window_ms() as i64)),
            },
        }
    }

    /// Counts one row at `local` on the report's clock (decision time `utc`; rows come
    /// in decision-time order): `f` adds it to its bucket.
    #[inline]
    pub(super) fn add(&mut self, local: i64, utc: i64, f: impl Fn(&mut Bucket)) {
        if let Some(a) = &mut self.auto {
            let first = *a.first.get_or_insert(utc);
            if utc - first >= a.next {
                self.span_grew(utc - first);
            }
        }
        f(self.layer.at(local, utc, self.cands));
        if let Some(l) = &mut self.window {
            f(l.at(local, utc, self.cands));
        }
    }

    /// The span reached `span`: widen the buckets to what every width still possible
    /// divides; drop the capacity window's once it can no longer be the width.
    #[cold]
    fn span_grew(&mut self, span: i64) {
        let Some(a) = &mut self.auto else { return };
        let i = WIDTHS
            .iter()
            .position(|&w| span / w < 48)
            .unwrap_or(WIDTHS.len() - 1);
        let g = WIDTHS[i..].iter().fold(0, |g, &w| gcd(w, g));
        let mut next = WIDTHS.get(i).map_or(i64::MAX, |&w| 48 * w);
        if i == WIDTHS.len() - 1 {
            next = i64::MAX;
        }
        match a.capacity.map(|c| c.window_ms() as i64) {
            Some(cw) if span / cw.max(1) < 200 => next = next.min(200 * cw.max(1)),
            _ => self.window = None,
        }
        a.next = next;
        if g != self.layer.w {
            self.layer.widen(g);
        }
    }

    /// The width and the buckets, for rows spanning `span` ms.
    pub(super) fn finish(mut self, span: i64) -> (i64, BTreeMap<i64, Bucket>) {
        let mut layer = match (&self.auto, self.window.take()) {
            (None, _) => self.layer,
            (Some(a), Some(window)) if auto_bucket(span, a.capacity) == window.w => window,
            (Some(a), _) => {
                let mut l = self.layer;
                l.widen(auto_bucket(span, a.capacity));
                l
            }
        };
        layer.close();
        (layer.w, layer.map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows at `times` (UTC ms, ascending) with a clock `off(t)` ms ahead of UTC.
    fn count(
        fixed: Option<i64>,
        cap: Option<Rate>,
        times: &[i64],
        off: &dyn Fn(i64) -> i64,
    ) -> (i64, Vec<(i64, i64, u64, u64)>) {
        let mut tb = TimeBuckets::new(fixed, cap, 1);
        for (k, &t) in times.iter().enumerate() {
            tb.add(t + off(t), t, |b| {
                b.requests += 1;
                b.cells[0].refused += (k % 3 == 0) as u64;
            });
        }
        let span = times.last().map_or(0, |l| l - times[0]);
        let (w, map) = tb.finish(span);
        (
            w,
            map.into_iter()
                .map(|(s, b)| (s, b.offset_ms, b.requests, b.cells[0].refused))
                .collect(),
        )
    }

    #[test]
    fn an_automatic_width_counts_as_the_final_width_from_the_start() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        // A clock that turns back an hour half way (local times repeat), or not.
        for case in 0..400 {
            let spans = [
                40_000,
                3_000_000,
                2_000_000,
                28_800_000,
                172_800_000,
                5i64 << 30,
                40i64 << 32,
            ];
            let span = spans[case % spans.len()] as u64;
            let mut t = 1_700_000_000_000 + rnd(86_400_000) as i64;
            let mut times = Vec::new();
            for _ in 0..(1 + rnd(300)) {
                times.push(t);
                t += rnd(span / 50 + 1) as i64 * rnd(3) as i64;
            }
            let turn = times[times.len() / 2];
            let dst = case % 2 == 0;
            let off = move |u: i64| if dst && u >= turn { 0 } else { 3_600_000 };
            let cap = match case % 3 {
                0 => None,
                1 => Rate::new(100, 600_000),
                _ => Rate::new(5, 7_000),
            };
            let span = times.last().expect("one") - times[0];
            let want = count(Some(auto_bucket(span, cap)), None, &times, &off);
            assert_eq!(count(None, cap, &times, &off), want, "case {case}");
        }
    }
}
