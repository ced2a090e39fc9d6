//! The one JSON envelope: every command's JSON starts with the same keys — `schema`
//! (the command's result type and its version), `selection`, `tz` and `inputs` — and
//! its own keys follow ([`Enveloped`]). Times in every JSON result are RFC 3339 strings
//! with milliseconds in the result's zone (`2026-09-25T14:00:00.000+09:00`, `Z` in
//! UTC): `logscope_core::time::local_rfc3339_ms`.

use serde::Serialize;

use super::rows::{InputReport, RowStats};

/// The version of every schema below: raised when a key is renamed or removed, or its
/// meaning changes (a key added keeps it).
pub const SCHEMA_VERSION: u32 = 1;

/// What the JSON is: a command's result type and its version.
#[derive(Debug, Clone, Serialize)]
pub struct Schema {
    /// `logscope.top`, `logscope.heavy`, … (`logscope.` + the command).
    pub name: String,
    /// [`SCHEMA_VERSION`].
    pub version: u32,
}

/// Where the rows came from.
#[derive(Debug, Clone, Serialize)]
pub struct Inputs {
    /// `dataset`, `files` (log files given as arguments) or `none`.
    pub kind: &'static str,
    /// The origin as the text header shows it (`dataset`, `a.log, b.log`).
    pub origin: String,
    /// Rows of the whole dataset snapshot (over the dataset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataset_rows: Option<u64>,
    /// What the FILE arguments yielded: lines, records, bad lines (per reason, the
    /// first one located), damage, and per file.
    #[serde(flatten)]
    pub files: Option<InputReport>,
}

/// The keys every command's JSON starts with.
#[derive(Debug, Clone, Serialize)]
pub struct Envelope {
    /// What the JSON is.
    pub schema: Schema,
    /// The selection, described (filters, period); `null` for commands that select
    /// no rows (`ingest`, `info`, `detect`, `sql`).
    pub selection: Option<String>,
    /// The zone of the result's local times (`UTC`, `Asia/Seoul`, `+09:00`); `null`
    /// where the result has no local time.
    pub tz: Option<String>,
    /// Where the rows came from.
    pub inputs: Inputs,
}

impl Envelope {
    /// The envelope of a report of `command` over the selection `selection`
    /// ([`super::selection::Selection::describe`]) in zone `tz`, whose read found `stats`.
    pub fn report(command: &str, selection: &str, tz: &str, stats: &RowStats) -> Envelope {
        Envelope {
            schema: schema(command),
            selection: Some(selection.to_string()),
            tz: Some(tz.to_string()),
            inputs: Inputs::of(stats),
        }
    }

    /// The envelope of a command that selects no rows and has no clock.
    pub fn plain(command: &str, inputs: Inputs) -> Envelope {
        Envelope {
            schema: schema(command),
            selection: None,
            tz: None,
            inputs,
        }
    }

    /// What the FILE arguments yielded, if the rows came from files.
    pub fn input(&self) -> Option<&InputReport> {
        self.inputs.files.as_ref()
    }

    /// `body` (which serializes as an object) after the envelope's keys.
    pub fn wrap<'a, T: Serialize>(&'a self, body: &'a T) -> Enveloped<'a, T> {
        Enveloped {
            envelope: self,
            body,
        }
    }
}

impl Inputs {
    /// The inputs a read found.
    pub fn of(stats: &RowStats) -> Inputs {
        Inputs {
            kind: if stats.input.is_some() {
                "files"
            } else {
                "dataset"
            },
            origin: stats.origin.clone(),
            dataset_rows: stats.dataset_rows,
            files: stats.input.clone(),
        }
    }

    /// The dataset, not read (`info`, `sql` name it).
    pub fn dataset(origin: &str) -> Inputs {
        Inputs {
            kind: "dataset",
            origin: origin.to_string(),
            dataset_rows: None,
            files: None,
        }
    }

    /// Files named on the command line, not read as a report reads them (`ingest`,
    /// `detect`).
    pub fn files(origin: &str) -> Inputs {
        Inputs {
            kind: "files",
            origin: origin.to_string(),
            dataset_rows: None,
            files: None,
        }
    }
}

fn schema(command: &str) -> Schema {
    Schema {
        name: format!("logscope.{command}"),
        version: SCHEMA_VERSION,
    }
}

/// A result after the envelope's keys (see [`Envelope::wrap`]).
#[derive(Serialize)]
pub struct Enveloped<'a, T: Serialize> {
    #[serde(flatten)]
    envelope: &'a Envelope,
    #[serde(flatten)]
    body: &'a T,
}
