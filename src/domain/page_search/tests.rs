use super::*;

/// A list of `n` records, `per` a page, record i created at `t(i)`, oldest first.
fn pages(n: u64, per: u64, t: impl Fn(u64) -> i64) -> Vec<Vec<i64>> {
    (0..n.div_ceil(per))
        .map(|p| (p * per..((p + 1) * per).min(n)).map(&t).collect())
        .collect()
}

/// Runs the search over `list` (page 1 first); returns the range and the pages probed.
fn search(list: &[Vec<i64>], cutoff: i64) -> Result<(RangeInclusive<u64>, usize), Contradiction> {
    let mut s = PageSearch::new(list.len() as u64, cutoff, &list[0], 0)?;
    let mut probes = 0;
    while let Some(&p) = s.next_probes(1).first() {
        probes += 1;
        assert!(probes < 200, "the search does not end");
        s.observe(p, &list[(p - 1) as usize], 0)?;
    }
    // The caller reads the range, observing every page.
    let range = s.range();
    for p in range.clone() {
        s.observe(p, &list[(p - 1) as usize], 0)?;
    }
    Ok((range, probes))
}

/// Every page holding a record at or after `cutoff` is in `range`.
fn covers(list: &[Vec<i64>], cutoff: i64, range: &RangeInclusive<u64>) -> bool {
    list.iter()
        .enumerate()
        .filter(|(_, p)| p.iter().any(|&t| t >= cutoff))
        .all(|(i, _)| range.contains(&(i as u64 + 1)))
}

#[test]
fn oldest_first_finds_the_first_page_of_the_window_in_log_pages() {
    let list = pages(100_000, 15, |i| i as i64 * 10);
    for cutoff in [0, 5, 150, 500_000, 999_990, 999_995, 2_000_000] {
        let (range, probes) = search(&list, cutoff).unwrap();
        assert!(covers(&list, cutoff, &range), "{cutoff}: {range:?}");
        let window = list
            .iter()
            .filter(|p| p.iter().any(|&t| t >= cutoff))
            .count() as u64;
        // The window's pages plus at most one page before it.
        assert!(
            range.clone().count() as u64 <= window + 1,
            "{cutoff}: {range:?}"
        );
        assert!(probes <= 2 * 13 + 2, "{cutoff}: {probes} probes");
    }
}

#[test]
fn newest_first_is_the_mirror_image() {
    let mut list: Vec<i64> = (0..100_000).map(|i| i * 10).collect();
    list.reverse();
    let list: Vec<Vec<i64>> = list.chunks(15).map(|c| c.to_vec()).collect();
    for cutoff in [0, 150, 500_000, 999_990, 2_000_000] {
        let (range, probes) = search(&list, cutoff).unwrap();
        assert!(covers(&list, cutoff, &range), "{cutoff}: {range:?}");
        assert_eq!(*range.start(), 1);
        assert!(probes <= 2 * 13 + 2, "{cutoff}: {probes} probes");
    }
}

#[test]
fn equal_times_across_page_boundaries_are_not_lost() {
    // 40 pages where the cutoff's time fills pages 10 to 14 entirely.
    let list = pages(600, 15, |i| match i {
        0..135 => i as i64,
        135..225 => 5_000,
        _ => 5_000 + i as i64,
    });
    let (range, _) = search(&list, 5_000).unwrap();
    assert!(covers(&list, 5_000, &range), "{range:?}");
    assert!(range.contains(&10));
    // Every page the same time: cannot tell the order, reads everything.
    let flat = pages(60, 15, |_| 7);
    let (range, probes) = search(&flat, 7).unwrap();
    assert_eq!((range, probes), (1..=4, 1));
}

#[test]
fn a_shuffled_list_is_a_contradiction() {
    // Pages 41 and 121 swapped: the range read (from about page 100) meets page 121.
    let mut list = pages(3_000, 15, |i| i as i64);
    list.swap(40, 120);
    let e = search(&list, 1_500).unwrap_err();
    assert!(e.reason.contains("disagrees"), "{e:?}");
    let unsorted = vec![vec![1, 3, 2], vec![4, 5, 6]];
    let e = search(&unsorted, 4).unwrap_err();
    assert_eq!(e.page, 1);
    assert!(e.reason.contains("not sorted"), "{e:?}");
}

#[test]
fn concurrent_probes_stay_within_two_log2_pages() {
    let list = pages(1_000_000, 15, |i| i as i64);
    let n = list.len() as u64;
    for cutoff in [0, 10, 333_333, 990_000, 999_999, 5_000_000] {
        let mut s = PageSearch::new(n, cutoff, &list[0], 0).unwrap();
        let (mut probed, mut rounds) = (0, 0);
        loop {
            let probes = s.next_probes(3);
            if probes.is_empty() {
                break;
            }
            rounds += 1;
            probed += probes.len();
            for p in probes {
                s.observe(p, &list[(p - 1) as usize], 0).unwrap();
            }
        }
        let range = s.range();
        assert!(covers(&list, cutoff, &range), "{cutoff}: {range:?}");
        let log2 = (n as f64).log2().ceil() as usize;
        assert!(probed <= 2 * log2, "{cutoff}: {probed} probes");
        assert!(rounds <= log2 / 2 + 1, "{cutoff}: {rounds} rounds");
    }
}

#[test]
fn pages_served_while_the_list_moved_are_not_compared() {
    // Newest first: page 2 read after 5 arrivals holds page 1's last 5 records.
    let mut s = PageSearch::new(10, 0, &[100, 99, 98, 97, 96, 95, 94, 93, 92, 91], 100).unwrap();
    assert!(s
        .observe(2, &[95, 94, 93, 92, 91, 90, 89, 88, 87, 86], 105)
        .is_ok());
    // The same pages at one size are a contradiction.
    let e = s
        .observe(3, &[92, 91, 90, 89, 88, 87, 86, 85, 84, 83], 100)
        .unwrap_err();
    assert_eq!(e.page, 3);
}

#[test]
fn short_and_empty_lists() {
    assert_eq!(search(&[vec![]], 10).unwrap(), (1..=1, 0));
    assert_eq!(search(&[vec![1, 2, 3]], 10).unwrap().0, 1..=1);
    let two = vec![vec![1, 2], vec![3, 4]];
    assert_eq!(search(&two, 3).unwrap().0, 1..=2);
    assert_eq!(search(&two, 100).unwrap().0, 2..=2, "the margin page only");
}

#[test]
fn page_direction_allows_ties_and_refuses_both_ways() {
    assert_eq!(page_direction(&[1, 1, 2]), Ok(Some(Direction::OldestFirst)));
    assert_eq!(page_direction(&[3, 3, 1]), Ok(Some(Direction::NewestFirst)));
    assert_eq!(page_direction(&[5, 5]), Ok(None));
    assert_eq!(page_direction(&[]), Ok(None));
    assert!(page_direction(&[1, 3, 2]).is_err());
}
