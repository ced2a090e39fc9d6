//! An exact set of client hashes ([`Hashes`]).

/// A set of client hashes, which are mixed already: open addressing on the hash's own
/// low bits with linear probing, no hash of the hash and no separate control bytes (0
/// marks a free slot; a 0 hash is a flag of its own). At most one past half full. The
/// first hash is kept inline, so a value with one client (every address of `top --by
/// ip`) allocates nothing.
#[derive(Clone, Debug, Default)]
pub struct Hashes {
    slots: Vec<u64>,
    /// The one non-zero hash while `slots` is unallocated (0: none).
    first: u64,
    len: u32,
    zero: bool,
}

impl Hashes {
    /// Adds `h`; whether it was new.
    #[inline]
    pub fn insert(&mut self, h: u64) -> bool {
        if h == 0 {
            let new = !self.zero;
            self.zero = true;
            self.len += u32::from(new);
            return new;
        }
        if self.slots.is_empty() {
            if self.first == 0 {
                self.first = h;
                self.len += 1;
                return true;
            }
            if self.first == h {
                return false;
            }
        }
        // Grown once more than half full, so a free slot always ends a probe; the
        // 257th client (the switch to the sketch) still fits in 512 slots.
        if self.slots.is_empty() || 2 * self.len as usize > self.slots.len() {
            self.grow();
        }
        let new = Self::place(&mut self.slots, h);
        self.len += u32::from(new);
        new
    }

    #[inline]
    fn place(slots: &mut [u64], h: u64) -> bool {
        let mask = slots.len() - 1;
        let mut i = h as usize & mask;
        loop {
            match slots[i] {
                0 => {
                    slots[i] = h;
                    return true;
                }
                x if x == h => return false,
                _ => i = (i + 1) & mask,
            }
        }
    }

    #[cold]
    fn grow(&mut self) {
        let mut slots = vec![0u64; (2 * self.slots.len()).max(8)];
        for &x in self.slots.iter().filter(|&&x| x != 0) {
            Self::place(&mut slots, x);
        }
        if self.first != 0 {
            Self::place(&mut slots, self.first);
            self.first = 0;
        }
        self.slots = slots;
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Each hash once, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.zero
            .then_some(0)
            .into_iter()
            .chain((self.first != 0).then_some(self.first))
            .chain(self.slots.iter().copied().filter(|&x| x != 0))
    }
}
