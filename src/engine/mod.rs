//! The query engine under the commands: which rows a report looks at ([`selection`],
//! [`clock`]), where they come from ([`rows`]: log files or the dataset, [`inputs`]),
//! the one interface every report is built on and its driver ([`report`]), the replay
//! pipeline ([`replay`]), the ingest into the dataset ([`ingest`]) and
//! following live logs into it ([`follow`]), and the errors
//! and exit statuses they share ([`error`]), and the JSON envelope every command's
//! result starts with ([`envelope`]).

pub mod clock;
pub mod envelope;
pub mod error;
pub mod follow;
pub mod ingest;
pub mod inputs;
pub mod replay;
pub mod report;
pub mod rows;
pub mod selection;
