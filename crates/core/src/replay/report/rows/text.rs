//! Where a store keeps rows' text: interned names and a per-run arena.

use rustc_hash::FxHashMap;

use super::row::NONE;

/// Interned text: few distinct values (methods, hosts, agents, users).
#[derive(Default)]
pub(super) struct Interned {
    pub(super) ids: FxHashMap<Box<str>, u32>,
    pub(super) vals: Vec<Box<str>>,
}

impl Interned {
    pub(super) fn push(&mut self, v: Option<&str>) -> u32 {
        let Some(v) = v else { return NONE };
        if let Some(&i) = self.ids.get(v) {
            return i;
        }
        let i = self.vals.len() as u32;
        self.vals.push(v.into());
        self.ids.insert(v.into(), i);
        i
    }
}

/// Text stored as it comes (paths, queries, referers: mostly distinct), for one run.
#[derive(Default)]
pub(super) struct Arena {
    pub(super) data: Vec<u8>,
    pub(super) spans: Vec<(u64, u32)>,
}

impl Arena {
    pub(super) fn push(&mut self, v: Option<&str>) -> u32 {
        self.push_bytes(v.map(str::as_bytes))
    }

    pub(super) fn push_bytes(&mut self, v: Option<&[u8]>) -> u32 {
        let Some(v) = v else { return NONE };
        let start = self.data.len() as u64;
        self.data.extend_from_slice(v);
        self.spans.push((start, v.len() as u32));
        (self.spans.len() - 1) as u32
    }

    #[inline]
    pub(super) fn get(&self, i: u32) -> Option<&[u8]> {
        let &(s, l) = self.spans.get(i as usize)?;
        self.data.get(s as usize..s as usize + l as usize)
    }

    /// Bytes held.
    pub(super) fn held(&self) -> usize {
        self.data.len() + self.spans.len() * std::mem::size_of::<(u64, u32)>()
    }

    pub(super) fn clear(&mut self) {
        self.data.clear();
        self.spans.clear();
    }
}
