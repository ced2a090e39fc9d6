//! Which text fields of a row the candidates read ([`Needs`]).

use crate::record::MAX_FIELDS;
use crate::replay::Policy;
use crate::replay::key::KeySpec;
use crate::replay::matcher::{Exempt, Matcher};
use crate::replay::spec::CostKind;

/// Which text fields the candidates read (matchers, exemptions, keys); the others are
/// not kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// Request method.
    pub method: bool,
    /// Path.
    pub path: bool,
    /// Query string.
    pub query: bool,
    /// Host.
    pub host: bool,
    /// User-Agent.
    pub agent: bool,
    /// Referer.
    pub referer: bool,
    /// Authenticated user.
    pub user: bool,
    /// The heavy class (a matcher's `heavy`): not a text field, so rows keep no text
    /// for it, but its columns (method, path, query) are read and classified.
    pub heavy: bool,
    /// The response size (a cost in bytes, or the log line a count filter rebuilds):
    /// not a text field either; without it the `bytes` column is not read.
    pub bytes: bool,
    /// Captured fields (`key=field:NAME`): how many slots of
    /// [`Request::fields`](crate::replay::Request::fields) are kept (every slot below
    /// the highest a key reads).
    pub fields: u8,
}

impl Needs {
    /// Every field.
    pub const ALL: Needs = Needs {
        method: true,
        path: true,
        query: true,
        host: true,
        agent: true,
        referer: true,
        user: true,
        heavy: true,
        bytes: true,
        fields: MAX_FIELDS as u8,
    };

    /// What `policies` read.
    pub fn of(policies: &[Policy]) -> Needs {
        let mut n = Needs::default();
        for p in policies {
            n.exempt(p.exempt());
            for r in p.rules() {
                n.matcher(&r.matcher);
                n.exempt(&r.exempt);
            }
            // Costs read numeric fields: request time is always kept, the size where a
            // cost is in bytes.
            for z in p.zones() {
                n.key(&z.spec().key);
                n.bytes |= z.spec().cost == CostKind::Bytes;
                if let Some(f) = z.count_filter() {
                    n.matcher(&f.matcher);
                    if f.reads_line() {
                        n.bytes = true;
                        // The rebuilt log line reads every text field.
                        n.method = true;
                        n.path = true;
                        n.query = true;
                        n.agent = true;
                        n.referer = true;
                        n.user = true;
                    }
                }
            }
            if let Some(prog) = p.program() {
                prog.matchers.iter().for_each(|m| n.matcher(m));
                prog.keys.iter().for_each(|k| n.key(k));
            }
        }
        n
    }

    /// Slots of captured fields kept, at most [`MAX_FIELDS`].
    pub(super) fn field_slots(&self) -> usize {
        usize::from(self.fields).min(MAX_FIELDS)
    }

    /// Whether any text field is kept.
    pub(super) fn any(&self) -> bool {
        Needs {
            heavy: false,
            bytes: false,
            ..*self
        } != Needs::default()
    }

    fn matcher(&mut self, m: &Matcher) {
        self.path |= !m.path_prefix.is_empty() || !m.path.is_empty() || m.path_regex.is_some();
        self.query |= m.query_regex.is_some();
        self.method |= !m.method.is_empty();
        self.host |= !m.host.is_empty();
        self.agent |= m.ua_regex.is_some();
        self.referer |= m.referer_regex.is_some() || m.has_referer.is_some();
        self.heavy |= m.heavy.is_some();
        for n in &m.not {
            self.matcher(n);
        }
    }

    fn exempt(&mut self, e: &Exempt) {
        self.agent |= e.ua_regex.is_some();
        self.user |= !e.users.is_empty();
    }

    fn key(&mut self, k: &KeySpec) {
        match k {
            KeySpec::Site
            | KeySpec::Ip
            | KeySpec::Prefix { .. }
            | KeySpec::Status
            | KeySpec::Asn(_) => {}
            KeySpec::Agent => self.agent = true,
            KeySpec::Host => self.host = true,
            KeySpec::User => self.user = true,
            KeySpec::Method => self.method = true,
            KeySpec::Path => self.path = true,
            KeySpec::Uri => {
                self.path = true;
                self.query = true;
            }
            KeySpec::Query => self.query = true,
            KeySpec::Referer => self.referer = true,
            KeySpec::Field(f) => self.fields = self.fields.max(f.slot.saturating_add(1)),
        }
    }
}
