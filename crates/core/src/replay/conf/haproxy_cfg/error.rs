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

/// Why a track key, an ACL criterion or a condition is not replayed (the statement is
/// then left out, with this as its reason).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotReplayed {
    /// A track key other than the supported ones.
    TrackKey(String),
    /// A track key of a header the log does not carry.
    TrackHeader {
        /// The key as written.
        key: String,
        /// The header.
        header: String,
    },
    /// `always_true` / `always_false`, written TRUE/FALSE here.
    Constant(String),
    /// A regex the engine rejects (its message).
    BadRegex(String),
    /// A match method not replayed for that fetch.
    Match {
        /// The fetch.
        fetch: String,
        /// The match method.
        how: String,
    },
    /// A `src` value that is not an address or network.
    NotAddress(String),
    /// A header fetch without its header name.
    NoHeaderName(String),
    /// A header the log does not carry.
    HeaderNotLogged {
        /// The fetch.
        fetch: String,
        /// The header.
        header: String,
    },
    /// Any other ACL criterion.
    Criterion(String),
    /// `-f` / `-M`: values from a file.
    FromFile {
        /// The fetch.
        fetch: String,
        /// The flag.
        flag: String,
    },
    /// A counter compared with a range.
    Range {
        /// The fetch.
        fetch: String,
        /// The range.
        value: String,
    },
    /// A counter read from another table.
    OtherTable(String),
    /// A fetch of a counter or table not replayed.
    Fetch(String),
    /// An ACL whose criterion is not replayed.
    Acl {
        /// The ACL's name.
        name: String,
        /// Why.
        why: Box<NotReplayed>,
    },
}

impl fmt::Display for NotReplayed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotReplayed::TrackKey(k) => write!(
                f,
                "track key `{k}` is not replayed (supported: src, src,ipmask(N), str(…), req.hdr(user-agent), req.hdr(referer), path, url)"
            ),
            NotReplayed::TrackHeader { key, header } => write!(
                f,
                "track key `{key}`: the header `{header}` is not in the log (only User-Agent and Referer can be keys)"
            ),
            NotReplayed::Constant(fetch) => write!(f, "`{fetch}` is written TRUE/FALSE here"),
            NotReplayed::BadRegex(e) => write!(f, "bad regex: {e}"),
            NotReplayed::Match { fetch, how } => {
                write!(f, "`{fetch}` with match `{how}` is not replayed")
            }
            NotReplayed::NotAddress(v) => write!(f, "`src {v}`: not an address or network"),
            NotReplayed::NoHeaderName(fetch) => {
                write!(f, "`{fetch}` without a header name is not replayed")
            }
            NotReplayed::HeaderNotLogged { fetch, header } => write!(
                f,
                "`{fetch}`: the header `{header}` is not in the log (User-Agent and Referer are)"
            ),
            NotReplayed::Criterion(fetch) => {
                write!(f, "the ACL criterion `{fetch}` is not replayed")
            }
            NotReplayed::FromFile { fetch, flag } => {
                write!(f, "`{fetch} {flag}` reads values from a file, not replayed")
            }
            NotReplayed::Range { fetch, value } => {
                write!(f, "`{fetch} {value}`: ranges are not replayed")
            }
            NotReplayed::OtherTable(fetch) => write!(
                f,
                "`{fetch}`: a counter read from another table is not replayed"
            ),
            NotReplayed::Fetch(fetch) => write!(f, "`{fetch}` is not replayed"),
            NotReplayed::Acl { name, why } => write!(f, "acl `{name}`: {why}"),
        }
    }
}

impl std::error::Error for NotReplayed {}
