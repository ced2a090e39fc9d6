//! The result of `logscope block`: the entries found by [`super::block::plan`], what
//! they stop and touch — counted again over the rows with the entries as a filter, to
//! confirm the search — and its page.

use serde::Serialize;

use super::block::EntryRow;
use super::doc::{Doc, Section};
use crate::number::{pct1, share, thousands};
use crate::table::{Align, Cell, Table};

/// The block and its effect (`block` in the JSON).
#[derive(Clone, Debug, Serialize)]
pub struct Block {
    /// The networks, the most requests stopped first.
    pub entries: Vec<EntryRow>,
    /// Share of the requests to stop that the entries stop (0–1), counted over the rows.
    pub stopped_share: f64,
    /// Share of the requests to keep that the entries touch (0–1), counted over the rows.
    pub collateral_share: f64,
    /// Share of the other requests of the window that the entries touch (0–1).
    pub other_share: f64,
    /// Requests to stop the entries stop.
    pub stopped: u64,
    /// Requests to keep the entries touch.
    pub collateral: u64,
    /// Other requests the entries touch.
    pub other: u64,
    /// Whether the target was met within the collateral budget.
    pub met: bool,
}

/// The result of `logscope block`.
#[derive(Clone, Debug, Serialize)]
pub struct BlockReport {
    /// The filter, described (in the JSON envelope).
    #[serde(skip)]
    pub selection: String,
    /// The window's start (RFC 3339 in the report's zone; `None`: the log's start).
    pub since: Option<String>,
    /// The window's end (exclusive; `None`: the log's end).
    pub until: Option<String>,
    /// Requests of the window to stop (the selection, less those to keep).
    pub stop_requests: u64,
    /// Requests of the window that must not be hurt.
    pub keep_requests: u64,
    /// The other requests of the window.
    pub other_requests: u64,
    /// Requests to stop from clients without an address (no network can stop them).
    pub stop_without_address: u64,
    /// What is kept: `identified`, `verified crawlers`, `baseline clients`, `--keep`.
    pub keeping: Vec<String>,
    /// The target share to stop (0–1).
    pub target: f64,
    /// The most of the kept requests that may be touched (0–1).
    pub max_collateral: f64,
    /// The least share of an entry's requests that must be the selection (0–1).
    pub purity: f64,
    /// The block.
    pub block: Block,
}

impl BlockReport {
    /// The report for people.
    pub fn doc(&self) -> Doc {
        let b = &self.block;
        let mut lines = vec![
            format!(
                "selection: {} from {} to {}",
                self.selection,
                self.since.as_deref().unwrap_or("the start"),
                self.until.as_deref().unwrap_or("the end")
            ),
            format!(
                "to stop: {} requests; to keep ({}): {}; other: {}",
                thousands(self.stop_requests),
                if self.keeping.is_empty() {
                    "nothing named".to_string()
                } else {
                    self.keeping.join(", ")
                },
                thousands(self.keep_requests),
                thousands(self.other_requests)
            ),
            format!(
                "{} {} stop {} of the requests to stop ({}; target {}), touching {} of those to keep ({}; at most {}) and {} of the others ({})",
                b.entries.len(),
                if b.entries.len() == 1 {
                    "entry"
                } else {
                    "entries"
                },
                pct1(b.stopped, self.stop_requests),
                thousands(b.stopped),
                pct(self.target),
                pct1(b.collateral, self.keep_requests),
                thousands(b.collateral),
                pct(self.max_collateral),
                pct1(b.other, self.other_requests),
                thousands(b.other)
            ),
        ];
        if !b.met {
            lines.push(format!(
                "The target is not met: no further network is at least {} the selection and within the collateral budget.",
                pct(self.purity)
            ));
        }
        if self.stop_without_address > 0 {
            lines.push(format!(
                "{} requests to stop came from clients logged without an address: no network stops them.",
                thousands(self.stop_without_address)
            ));
        }
        let mut t = Table::new(&[
            ("network", Align::Left),
            ("AS", Align::Left),
            ("stopped", Align::Right),
            ("share", Align::Right),
            ("collateral", Align::Right),
            ("other", Align::Right),
            ("clients", Align::Right),
        ])
        .with_csv_headers(&[
            "network",
            "as_name",
            "stopped",
            "stopped_share",
            "collateral",
            "other",
            "clients",
        ]);
        for e in &b.entries {
            t.row([
                Cell::from(e.network.clone()),
                Cell::from(e.as_name.clone().unwrap_or_default()),
                Cell::count(e.stopped),
                Cell::fraction(
                    share(e.stopped, self.stop_requests),
                    pct1(e.stopped, self.stop_requests),
                ),
                Cell::count(e.collateral),
                Cell::count(e.other),
                Cell::count(e.clients),
            ]);
        }
        Doc {
            title: "The smallest block".into(),
            lines,
            sections: vec![Section {
                title: Some("Entries (each counted alone)".into()),
                table: Some(t),
                notes: vec![
                    "The shares above are counted again over the rows with these entries as a filter. Write the block for a server with --emit nginx|haproxy|caddy|nftables|fail2ban."
                        .into(),
                ],
            }],
            csv_section: 0,
            csv: None,
            figure: None,
            figures: Vec::new(),
        }
    }
}

fn pct(f: f64) -> String {
    let p = f * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{}%", p.round())
    } else {
        format!("{p:.1}%")
    }
}

impl super::doc::Document for BlockReport {
    fn doc(&self, _width: usize) -> Doc {
        BlockReport::doc(self)
    }
}
