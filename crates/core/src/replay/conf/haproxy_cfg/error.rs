//! What reading a haproxy.cfg reports: the error that stops it and the statements
//! left out.

use std::fmt;

/// A haproxy.cfg that could not be read: where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HaproxyCfgError {
    /// The file as given.
    pub file: String,
    /// The line (1-based; 0 = the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl std::error::Error for HaproxyCfgError {}

impl fmt::Display for HaproxyCfgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

/// A statement read but not replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    /// The file.
    pub file: String,
    /// The line (1-based).
    pub line: usize,
    /// The statement's first words.
    pub statement: String,
    /// Why it is left out and what that may change.
    pub why: String,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: not replayed: `{}`: {}",
            self.file, self.line, self.statement, self.why
        )
    }
}
