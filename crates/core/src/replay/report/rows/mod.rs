//! The selected rows of a replay, held compactly (only the fields the candidates read)
//! and put in decision-time order ([`super::super::ReplayOrder`]) before they are fed.
//!
//! Inputs reach a report per file, in file order, not in one global time order (two
//! servers' logs, rotated files given newest first, dataset parts by month), so a
//! replay first collects what it needs from every selected row — about 80 bytes a row
//! plus any text field a matcher or key reads. In bounded memory: where the reader
//! knows that no older row is still to come (a dataset's recorded time ranges), the
//! rows before that time are taken in order and replayed at once
//! ([`RowStore::take_before`], their clients counted by [`clients`]);
//! otherwise, at a run size the rows held are sorted and written to a temporary file
//! ([`spill`]), and the runs are merged back when the replay reads them. Either way in
//! exactly the order of one sort of every row (decision time, then input order: a
//! total order, ties broken by run).

mod clients;
mod fed;
mod internal;
mod merge;
mod needs;
mod row;
mod run_buf;
mod spill;
mod store;
mod text;
mod who;
mod writer;

pub use fed::{Fed, FedNames};
pub use internal::InternalMarks;
pub use needs::Needs;
pub use row::RowMeta;
pub use store::{RowInput, RowStore, SpillOptions};
pub use who::Who;

#[cfg(test)]
mod tests;
