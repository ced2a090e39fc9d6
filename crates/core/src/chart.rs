//! The one chart module: inline SVG written by logscope (no script, no network, no
//! stylesheet of its own) for every HTML report — time series with an optional reference
//! line (a capacity) and a shaded interval (the incident), horizontal bars, a cumulative
//! share (Lorenz) curve and stacked shares.
//!
//! Every text is HTML-escaped here (log text is attacker-controlled), output is
//! deterministic, and the size is fixed by a `viewBox` so pages print well. Elements a
//! test can count (see /work/notes/chart-api.md, "Counting scheme"): each chart is an
//! `<svg class="chart" data-kind="…">`; a series is one `<polyline class="series"
//! data-points="N">`; a bar is one `<rect class="bar">`; a stacked segment one
//! `<rect class="seg">`; a legend swatch one `<rect class="key">`.

use std::fmt::Write;

use crate::escape;
use crate::number::thousands;
use crate::time::civil_from_days;

/// Series colours, by series index (the first is the main series).
pub const PALETTE: [&str; 6] = [
    "#3465a4", "#f57900", "#4e9a06", "#75507b", "#c17d11", "#555753",
];

/// Colour of reference lines (capacities).
const REF_COLOR: &str = "#cc0000";
/// Fill of a shaded interval.
const SHADE_COLOR: &str = "#f8d7d7";
/// Most points of a Lorenz curve (plus the origin).
pub const LORENZ_POINTS: usize = 200;

const FONT: &str = "font-family=\"system-ui,sans-serif\"";

/// A time series chart: one or more series over time.
#[derive(Clone, Debug, Default)]
pub struct TimeSeries {
    /// The chart's title (its `<title>` and `aria-label`).
    pub title: String,
    /// What the y axis counts ("heavy requests").
    pub y_label: String,
    /// The series; the first is drawn as a filled area and a line, the others as lines.
    pub series: Vec<Series>,
    /// A horizontal reference line (a capacity), labelled in the legend, not on the line.
    pub reference: Option<RefLine>,
    /// A shaded interval (the incident).
    pub shade: Option<Shade>,
}

/// One series: points `(x, y)`, x in milliseconds on the report's clock (local wall
/// time written as if it were UTC), in time order.
#[derive(Clone, Debug, Default)]
pub struct Series {
    /// Name, shown in the legend.
    pub name: String,
    /// The points.
    pub points: Vec<(i64, f64)>,
}

/// A horizontal reference line.
#[derive(Clone, Debug, Default)]
pub struct RefLine {
    /// Its value on the y axis.
    pub value: f64,
    /// Its label ("capacity 1,610 per 10m"), shown in the legend.
    pub label: String,
}

/// A shaded interval `[start_ms, end_ms)` on the x axis (report's clock).
#[derive(Clone, Debug, Default)]
pub struct Shade {
    /// Start.
    pub start_ms: i64,
    /// End.
    pub end_ms: i64,
    /// Label, shown in the legend.
    pub label: String,
}

/// Horizontal labelled bars, in the order given.
#[derive(Clone, Debug, Default)]
pub struct Bars {
    /// The chart's title.
    pub title: String,
    /// The bars.
    pub bars: Vec<Bar>,
}

/// One bar.
#[derive(Clone, Debug, Default)]
pub struct Bar {
    /// Label, left of the bar (cut at 40 characters).
    pub label: String,
    /// Length.
    pub value: f64,
    /// Text right of the bar ("812 (6.0%)"); empty: the value.
    pub text: String,
}

/// A cumulative share curve: the share of the total held by the largest groups.
#[derive(Clone, Debug, Default)]
pub struct Lorenz {
    /// The chart's title.
    pub title: String,
    /// The x axis ("share of /24 networks, largest first").
    pub x_label: String,
    /// The y axis ("share of requests").
    pub y_label: String,
    /// One count per group, any order.
    pub counts: Vec<u64>,
    /// The curve already sampled (from [`lorenz_points`]), used when `counts` is empty.
    pub points: Vec<(f64, f64)>,
    /// Lines right of the plot; empty with `counts`: where 50% and 90% are reached.
    pub notes: Vec<String>,
}

/// Stacked shares: each row a bar of 100% cut into its keys' shares.
#[derive(Clone, Debug, Default)]
pub struct Stacked {
    /// The chart's title.
    pub title: String,
    /// The keys, in legend and segment order.
    pub keys: Vec<String>,
    /// The rows.
    pub rows: Vec<StackRow>,
}

/// One stacked row.
#[derive(Clone, Debug, Default)]
pub struct StackRow {
    /// Label, left of the bar.
    pub label: String,
    /// One value per key (missing ones count 0).
    pub values: Vec<f64>,
}

/// Approximate width of `s` in px at font size `size` (for layout only).
fn text_w(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.58
}

/// `s` cut to `n` characters with `…`.
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// A number as shown on an axis or a bar: integers with thousands separators, else at
/// most 2 decimals (trailing zeros dropped).
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    if v.fract().abs() < 1e-9 && v.abs() < 1e15 {
        let n = v.round();
        return if n < 0.0 {
            format!("-{}", thousands((-n) as u64))
        } else {
            thousands(n as u64)
        };
    }
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A round tick step (1, 2 or 5 × 10^k) for `0..=max` in at most about `n` steps.
fn nice_step(max: f64, n: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let raw = max / n;
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * mag >= raw {
            return m * mag;
        }
    }
    10.0 * mag
}

/// The y range `0..top` with round ticks covering `max`.
fn y_axis(max: f64) -> (f64, f64) {
    let step = nice_step(max, 4.0);
    let top = ((max / step).ceil() * step).max(step);
    (top, step)
}

/// Opening of every chart.
fn open(s: &mut String, kind: &str, title: &str, w: f64, h: f64) {
    let t = escape::html(title);
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" data-kind=\"{kind}\" viewBox=\"0 0 {w:.0} {h:.0}\" width=\"100%\" preserveAspectRatio=\"xMinYMin meet\" role=\"img\" aria-label=\"{t}\" {FONT} font-size=\"11\"><title>{t}</title>"
    );
}

fn empty(s: &mut String, w: f64, h: f64) {
    let _ = write!(
        s,
        "<text class=\"empty\" x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\" fill=\"#888\">no data</text></svg>",
        w / 2.0,
        h / 2.0
    );
}

/// A legend entry: a swatch and a label at `x`; returns the x after it.
fn legend(s: &mut String, x: f64, y: f64, swatch: &str, label: &str) -> f64 {
    let _ = write!(s, "{swatch}");
    let _ = write!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#333\">{}</text>",
        x + 18.0,
        y + 4.0,
        escape::html(label)
    );
    x + 18.0 + text_w(label, 11.0) + 16.0
}

const DAY: i64 = 86_400_000;

/// Date of a report-clock ms as `(y, m, d)`.
fn ymd(ms: i64) -> (i64, u32, u32) {
    civil_from_days(ms.div_euclid(DAY))
}

/// Month index (y*12 + m-1) of a report-clock ms.
fn month_index(ms: i64) -> i64 {
    let (y, m, _) = ymd(ms);
    y * 12 + i64::from(m) - 1
}

fn month_start(idx: i64) -> i64 {
    let y = idx.div_euclid(12);
    let m = idx.rem_euclid(12) as u32 + 1;
    crate::time::days_from_civil(y, m, 1) * DAY
}

/// Ticks of a time axis over `[lo, hi]`: (position, first line, second line).
fn time_ticks(lo: i64, hi: i64) -> Vec<(i64, String, String)> {
    const SEC: i64 = 1_000;
    const MIN: i64 = 60_000;
    let span = (hi - lo).max(1);
    let steps = [
        SEC,
        5 * SEC,
        10 * SEC,
        30 * SEC,
        MIN,
        5 * MIN,
        10 * MIN,
        15 * MIN,
        30 * MIN,
        60 * MIN,
        120 * MIN,
        180 * MIN,
        360 * MIN,
        720 * MIN,
        DAY,
        2 * DAY,
        7 * DAY,
        14 * DAY,
    ];
    let mut out = Vec::new();
    if let Some(&step) = steps.iter().find(|&&st| span / st <= 7) {
        // Weeks start on Mondays, as report buckets do.
        let mut t = crate::time::align(lo, step);
        if t < lo {
            t += step;
        }
        let mut last_date = None;
        while t <= hi {
            let (y, m, d) = ymd(t);
            let date = format!("{y:04}-{m:02}-{d:02}");
            if step < DAY {
                let r = t.rem_euclid(DAY) / SEC;
                let first = if step < MIN {
                    format!("{:02}:{:02}:{:02}", r / 3600, r / 60 % 60, r % 60)
                } else {
                    format!("{:02}:{:02}", r / 3600, r / 60 % 60)
                };
                let second = if last_date.as_ref() != Some(&date) {
                    date.clone()
                } else {
                    String::new()
                };
                last_date = Some(date);
                out.push((t, first, second));
            } else {
                let year = format!("{y:04}");
                let second = if last_date.as_ref() != Some(&year) {
                    year.clone()
                } else {
                    String::new()
                };
                last_date = Some(year);
                out.push((t, format!("{m:02}-{d:02}"), second));
            }
            t += step;
        }
        return out;
    }
    // Months.
    let (m0, m1) = (month_index(lo), month_index(hi));
    let every = [1i64, 2, 3, 6, 12, 24, 60]
        .into_iter()
        .find(|e| (m1 - m0) / e <= 7)
        .unwrap_or(120);
    let mut i = m0.div_euclid(every) * every;
    let mut last_year = None;
    while i <= m1 {
        let t = month_start(i);
        if t >= lo {
            let (y, m, _) = ymd(t);
            let second = if last_year != Some(y) {
                format!("{y:04}")
            } else {
                String::new()
            };
            last_year = Some(y);
            out.push((t, format!("{y:04}-{m:02}"), second));
        }
        i += every;
    }
    out
}

/// A time series chart (see [`TimeSeries`]).
pub fn time_series(c: &TimeSeries) -> String {
    let (w, h) = (760.0, 300.0);
    let (left, right, top, bottom) = (64.0, 16.0, 40.0, 40.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let mut s = String::new();
    open(&mut s, "time-series", &c.title, w, h);
    let xs = c.series.iter().flat_map(|se| se.points.iter().map(|p| p.0));
    let (Some(mut lo), Some(mut hi)) = (xs.clone().min(), xs.max()) else {
        empty(&mut s, w, h);
        return s;
    };
    if let Some(sh) = &c.shade {
        lo = lo.min(sh.start_ms);
        hi = hi.max(sh.end_ms);
    }
    if hi <= lo {
        lo -= 1_800_000;
        hi += 1_800_000;
    }
    let ymax = c
        .series
        .iter()
        .flat_map(|se| se.points.iter().map(|p| p.1))
        .chain(c.reference.as_ref().map(|r| r.value))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let (ytop, ystep) = y_axis(ymax);
    let x = |t: i64| left + pw * (t - lo) as f64 / (hi - lo) as f64;
    let y = |v: f64| top + ph * (1.0 - (v.max(0.0) / ytop).min(1.0));
    // Legend row and y caption.
    let _ = write!(
        s,
        "<text x=\"{left}\" y=\"12\" fill=\"#555\">{}</text>",
        escape::html(&c.y_label)
    );
    let mut lx = left;
    let ly = 26.0;
    for (i, se) in c.series.iter().enumerate() {
        let col = PALETTE[i % PALETTE.len()];
        let sw = format!(
            "<rect class=\"key\" x=\"{lx:.1}\" y=\"{:.1}\" width=\"12\" height=\"8\" fill=\"{col}\"/>",
            ly - 4.0
        );
        lx = legend(&mut s, lx, ly, &sw, &se.name);
    }
    if let Some(r) = &c.reference {
        let sw = format!(
            "<line x1=\"{lx:.1}\" y1=\"{ly:.1}\" x2=\"{:.1}\" y2=\"{ly:.1}\" stroke=\"{REF_COLOR}\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/>",
            lx + 12.0
        );
        lx = legend(&mut s, lx, ly, &sw, &r.label);
    }
    if let Some(sh) = &c.shade {
        let sw = format!(
            "<rect x=\"{lx:.1}\" y=\"{:.1}\" width=\"12\" height=\"8\" fill=\"{SHADE_COLOR}\"/>",
            ly - 4.0
        );
        legend(&mut s, lx, ly, &sw, &sh.label);
    }
    // Shade.
    if let Some(sh) = &c.shade {
        let (a, b) = (x(sh.start_ms), x(sh.end_ms.max(sh.start_ms)));
        let _ = write!(
            s,
            "<rect class=\"shade\" x=\"{a:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{ph:.1}\" fill=\"{SHADE_COLOR}\"/>",
            (b - a).max(1.0)
        );
    }
    // Y grid and ticks.
    let mut v = 0.0;
    while v <= ytop + ystep * 1e-6 {
        let ty = y(v);
        let _ = write!(
            s,
            "<line x1=\"{left}\" y1=\"{ty:.1}\" x2=\"{:.1}\" y2=\"{ty:.1}\" stroke=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#555\">{}</text>",
            left + pw,
            if v == 0.0 { "#999" } else { "#e6e6e6" },
            left - 6.0,
            ty + 4.0,
            number(v)
        );
        v += ystep;
    }
    // X ticks.
    for (t, a, b) in time_ticks(lo, hi) {
        let tx = x(t);
        let _ = write!(
            s,
            "<line x1=\"{tx:.1}\" y1=\"{:.1}\" x2=\"{tx:.1}\" y2=\"{:.1}\" stroke=\"#999\"/><text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">{}</text>",
            top + ph,
            top + ph + 4.0,
            top + ph + 16.0,
            escape::html(&a)
        );
        if !b.is_empty() {
            let _ = write!(
                s,
                "<text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">{}</text>",
                top + ph + 30.0,
                escape::html(&b)
            );
        }
    }
    // Series.
    for (i, se) in c.series.iter().enumerate() {
        let col = PALETTE[i % PALETTE.len()];
        let mut pts = String::with_capacity(se.points.len() * 12);
        for (k, &(t, v)) in se.points.iter().enumerate() {
            if k > 0 {
                pts.push(' ');
            }
            let v = if v.is_finite() { v } else { 0.0 };
            let _ = write!(pts, "{:.1},{:.1}", x(t), y(v));
        }
        if i == 0 && se.points.len() > 1 {
            let (first, last) = (se.points[0].0, se.points[se.points.len() - 1].0);
            let _ = write!(
                s,
                "<polygon points=\"{:.1},{:.1} {pts} {:.1},{:.1}\" fill=\"{col}\" fill-opacity=\"0.15\" stroke=\"none\"/>",
                x(first),
                y(0.0),
                x(last),
                y(0.0)
            );
        }
        let _ = write!(
            s,
            "<polyline class=\"series\" data-series=\"{}\" data-points=\"{}\" points=\"{pts}\" fill=\"none\" stroke=\"{col}\" stroke-width=\"1.5\" stroke-linejoin=\"round\"/>",
            escape::html(&se.name),
            se.points.len()
        );
        if se.points.len() == 1 {
            let (t, v) = se.points[0];
            let _ = write!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{col}\"/>",
                x(t),
                y(v)
            );
        }
    }
    // Reference line, over the series.
    if let Some(r) = &c.reference {
        let ry = y(r.value);
        let _ = write!(
            s,
            "<line class=\"ref\" x1=\"{left}\" y1=\"{ry:.1}\" x2=\"{:.1}\" y2=\"{ry:.1}\" stroke=\"{REF_COLOR}\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/>",
            left + pw
        );
    }
    s.push_str("</svg>");
    s
}

/// Horizontal bars (see [`Bars`]).
pub fn bars(c: &Bars) -> String {
    let w = 760.0;
    let row = 22.0;
    let (top, bottom) = (8.0, 28.0);
    let n = c.bars.len();
    let h = top + row * n.max(1) as f64 + bottom;
    let mut s = String::new();
    open(&mut s, "bars", &c.title, w, h);
    if n == 0 {
        empty(&mut s, w, h);
        return s;
    }
    let labels: Vec<String> = c.bars.iter().map(|b| cut(&b.label, 40)).collect();
    let texts: Vec<String> = c
        .bars
        .iter()
        .map(|b| {
            if b.text.is_empty() {
                number(b.value)
            } else {
                cut(&b.text, 30)
            }
        })
        .collect();
    let left = 8.0
        + labels
            .iter()
            .map(|l| text_w(l, 11.0))
            .fold(0.0f64, f64::max)
            .min(260.0);
    let tw = texts.iter().map(|t| text_w(t, 11.0)).fold(0.0f64, f64::max);
    let pw = (w - left - 16.0 - tw - 8.0).max(100.0);
    let max = c
        .bars
        .iter()
        .map(|b| b.value)
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let (xtop, xstep) = y_axis(max);
    let x0 = left + 6.0;
    let x = |v: f64| x0 + pw * (v.max(0.0) / xtop).min(1.0);
    let bottom_y = top + row * n as f64;
    let mut v = 0.0;
    while v <= xtop + xstep * 1e-6 {
        let tx = x(v);
        let _ = write!(
            s,
            "<line x1=\"{tx:.1}\" y1=\"{top}\" x2=\"{tx:.1}\" y2=\"{bottom_y:.1}\" stroke=\"{}\"/><text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">{}</text>",
            if v == 0.0 { "#999" } else { "#e6e6e6" },
            bottom_y + 16.0,
            number(v)
        );
        v += xstep;
    }
    for (i, b) in c.bars.iter().enumerate() {
        let by = top + row * i as f64;
        let v = if b.value.is_finite() { b.value } else { 0.0 };
        let bw = x(v) - x0;
        let _ = write!(
            s,
            "<text x=\"{left:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#333\">{}</text><rect class=\"bar\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{bw:.1}\" height=\"{:.1}\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"#333\">{}</text>",
            by + row / 2.0 + 4.0,
            escape::html(&labels[i]),
            by + 3.0,
            row - 6.0,
            PALETTE[0],
            x0 + bw + 4.0,
            by + row / 2.0 + 4.0,
            escape::html(&texts[i])
        );
    }
    s.push_str("</svg>");
    s
}

/// The sampled points of a Lorenz curve: `(share of groups, share of total)`, from
/// `(0, 0)`, largest groups first; `min(groups, LORENZ_POINTS) + 1` points.
pub fn lorenz_points(counts: &[u64]) -> Vec<(f64, f64)> {
    let mut v: Vec<u64> = counts.to_vec();
    v.sort_unstable_by(|a, b| b.cmp(a));
    let n = v.len();
    let total: u64 = v.iter().sum();
    if n == 0 || total == 0 {
        return Vec::new();
    }
    let mut cum = Vec::with_capacity(n + 1);
    cum.push(0u64);
    let mut acc = 0u64;
    for c in &v {
        acc += c;
        cum.push(acc);
    }
    let m = n.min(LORENZ_POINTS);
    (0..=m)
        .map(|i| {
            let k = if m == n { i } else { (i * n).div_ceil(m) };
            (k as f64 / n as f64, cum[k] as f64 / total as f64)
        })
        .collect()
}

/// A cumulative share curve (see [`Lorenz`]).
pub fn lorenz(c: &Lorenz) -> String {
    let (w, h) = (640.0, 360.0);
    let (left, top, side) = (64.0, 20.0, 280.0);
    let mut s = String::new();
    open(&mut s, "lorenz", &c.title, w, h);
    let pts = if c.counts.is_empty() {
        c.points.clone()
    } else {
        lorenz_points(&c.counts)
    };
    if pts.is_empty() {
        empty(&mut s, w, h);
        return s;
    }
    let x = |f: f64| left + side * f;
    let y = |f: f64| top + side * (1.0 - f);
    for i in 0..=4 {
        let f = f64::from(i) / 4.0;
        let _ = write!(
            s,
            "<line x1=\"{:.1}\" y1=\"{top}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#e6e6e6\"/><line x1=\"{left}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#e6e6e6\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">{}%</text><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#555\">{}%</text>",
            x(f),
            x(f),
            top + side,
            y(f),
            left + side,
            y(f),
            x(f),
            top + side + 16.0,
            i * 25,
            left - 6.0,
            y(f) + 4.0,
            i * 25
        );
    }
    let _ = write!(
        s,
        "<rect x=\"{left}\" y=\"{top}\" width=\"{side}\" height=\"{side}\" fill=\"none\" stroke=\"#999\"/><line class=\"diag\" x1=\"{left}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{top}\" stroke=\"#999\" stroke-dasharray=\"3 3\"/>",
        top + side,
        left + side
    );
    let mut p = String::new();
    for (k, (a, b)) in pts.iter().enumerate() {
        if k > 0 {
            p.push(' ');
        }
        let _ = write!(p, "{:.1},{:.1}", x(*a), y(*b));
    }
    let _ = write!(
        s,
        "<polyline class=\"series\" data-series=\"curve\" data-points=\"{}\" points=\"{p}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>",
        pts.len(),
        PALETTE[0]
    );
    // Axis captions, and where 50% and 90% of the total are reached.
    let _ = write!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#333\">{}</text><text x=\"14\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#333\" transform=\"rotate(-90 14 {:.1})\">{}</text>",
        left + side / 2.0,
        top + side + 34.0,
        escape::html(&c.x_label),
        top + side / 2.0,
        top + side / 2.0,
        escape::html(&c.y_label)
    );
    let mut notes = c.notes.clone();
    if notes.is_empty() && !c.counts.is_empty() {
        let mut v: Vec<u64> = c.counts.clone();
        v.sort_unstable_by(|a, b| b.cmp(a));
        let n = v.len() as f64;
        for q in [0.5, 0.9] {
            let k = groups_for(&v, q);
            notes.push(format!(
                "{}% of the total: the largest {} of {} ({:.1}%)",
                (q * 100.0) as u32,
                thousands(k),
                thousands(v.len() as u64),
                k as f64 * 100.0 / n
            ));
        }
    }
    let mut ty = top + 20.0;
    for line in &notes {
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{ty:.1}\" fill=\"#333\">{}</text>",
            left + side + 14.0,
            escape::html(&cut(line, 44))
        );
        ty += 18.0;
    }
    s.push_str("</svg>");
    s
}

/// How many of the largest counts (sorted descending) reach `share` of the total.
fn groups_for(sorted_desc: &[u64], share: f64) -> u64 {
    let total: u64 = sorted_desc.iter().sum();
    let mut acc = 0u64;
    for (i, &c) in sorted_desc.iter().enumerate() {
        acc += c;
        if acc as f64 >= share * total as f64 - 1e-9 {
            return i as u64 + 1;
        }
    }
    sorted_desc.len() as u64
}

/// Stacked shares (see [`Stacked`]).
pub fn stacked(c: &Stacked) -> String {
    let w = 760.0;
    let row = 26.0;
    let top = 34.0;
    let n = c.rows.len();
    let h = top + row * n.max(1) as f64 + 10.0;
    let mut s = String::new();
    open(&mut s, "stacked", &c.title, w, h);
    // Legend (may wrap onto a second line).
    let mut lx = 8.0;
    let mut ly = 12.0;
    for (i, k) in c.keys.iter().enumerate() {
        let k = cut(k, 30);
        if lx + 18.0 + text_w(&k, 11.0) > w - 8.0 && lx > 8.0 {
            lx = 8.0;
            ly += 14.0;
        }
        let sw = format!(
            "<rect class=\"key\" x=\"{lx:.1}\" y=\"{:.1}\" width=\"12\" height=\"8\" fill=\"{}\"/>",
            ly - 4.0,
            PALETTE[i % PALETTE.len()]
        );
        lx = legend(&mut s, lx, ly, &sw, &k);
    }
    if n == 0 {
        empty(&mut s, w, h);
        return s;
    }
    let top = top.max(ly + 14.0);
    let h2 = top + row * n as f64 + 10.0;
    if h2 > h {
        // Re-open with the taller box (legend wrapped): rebuild deterministically.
        let body = s
            .split_once("</title>")
            .map(|x| x.1.to_string())
            .unwrap_or_default();
        s.clear();
        open(&mut s, "stacked", &c.title, w, h2);
        s.push_str(&body);
    }
    let labels: Vec<String> = c.rows.iter().map(|r| cut(&r.label, 24)).collect();
    let left = 8.0
        + labels
            .iter()
            .map(|l| text_w(l, 11.0))
            .fold(0.0f64, f64::max)
            .min(160.0);
    let x0 = left + 6.0;
    let pw = w - x0 - 8.0;
    for (i, r) in c.rows.iter().enumerate() {
        let by = top + row * i as f64;
        let _ = write!(
            s,
            "<text x=\"{left:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#333\">{}</text>",
            by + row / 2.0 + 4.0,
            escape::html(&labels[i])
        );
        let total: f64 = r.values.iter().filter(|v| v.is_finite() && **v > 0.0).sum();
        if total <= 0.0 {
            continue;
        }
        let mut x = x0;
        for (k, &v) in r
            .values
            .iter()
            .enumerate()
            .take(c.keys.len().max(r.values.len()))
        {
            if !v.is_finite() || v <= 0.0 {
                continue;
            }
            let sw = pw * v / total;
            let key = c.keys.get(k).map_or("", String::as_str);
            let pct = v * 100.0 / total;
            let _ = write!(
                s,
                "<rect class=\"seg\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{sw:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}: {pct:.1}%</title></rect>",
                by + 3.0,
                row - 6.0,
                PALETTE[k % PALETTE.len()],
                escape::html(key)
            );
            let label = format!("{pct:.0}%");
            if sw >= text_w(&label, 11.0) + 6.0 {
                let _ = write!(
                    s,
                    "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#fff\">{label}</text>",
                    x + sw / 2.0,
                    by + row / 2.0 + 4.0
                );
            }
            x += sw;
        }
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(s: &str, pat: &str) -> usize {
        s.matches(pat).count()
    }

    #[test]
    fn time_series_counts_and_escapes() {
        let h = 3_600_000;
        let c = TimeSeries {
            title: "<script>t".into(),
            y_label: "heavy \"x\"".into(),
            series: vec![
                Series {
                    name: "a<b".into(),
                    points: (0..30).map(|i| (i * h, (i * 7 % 13) as f64)).collect(),
                },
                Series {
                    name: "all".into(),
                    points: (0..30).map(|i| (i * h, 20.0)).collect(),
                },
            ],
            reference: Some(RefLine {
                value: 15.0,
                label: "capacity & more".into(),
            }),
            shade: Some(Shade {
                start_ms: 3 * h,
                end_ms: 5 * h,
                label: "incident".into(),
            }),
        };
        let s = time_series(&c);
        assert_eq!(s, time_series(&c), "deterministic");
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert_eq!(count(&s, "class=\"series\""), 2);
        assert_eq!(count(&s, "data-points=\"30\""), 2);
        assert_eq!(count(&s, "class=\"ref\""), 1);
        assert_eq!(count(&s, "class=\"shade\""), 1);
        assert!(!s.contains("<script") && s.contains("&lt;script&gt;"));
        assert!(s.contains("a&lt;b") && s.contains("&amp; more"));
        // Dates on the time axis.
        assert!(s.contains("1970-01-01") && s.contains("1970-01-02"), "{s}");
        // Round y ticks: 0, 5, 10, 15, 20.
        for t in ["\">0</text>", "\">10</text>", "\">20</text>"] {
            assert!(s.contains(t), "{t}");
        }
        // The points attribute has N pairs.
        let p = s
            .split(" points=\"")
            .nth(2)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert_eq!(p.split(' ').count(), 30);
    }

    #[test]
    fn empty_and_single() {
        let s = time_series(&TimeSeries::default());
        assert!(s.contains("class=\"empty\"") && s.ends_with("</svg>"));
        let one = time_series(&TimeSeries {
            series: vec![Series {
                name: "x".into(),
                points: vec![(5, 3.0)],
            }],
            ..TimeSeries::default()
        });
        assert!(one.contains("data-points=\"1\"") && !one.contains("NaN"));
        assert!(bars(&Bars::default()).contains("no data"));
        assert!(lorenz(&Lorenz::default()).contains("no data"));
        assert!(stacked(&Stacked::default()).contains("no data"));
    }

    #[test]
    fn bars_lorenz_stacked() {
        let b = bars(&Bars {
            title: "t".into(),
            bars: (0..7)
                .map(|i| Bar {
                    label: format!("10.0.{i}.0/24 <x>"),
                    value: f64::from(100 - i),
                    text: String::new(),
                })
                .collect(),
        });
        assert_eq!(count(&b, "class=\"bar\""), 7);
        assert!(b.contains("&lt;x&gt;") && !b.contains("<x>"));
        let counts: Vec<u64> = (1..=1000).collect();
        let l = lorenz(&Lorenz {
            title: "c".into(),
            counts: counts.clone(),
            ..Lorenz::default()
        });
        assert!(l.contains("data-points=\"201\""), "{l}");
        let p = lorenz_points(&counts);
        assert_eq!(p.first(), Some(&(0.0, 0.0)));
        assert_eq!(p.last(), Some(&(1.0, 1.0)));
        assert!(p.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        assert_eq!(lorenz_points(&[3, 1]).len(), 3);
        let st = stacked(&Stacked {
            title: "m".into(),
            keys: vec!["browser".into(), "crawler".into(), "tool".into()],
            rows: vec![
                StackRow {
                    label: "all".into(),
                    values: vec![80.0, 20.0, 0.0],
                },
                StackRow {
                    label: "heavy".into(),
                    values: vec![1.0, 1.0, 1.0],
                },
            ],
        });
        assert_eq!(count(&st, "class=\"seg\""), 5);
        assert_eq!(count(&st, "class=\"key\""), 3);
    }

    #[test]
    fn ticks_are_round_and_dated() {
        assert_eq!(nice_step(1955.0, 4.0), 500.0);
        assert_eq!(y_axis(1955.0), (2000.0, 500.0));
        assert_eq!(number(1610.0), "1,610");
        assert_eq!(number(0.25), "0.25");
        let day = 86_400_000;
        let t = time_ticks(0, 180 * day);
        assert!(t.iter().all(|(_, a, _)| a.len() == 7), "{t:?}");
        assert_eq!(t[0].2, "1970");
        let t = time_ticks(0, 6 * 3_600_000);
        assert_eq!(t[0].1, "00:00");
        assert_eq!(t[0].2, "1970-01-01");
        // Under a few minutes, seconds.
        let t = time_ticks(60_000, 100_000);
        let at: Vec<&str> = t.iter().map(|(_, a, _)| a.as_str()).collect();
        assert_eq!(
            at,
            ["00:01:00", "00:01:10", "00:01:20", "00:01:30", "00:01:40"]
        );
        // Weeks on Mondays: 1970-01-05, 12, …
        let t = time_ticks(0, 40 * day);
        assert_eq!(t[0].0, 4 * day);
        assert_eq!(t[0].1, "01-05");
    }
}
