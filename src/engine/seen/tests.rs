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
