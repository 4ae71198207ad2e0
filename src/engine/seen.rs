//! The records a run has examined, for `checked` ("distinct payment keys examined") and so that
//! a record listed twice (by both lists, or again on a page that shifted) is settled once.
//!
//! Exact, and 8 bytes per distinct record: a sorted `Vec<u64>` of fingerprints plus a small
//! hash set of the latest ones, merged into the vector when it fills. A `HashSet<u64>` of a
//! 1,000,000-record backfill held about 19 MiB, and 28 MiB while it grew; this holds 8 MiB.

use std::collections::HashSet;

/// Recent fingerprints kept in the hash set before they are merged into the sorted vector.
const RECENT: usize = 16_384;

#[derive(Debug, Default)]
pub(crate) struct SeenSet {
    sorted: Vec<u64>,
    recent: HashSet<u64>,
}

impl SeenSet {
    /// Adds `fingerprint`; false when it was already there.
    pub(crate) fn insert(&mut self, fingerprint: u64) -> bool {
        if self.sorted.binary_search(&fingerprint).is_ok() || !self.recent.insert(fingerprint) {
            return false;
        }
        if self.recent.len() >= RECENT {
            self.merge();
        }
        true
    }

    /// Whether `fingerprint` is there.
    pub(crate) fn contains(&self, fingerprint: u64) -> bool {
        self.sorted.binary_search(&fingerprint).is_ok() || self.recent.contains(&fingerprint)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.sorted.len() + self.recent.len()
    }

    /// Merges the recent fingerprints into the sorted vector, in place from the back, so that
    /// the vector grows by exactly what it takes in (no doubling, no second copy).
    fn merge(&mut self) {
        let mut add: Vec<u64> = self.recent.drain().collect();
        add.sort_unstable();
        let old = self.sorted.len();
        self.sorted.reserve_exact(add.len());
        self.sorted.resize(old + add.len(), 0);
        let (mut i, mut j, mut k) = (old, add.len(), old + add.len());
        while j > 0 {
            k -= 1;
            if i > 0 && self.sorted[i - 1] > add[j - 1] {
                self.sorted[k] = self.sorted[i - 1];
                i -= 1;
            } else {
                self.sorted[k] = add[j - 1];
                j -= 1;
            }
        }
    }
}

/// The fingerprint of a payment read on chain at `key` in the block of `block_hash` (the
/// run's `placed` set: the sweep skips a row a provider's part read there in the same run).
pub(crate) fn placed_fingerprint(key: &crate::domain::PaymentKey, block_hash: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    block_hash.hash(&mut h);
    h.finish()
}

/// Whether `row`'s payment was read on chain in this run where the row holds it.
pub(crate) fn was_placed(
    placed: &std::sync::Mutex<SeenSet>,
    row: &crate::domain::LedgerRow,
) -> bool {
    let (Some(key), Some(block)) = (&row.key, &row.block) else {
        return false;
    };
    if block.hash.is_empty() {
        return false;
    }
    let fp = placed_fingerprint(key, &block.hash);
    placed
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(fp)
}

#[cfg(test)]
mod tests;
