//! The `--servers N` part of the replay report for people: a [`Section`] with the fleet
//! against the shared counter per candidate, a headline line, and the CSV's columns.

use super::model::{FleetCounts, FleetReport};
use crate::forensics::doc::Section;
use crate::forensics::duration_label;
use crate::number::{pct1 as pct, thousands};
use crate::table::{Align, Cell, Style, Table};

fn red_if(text: String, bad: bool) -> Cell {
    if bad {
        Cell::styled(text, Style::Red)
    } else {
        Cell::from(text)
    }
}

fn passed(c: &FleetCounts) -> u64 {
    c.admitted + c.delayed
}

impl FleetReport {
    /// The line under the report's title.
    pub(super) fn headline(&self) -> String {
        let beyond: Vec<String> = self
            .candidates
            .iter()
            .filter(|c| c.admitted_beyond_limit > 0)
            .map(|c| format!("{} {}", c.label, thousands(c.admitted_beyond_limit)))
            .collect();
        format!(
            "Fleet: {} server{} with their own counters, balanced {}; admitted beyond the configured limit (let through by the fleet, refused by one shared counter): {}.",
            self.servers,
            if self.servers == 1 { "" } else { "s" },
            self.balance,
            if beyond.is_empty() {
                "none".to_string()
            } else {
                beyond.join(", ")
            }
        )
    }

    /// The fleet section: one column per candidate.
    pub(super) fn section(&self) -> Section {
        let mut cols: Vec<(&str, Align)> = vec![("", Align::Left)];
        for c in &self.candidates {
            cols.push((c.label.as_str(), Align::Right));
        }
        let mut t = Table::new(&cols);
        let cs = &self.candidates;
        let row = |t: &mut Table, name: &str, f: &dyn Fn(&super::FleetCandidate) -> Cell| {
            let mut r = vec![Cell::from(name)];
            r.extend(cs.iter().map(f));
            t.row(r);
        };
        let delays = cs.iter().any(|c| c.shared.delayed + c.fleet.delayed > 0);
        for (who, get) in [
            (
                "one shared counter",
                (&|c: &super::FleetCandidate| c.shared)
                    as &dyn Fn(&super::FleetCandidate) -> FleetCounts,
            ),
            (
                &*format!("fleet of {}", self.servers),
                &|c: &super::FleetCandidate| c.fleet,
            ),
        ] {
            row(&mut t, &format!("{who}: admitted"), &|c| {
                let n = get(c);
                format!(
                    "{} ({})",
                    thousands(n.admitted),
                    pct(n.admitted, n.in_scope)
                )
                .into()
            });
            if delays {
                row(&mut t, &format!("{who}: delayed"), &|c| {
                    thousands(get(c).delayed).into()
                });
            }
            row(&mut t, &format!("{who}: refused"), &|c| {
                let n = get(c);
                format!("{} ({})", thousands(n.refused), pct(n.refused, n.in_scope)).into()
            });
        }
        row(&mut t, "admitted beyond the limit", &|c| {
            red_if(
                thousands(c.admitted_beyond_limit),
                c.admitted_beyond_limit > 0,
            )
        });
        if cs.iter().any(|c| c.refused_not_shared > 0) {
            row(&mut t, "refused by the fleet only", &|c| {
                thousands(c.refused_not_shared).into()
            });
        }
        for (s, routed) in self.routed.iter().enumerate() {
            row(
                &mut t,
                &format!(
                    "server {} ({} requests): passed / refused",
                    s + 1,
                    thousands(*routed)
                ),
                &|c| match c.per_server.get(s) {
                    Some(n) => {
                        format!("{} / {}", thousands(passed(n)), thousands(n.refused)).into()
                    }
                    None => "-".into(),
                },
            );
        }
        let zones = cs.iter().map(|c| c.peaks.len()).max().unwrap_or(0);
        for z in 0..zones {
            let name = if zones == 1 {
                "peak of one key per window: shared → fleet".to_string()
            } else {
                format!("zone {}: peak of one key per window: shared → fleet", z + 1)
            };
            row(&mut t, &name, &|c| match c.peaks.get(z) {
                Some(p) => red_if(
                    format!(
                        "{} → {} (limit {} per {})",
                        thousands(p.shared_peak),
                        thousands(p.fleet_peak),
                        thousands(p.limit_count),
                        duration_label(p.window_ms as i64)
                    ),
                    p.fleet_peak > p.limit_count,
                ),
                None => "-".into(),
            });
        }
        let mut notes = vec![format!(
            "Each request (in decision-time order) goes to one server by {}; each server runs its own copy of every candidate with local counters, compared request by request with one counter shared by all servers. Admitted beyond the limit = let through (at once or delayed) by the fleet, refused by the shared counter; passed = admitted + delayed.",
            match self.balance.as_str() {
                "round-robin" => "round-robin (request i to server i mod N)".to_string(),
                "ip-hash" => "ip-hash (XXH3-64 of the client address, mod N)".to_string(),
                b => format!("{b} (SplitMix64 seeded by SEED)"),
            }
        )];
        if zones > 0 {
            notes.push(
                "Peak of one key per window: the most requests one key (one address, network… or the whole site for a site-wide limit) had let through in one window of the limit's length, windows aligned on the epoch (UTC); counted for the zones of the rule that decided.".to_string(),
            );
        }
        for c in cs {
            for p in &c.peaks {
                if p.fleet_peak > p.limit_count {
                    notes.push(format!(
                        "{} (zone {}): the fleet let {} requests of {} through in the window from {} (limit {} per {}); {} key windows over the limit, {} with the shared counter.",
                        c.label,
                        p.zone,
                        thousands(p.fleet_peak),
                        p.fleet_key.as_deref().unwrap_or("-"),
                        p.fleet_at.as_deref().unwrap_or("-"),
                        thousands(p.limit_count),
                        duration_label(p.window_ms as i64),
                        thousands(p.fleet_windows_over),
                        thousands(p.shared_windows_over)
                    ));
                }
            }
        }
        Section {
            title: Some(format!(
                "Fleet: {} servers with their own counters ({}) against one shared counter",
                self.servers, self.balance
            )),
            table: Some(t),
            notes,
        }
    }

    /// Extra CSV columns (one row per candidate in the same order).
    pub(super) fn csv_heads() -> [&'static str; 8] {
        [
            "fleet_servers",
            "fleet_balance",
            "fleet_admitted",
            "fleet_delayed",
            "fleet_refused",
            "fleet_admitted_beyond_limit",
            "fleet_peak_one_key",
            "shared_peak_one_key",
        ]
    }

    /// The CSV cells of candidate `c`.
    pub(super) fn csv_cells(&self, c: usize) -> Vec<Cell> {
        let Some(f) = self.candidates.get(c) else {
            return (0..8).map(|_| Cell::from("")).collect();
        };
        let peak = |g: &dyn Fn(&super::FleetPeak) -> u64| match f.peaks.iter().map(g).max() {
            Some(v) => Cell::count(v),
            None => Cell::from(""),
        };
        vec![
            Cell::count(self.servers as u64),
            Cell::from(self.balance.clone()),
            Cell::count(f.fleet.admitted),
            Cell::count(f.fleet.delayed),
            Cell::count(f.fleet.refused),
            Cell::count(f.admitted_beyond_limit),
            peak(&|p| p.fleet_peak),
            peak(&|p| p.shared_peak),
        ]
    }
}
