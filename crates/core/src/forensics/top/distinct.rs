//! Distinct clients ([`Distinct`]): a value's exact up to [`EXACT_CLIENTS`], then a
//! HyperLogLog sketch; a whole selection's always exact ([`Distinct::exact`]); and the
//! hash of a client key they count.

use super::super::mix64;
use super::hashes::Hashes;
use crate::classify::ClientKey;

/// Distinct clients of one value are counted exactly up to this many.
pub const EXACT_CLIENTS: usize = 256;

/// Register index bits of the HyperLogLog estimate beyond [`EXACT_CLIENTS`]: 2^11 = 2,048
/// registers of one byte, a standard error of 1.04/√2048 ≈ 2.3%.
pub const HLL_BITS: u32 = 11;

const REGISTERS: usize = 1 << HLL_BITS;

/// Distinct clients: exact (64-bit hashes) up to [`EXACT_CLIENTS`], then a HyperLogLog
/// sketch; or ([`Distinct::exact`]) exact however many.
#[derive(Clone, Debug)]
pub enum Distinct {
    /// Hashes of the clients seen (at most [`EXACT_CLIENTS`]).
    Exact(Hashes),
    /// HyperLogLog registers.
    Sketch(Box<[u8]>),
    /// Hashes of every client seen, never a sketch: the whole selection's count, so
    /// that a header's total is exact (16 bytes or so per distinct client).
    All(Hashes),
}

impl Default for Distinct {
    fn default() -> Self {
        Distinct::Exact(Hashes::default())
    }
}

impl Distinct {
    /// Distinct clients counted exactly however many there are.
    pub fn exact() -> Distinct {
        Distinct::All(Hashes::default())
    }

    /// Adds a client by its hash ([`client_hash`]); whether it may be new: `false` only
    /// when it was counted already (a sketch cannot tell, and says `true`).
    #[inline]
    pub fn insert(&mut self, h: u64) -> bool {
        match self {
            Distinct::Exact(s) => {
                let new = s.insert(h);
                if new && s.len() > EXACT_CLIENTS {
                    *self = Distinct::Sketch(sketch_of(s));
                }
                new
            }
            Distinct::Sketch(r) => {
                hll_add(r, h);
                true
            }
            Distinct::All(s) => s.insert(h),
        }
    }

    /// Adds every client of `other`: the same as inserting each of its clients (an
    /// exact count merged with a sketch becomes one).
    pub fn merge(&mut self, other: &Distinct) {
        match other {
            Distinct::Exact(s) | Distinct::All(s) => s.iter().for_each(|h| {
                self.insert(h);
            }),
            Distinct::Sketch(theirs) => {
                if let Distinct::Exact(s) | Distinct::All(s) = self {
                    *self = Distinct::Sketch(sketch_of(s));
                }
                if let Distinct::Sketch(r) = self {
                    for (a, &b) in r.iter_mut().zip(theirs.iter()) {
                        *a = (*a).max(b);
                    }
                }
            }
        }
    }

    /// The count, and whether it is an estimate.
    pub fn count(&self) -> (u64, bool) {
        match self {
            Distinct::Exact(s) | Distinct::All(s) => (s.len() as u64, false),
            Distinct::Sketch(r) => (hll_estimate(r).max(EXACT_CLIENTS as u64 + 1), true),
        }
    }
}

fn sketch_of(s: &Hashes) -> Box<[u8]> {
    let mut r = vec![0u8; REGISTERS].into_boxed_slice();
    for x in s.iter() {
        hll_add(&mut r, x);
    }
    r
}

#[inline]
fn hll_add(r: &mut [u8], h: u64) {
    let idx = (h >> (64 - HLL_BITS)) as usize;
    // The remaining bits, with a guard bit so that the rank is at most 64 - HLL_BITS + 1.
    let w = (h << HLL_BITS) | (1 << (HLL_BITS - 1));
    let rank = w.leading_zeros() as u8 + 1;
    if r[idx] < rank {
        r[idx] = rank;
    }
}

fn hll_estimate(r: &[u8]) -> u64 {
    let m = r.len() as f64;
    let alpha = 0.7213 / (1.0 + 1.079 / m);
    let mut sum = 0.0;
    let mut zeros = 0u32;
    for &x in r {
        sum += 1.0 / (1u64 << x) as f64;
        if x == 0 {
            zeros += 1;
        }
    }
    let e = alpha * m * m / sum;
    let e = if e <= 2.5 * m && zeros > 0 {
        m * (m / f64::from(zeros)).ln()
    } else {
        e
    };
    e.round() as u64
}

/// A 64-bit hash of a client key for [`Distinct`].
#[inline]
pub fn client_hash(k: ClientKey) -> u64 {
    match k {
        ClientKey::Net { hi, lo, len, v4 } => {
            mix64(lo ^ mix64(hi ^ (u64::from(len) << 1 | u64::from(v4))))
        }
        ClientKey::Name(i) => mix64(u64::from(i) ^ 0xa5a5_5a5a_0000_0000),
    }
}
