//! Rows taken to be replayed while they are read ([`Fed`]) and the names they carry.

use std::io;

use super::row::{RowMeta, Tables};
use super::run_buf::RunBuf;
use crate::replay::request::Request;

/// The names a [`Fed`] needs: the input files and the interned clients, methods,
/// hosts, agents, users and captured fields, as the store had them when it was taken (each [`Fed`]
/// carries those added since the one before).
#[derive(Default)]
pub struct FedNames {
    pub(super) files: Vec<String>,
    pub(super) tables: [Vec<Box<str>>; 6],
}

/// Rows taken by [`RowStore::take_before`](super::RowStore::take_before), in decision-time order, with their text
/// and the names interned since the rows taken before: replayable on another thread
/// (with one [`FedNames`] there, given every [`Fed`] in order).
#[derive(Default)]
pub struct Fed {
    /// Position of the first row in the whole order.
    pub(super) first: u64,
    pub(super) rows: RunBuf,
    pub(super) names: FedNames,
}

impl Fed {
    /// Calls `f` with every row, in order: its request (`index` its position in the
    /// whole order), report-side facts and file name. `names` is the replaying side's
    /// copy of the store's names, brought up to date first.
    pub fn replay(
        &self,
        names: &mut FedNames,
        mut f: impl FnMut(&Request<'_>, &RowMeta, &str) -> io::Result<()>,
    ) -> io::Result<()> {
        names.files.extend_from_slice(&self.names.files);
        for (all, new) in names.tables.iter_mut().zip(&self.names.tables) {
            all.extend_from_slice(new);
        }
        let [clients, method, host, agent, user, fields] = &names.tables;
        let tables = Tables {
            clients,
            method,
            host,
            agent,
            user,
            fields,
        };
        for (k, r) in self.rows.rows.iter().enumerate() {
            let (t, fs) = self.rows.held_text(r);
            let req = tables.request(self.first + k as u64, r, &t, fs);
            let file = names.files.get(r.file as usize).map_or("", String::as_str);
            f(&req, &r.meta(), file)?;
        }
        Ok(())
    }
}
