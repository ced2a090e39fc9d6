//! `logscope top`: the first-hour breakdowns — per path, status, referer, user agent,
//! address, prefix, host or method: requests, share, bytes, distinct clients, error
//! share (status ≥ 400), first and last seen — in a deterministic order.
//!
//! Work is per distinct value where the column is coded: a value slot of a batch is
//! resolved to its accumulator once (by string), then every row of that slot adds to it
//! by index, so no `String` is built per row. Distinct clients per value are exact up to
//! [`EXACT_CLIENTS`] (kept as 64-bit hashes of the client), then a HyperLogLog estimate
//! with 2^[`HLL_BITS`] one-byte registers (standard error about 2.3%), shown with `≈`:
//! each value's client tally is bounded (at most a few KiB) whatever the traffic.

mod acc;
mod by;
mod distinct;
mod hashes;
mod labels;
mod model;
mod part;
mod render;
mod tally;

pub use acc::TopAcc;
pub use by::{TopBy, TopSort};
pub use distinct::{Distinct, EXACT_CLIENTS, HLL_BITS, client_hash};
pub use hashes::Hashes;
pub use labels::{Span, bytes_label, clients_label, seen_label};
pub use model::{Breakdown, TopReport, TopRest, TopRow};
pub use part::TopPart;
pub use render::Columns;
pub use tally::{ERROR_STATUS, Tally};

/// No entry yet (a slot, status or code not met).
const UNSET: u32 = u32::MAX;

#[cfg(test)]
mod tests;
