//! A breakdown and a report for people: tables, the CSV, the bar chart, the document.

use super::super::doc::{Doc, Section};
use super::acc::TopAcc;
use super::by::{TopBy, TopSort};
use super::distinct::EXACT_CLIENTS;
use super::labels::{Span, bytes_label, clients_label, seen_label};
use super::model::{Breakdown, TopReport};
use super::tally::ERROR_STATUS;
use crate::classify::Classifier;
use crate::number::{pct1, share, thousands};
use crate::table::{Align, Cell, Table};
use crate::time::local_rfc3339_ms;

/// Which columns a breakdown's tables show.
#[derive(Clone, Copy, Debug)]
pub struct Columns {
    /// Distinct clients.
    pub clients: bool,
    /// First and last seen.
    pub seen: bool,
}

impl Breakdown {
    /// What the rows' times have in common (tables leave it out).
    pub fn span(&self) -> Span {
        Span::of(
            self.rows
                .iter()
                .flat_map(|r| [r.first_local_ms, r.last_local_ms]),
        )
    }

    /// Whether `t` (a [`Breakdown::table`]) fits a terminal of `width` columns with
    /// text values (paths, referers, agents, hosts) cut to no less than 20 columns and
    /// addresses, networks, statuses and methods never cut.
    pub fn fits(&self, t: &Table, width: usize) -> bool {
        let natural = t
            .to_terminal(usize::MAX, false)
            .lines()
            .map(crate::table::display_width)
            .max()
            .unwrap_or(0);
        let value = self
            .rows
            .iter()
            .map(|r| {
                crate::table::display_width(&crate::escape::terminal_str(
                    r.value.as_deref().unwrap_or(self.by.null_label()),
                    500,
                ))
            })
            .max()
            .unwrap_or(0)
            .max(crate::table::display_width(self.by.header()));
        let text = matches!(
            self.by,
            TopBy::Path | TopBy::Referer | TopBy::Agent | TopBy::Host
        );
        let shrink = if text { value.saturating_sub(20) } else { 0 };
        natural.saturating_sub(shrink) <= width
    }

    /// The table for people: `#`, value, requests, share, bytes, clients, errors, first
    /// and last seen (as `cols` says), times less what `span` says they share.
    pub fn table(&self, cols: Columns, span: &Span) -> Table {
        let mut head: Vec<(&str, Align)> = vec![
            ("#", Align::Right),
            (self.by.header(), Align::Left),
            ("requests", Align::Right),
            ("share", Align::Right),
            ("bytes", Align::Right),
        ];
        let clients = cols.clients && self.by.counts_clients();
        if clients {
            // A day's distinct clients are GoAccess's unique visitors (address and agent).
            let name = if self.by == TopBy::Day {
                "visitors"
            } else {
                "clients"
            };
            head.push((name, Align::Right));
        }
        head.push(("errors", Align::Right));
        if cols.seen {
            head.push(("first seen", Align::Right));
            head.push(("last seen", Align::Right));
        }
        let mut t = Table::new(&head);
        for r in &self.rows {
            let mut row = vec![
                Cell::from(r.rank.to_string()),
                Cell::from(
                    r.value
                        .clone()
                        .unwrap_or_else(|| self.by.null_label().into()),
                ),
                Cell::from(thousands(r.requests)),
                Cell::from(format!("{:.1}%", 100.0 * r.share)),
                Cell::from(bytes_label(r.bytes)),
            ];
            if clients {
                row.push(Cell::from(clients_label(r.clients, r.clients_estimated)));
            }
            row.push(Cell::from(pct1(r.errors, r.requests)));
            if cols.seen {
                row.push(Cell::from(seen_label(r.first_local_ms, span)));
                row.push(Cell::from(seen_label(r.last_local_ms, span)));
            }
            t.row(row);
        }
        t
    }

    /// The table as data (CSV): one typed value per column — plain integers, shares as
    /// fractions, RFC 3339 times, `true`/`false`.
    pub fn csv_table(&self) -> Table {
        let mut t = Table::new(&[
            ("rank", Align::Right),
            (self.by.name(), Align::Left),
            ("requests", Align::Right),
            ("share", Align::Right),
            ("bytes", Align::Right),
            ("bytes_share", Align::Right),
            ("clients", Align::Right),
            ("clients_estimated", Align::Left),
            ("errors", Align::Right),
            ("error_share", Align::Right),
            ("first_seen", Align::Left),
            ("last_seen", Align::Left),
        ]);
        for r in &self.rows {
            t.row([
                r.rank.to_string(),
                r.value.clone().unwrap_or_default(),
                r.requests.to_string(),
                r.share.to_string(),
                r.bytes.to_string(),
                r.bytes_share.to_string(),
                r.clients.to_string(),
                r.clients_estimated.to_string(),
                r.errors.to_string(),
                r.error_share.to_string(),
                r.first_seen.clone(),
                r.last_seen.clone(),
            ]);
        }
        t
    }

    /// The note under the table on the values not listed, if any.
    pub fn rest_note(&self) -> Option<String> {
        self.rest.as_ref().map(|r| {
            format!(
                "… and {} more {} with {} requests ({:.1}%), {}",
                thousands(r.values),
                self.by.plural(),
                thousands(r.requests),
                100.0 * r.share,
                bytes_label(r.bytes)
            )
        })
    }

    /// A bar chart of the listed rows (requests, or bytes when sorted by bytes).
    pub fn bars_svg(&self, title: &str) -> String {
        let by_bytes = self.sort == TopSort::Bytes;
        let bars = self
            .rows
            .iter()
            .map(|r| crate::chart::Bar {
                label: r
                    .value
                    .clone()
                    .unwrap_or_else(|| self.by.null_label().into()),
                value: if by_bytes {
                    r.bytes as f64
                } else {
                    r.requests as f64
                },
                text: if by_bytes {
                    format!("{} ({:.1}%)", bytes_label(r.bytes), 100.0 * r.bytes_share)
                } else {
                    format!("{} ({:.1}%)", thousands(r.requests), 100.0 * r.share)
                },
            })
            .collect();
        crate::chart::bars(&crate::chart::Bars {
            title: title.to_string(),
            bars,
        })
    }
}

impl TopReport {
    /// The report from a finished accumulator.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        acc: TopAcc,
        cls: &Classifier,
        sort: TopSort,
        limit: usize,
        local: &dyn Fn(i64) -> i64,
        zone: &str,
        selection: &str,
        origin: &str,
    ) -> TopReport {
        let t = acc.total();
        let time = |ms: i64| {
            let l = local(ms);
            local_rfc3339_ms(l, l - ms)
        };
        let (mut clients, mut clients_estimated) = t.clients.count();
        let breakdown = acc.finish(cls, sort, limit, local);
        // By client, the distinct values are the distinct clients, counted exactly: the
        // header never puts an estimate beside its own exact count.
        if breakdown.by == TopBy::Ip {
            (clients, clients_estimated) = (breakdown.distinct_values, false);
        }
        TopReport {
            origin: origin.to_string(),
            selection: selection.to_string(),
            zone: zone.to_string(),
            requests: t.requests,
            bytes: t.bytes,
            errors: t.errors,
            error_share: share(t.errors, t.requests),
            clients,
            clients_estimated,
            first_seen: (t.requests > 0).then(|| time(t.first_ms)),
            last_seen: (t.requests > 0).then(|| time(t.last_ms)),
            error_status: ERROR_STATUS,
            exact_clients_up_to: EXACT_CLIENTS,
            breakdown,
        }
    }

    /// The report for a terminal of `width` columns: the first and last seen columns
    /// are left out when the table would not fit with them (the value column shrinks to
    /// 8 columns at the least).
    pub fn doc_for_width(&self, width: usize) -> Doc {
        let full = self.doc_with(true, false);
        let fits = full
            .sections
            .first()
            .and_then(|s| s.table.as_ref())
            .is_none_or(|t| self.breakdown.fits(t, width));
        if fits {
            return full;
        }
        let mut d = self.doc_with(false, false);
        if let Some(s) = d.sections.first_mut() {
            s.notes.push(
                "first and last seen: in a wider terminal (COLUMNS=120), or --format csv/json"
                    .into(),
            );
        }
        d
    }

    /// The report for people (every column).
    pub fn doc(&self) -> Doc {
        self.doc_with(true, true)
    }

    fn doc_with(&self, seen: bool, chart: bool) -> Doc {
        let b = &self.breakdown;
        let mut lines = vec![
            format!("source: {}", self.origin),
            format!("selection: {}", self.selection),
        ];
        let mut summary = format!(
            "{} requests, {} distinct {}, {} from {} clients; {} errors ({}, status ≥ {})",
            thousands(self.requests),
            thousands(b.distinct_values),
            b.by.plural(),
            bytes_label(self.bytes),
            clients_label(self.clients, self.clients_estimated),
            thousands(self.errors),
            pct1(self.errors, self.requests),
            self.error_status
        );
        if let (Some(f), Some(l)) = (&self.first_seen, &self.last_seen) {
            summary.push_str(&format!("; from {f} to {l}"));
        }
        lines.push(summary);
        let span = b.span();
        lines.push(span.line(&self.zone));
        let mut notes = vec![format!(
            "share: of all selected requests; bytes: body bytes sent (- counts 0); errors: share of the {}'s requests with status ≥ {} (4xx and 5xx)",
            b.by.header(),
            self.error_status
        )];
        if b.by == TopBy::Day {
            notes.push(
                "visitors: distinct address and User-Agent that day, requests answered 4xx not counting (GoAccess's unique visitors), counted exactly; the total above is distinct clients".into(),
            );
        } else if b.by.counts_clients() {
            notes.push(format!(
                "clients: distinct client addresses (host names where the log has no address), exact up to {EXACT_CLIENTS} per {}, above that a HyperLogLog estimate (±2.3%) marked ≈; the total above is exact",
                b.by.header()
            ));
        }
        notes.extend(b.rest_note());
        let title = if b.by == TopBy::Hour {
            "Requests by hour of the day".to_string()
        } else if b.by == TopBy::Day {
            "Requests and unique visitors by day".to_string()
        } else {
            format!("Top {} by {}", b.by.plural(), b.sort.name())
        };
        let mut doc = Doc {
            title: title.clone(),
            lines,
            sections: vec![Section {
                title: None,
                table: Some(b.table(
                    Columns {
                        clients: true,
                        seen,
                    },
                    &span,
                )),
                notes,
            }],
            csv_section: 0,
            csv: Some(b.csv_table()),
            ..Doc::default()
        };
        if chart && !b.rows.is_empty() {
            doc.figures.push(crate::forensics::doc::Figure {
                title: title.clone(),
                svg: b.bars_svg(&title),
                text: None,
            });
        }
        doc
    }
}

impl crate::forensics::doc::Document for TopReport {
    fn doc(&self, width: usize) -> Doc {
        if width == usize::MAX {
            TopReport::doc(self)
        } else {
            self.doc_for_width(width)
        }
    }
}
