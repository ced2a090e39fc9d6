//! The tallies of one value ([`Tally`]) and the sums of one key's rows of a batch.

use super::distinct::Distinct;

/// The status at or above which a request counts as an error (4xx and 5xx).
pub const ERROR_STATUS: u16 = 400;

/// The tallies of one value (or of everything).
#[derive(Clone, Debug)]
pub struct Tally {
    /// Requests.
    pub requests: u64,
    /// Body bytes (a `-` counts 0).
    pub bytes: u64,
    /// Requests with status ≥ 400.
    pub errors: u64,
    /// Earliest arrival, UTC ms.
    pub first_ms: i64,
    /// Latest arrival, UTC ms.
    pub last_ms: i64,
    /// Distinct clients.
    pub clients: Distinct,
    last_client: u64,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            requests: 0,
            bytes: 0,
            errors: 0,
            first_ms: i64::MAX,
            last_ms: i64::MIN,
            clients: Distinct::default(),
            last_client: 0,
        }
    }
}

impl Tally {
    /// Tallies whose distinct clients are counted exactly however many
    /// ([`Distinct::exact`]): a whole selection's.
    pub fn exact() -> Tally {
        Tally {
            clients: Distinct::exact(),
            ..Tally::default()
        }
    }

    /// Adds one request; `client`: its [`client_hash`](super::client_hash) when clients
    /// are counted. Whether the client may be new here (`false` when it is known to
    /// have been counted, or none was given).
    #[inline]
    pub fn add(
        &mut self,
        ts_ms: i64,
        status: u16,
        bytes: Option<u64>,
        client: Option<u64>,
    ) -> bool {
        self.add_sums(&Sums::one(ts_ms, status, bytes));
        if let Some(h) = client
            && (self.last_client != h || self.requests == 1)
        {
            self.last_client = h;
            return self.clients.insert(h);
        }
        false
    }

    /// Adds `o`'s requests and clients: the same as adding each of its requests (the
    /// distinct clients as [`Distinct::merge`]).
    pub fn merge(&mut self, o: &Tally) {
        if o.requests == 0 {
            return;
        }
        if self.requests == 0 {
            self.last_client = o.last_client;
        }
        if self.requests == 0 || o.first_ms < self.first_ms {
            self.first_ms = o.first_ms;
        }
        if self.requests == 0 || o.last_ms > self.last_ms {
            self.last_ms = o.last_ms;
        }
        self.requests += o.requests;
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.errors += o.errors;
        self.clients.merge(&o.clients);
    }

    /// Adds the requests of `s` (their clients apart): the same as adding each of them.
    #[inline]
    pub(super) fn add_sums(&mut self, s: &Sums) {
        if s.requests == 0 {
            return;
        }
        if self.requests == 0 || s.first_ms < self.first_ms {
            self.first_ms = s.first_ms;
        }
        if self.requests == 0 || s.last_ms > self.last_ms {
            self.last_ms = s.last_ms;
        }
        self.requests += u64::from(s.requests);
        self.bytes = self.bytes.saturating_add(s.bytes);
        self.errors += u64::from(s.errors);
    }
}

/// The counts of one key's rows in a [`TopPart`](super::TopPart), or of one request.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sums {
    pub(super) requests: u32,
    pub(super) errors: u32,
    pub(super) bytes: u64,
    pub(super) first_ms: i64,
    pub(super) last_ms: i64,
}

impl Sums {
    pub(super) const ZERO: Sums = Sums {
        requests: 0,
        bytes: 0,
        errors: 0,
        first_ms: i64::MAX,
        last_ms: i64::MIN,
    };

    /// The sums of one request.
    #[inline]
    fn one(ts_ms: i64, status: u16, bytes: Option<u64>) -> Sums {
        let mut s = Sums::ZERO;
        s.add(ts_ms, status, bytes);
        s
    }

    #[inline]
    pub(super) fn add(&mut self, ts_ms: i64, status: u16, bytes: Option<u64>) {
        self.first_ms = self.first_ms.min(ts_ms);
        self.last_ms = self.last_ms.max(ts_ms);
        self.requests += 1;
        self.bytes = self.bytes.saturating_add(bytes.unwrap_or(0));
        self.errors += u32::from(status >= ERROR_STATUS);
    }
}
