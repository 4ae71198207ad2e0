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
mod tests {
    use super::*;

    /// A fixed pseudo-random sequence (splitmix64) in which every seventh value repeats an
    /// earlier one, often from before the last merge.
    fn sequence(n: usize) -> Vec<u64> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut out: Vec<u64> = Vec::with_capacity(n);
        for i in 0..n {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            let z = z ^ (z >> 31);
            let v = if i % 7 == 6 {
                out[(z % i as u64) as usize]
            } else {
                z
            };
            out.push(v);
        }
        out
    }

    #[test]
    fn agrees_with_a_hash_set_across_merges() {
        let mut seen = SeenSet::default();
        let mut reference = HashSet::new();
        for (i, f) in sequence(5 * RECENT + 123).into_iter().enumerate() {
            assert_eq!(seen.insert(f), reference.insert(f), "value {i} ({f})");
        }
        assert_eq!(seen.len(), reference.len());
        assert!(reference.len() < 5 * RECENT, "the sequence repeats values");
        assert!(
            seen.sorted.windows(2).all(|w| w[0] < w[1]),
            "sorted, no repeats"
        );
        assert!(seen.sorted.len() >= 4 * RECENT, "merged into the vector");
        // Everything inserted is found again, whichever part holds it.
        for f in reference {
            assert!(!seen.insert(f));
        }
    }

    #[test]
    fn holds_eight_bytes_per_fingerprint_once_merged() {
        let mut seen = SeenSet::default();
        for f in 0..(8 * RECENT as u64) {
            seen.insert(f.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        }
        assert_eq!(seen.sorted.len(), 8 * RECENT);
        assert_eq!(
            seen.sorted.capacity(),
            8 * RECENT,
            "grown exactly, not doubled"
        );
        assert!(seen.recent.is_empty());
    }
}
