//! The boundary search over a long, unfiltered provider list (docs/configuration.md,
//! "Long notification lists"), as a pure state machine: which page to probe next, what the
//! pages read say about the list's order, and which pages a run must read to see every record
//! created at or after `cutoff` (`since - list_margin`). The order is detected from the pages,
//! never assumed: a page that is not sorted one way (ties allowed), or that disagrees with a
//! page read before it, is a `Contradiction`, and the caller reads the list whole.
//!
//! Times are Unix milliseconds of the records' `created_at`, in page order (records whose
//! time could not be read are left out by the caller). No IO here.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

/// The order a list is served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Page 1 holds the oldest records (Chaingateway's published behaviour).
    OldestFirst,
    /// Page 1 holds the newest.
    NewestFirst,
}

impl std::fmt::Display for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Direction::OldestFirst => "oldest first",
            Direction::NewestFirst => "newest first",
        })
    }
}

/// Why the search gave up: the list is read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contradiction {
    /// The page that showed it.
    pub page: u64,
    pub reason: String,
}

/// The direction a page's times are sorted in: `Ok(None)` when they cannot tell (fewer than
/// two distinct times), `Err` when they go both ways.
pub fn page_direction(times: &[i64]) -> Result<Option<Direction>, String> {
    let (mut up, mut down) = (false, false);
    for w in times.windows(2) {
        up |= w[1] > w[0];
        down |= w[1] < w[0];
    }
    match (up, down) {
        (true, true) => Err("its records are not sorted by created_at".into()),
        (true, false) => Ok(Some(Direction::OldestFirst)),
        (false, true) => Ok(Some(Direction::NewestFirst)),
        (false, false) => Ok(None),
    }
}

/// A page read during the search: the range of its times, and the list's size when it was
/// served (pages served at different sizes of a list that moves are not compared: records
/// moved between them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    min: i64,
    max: i64,
    epoch: u64,
}

/// The search over pages `1..=last` for the first (oldest-first) or last (newest-first) page
/// that can hold a record created at or after `cutoff`.
#[derive(Debug, Clone)]
pub struct PageSearch {
    last: u64,
    cutoff: i64,
    direction: Option<Direction>,
    /// Pages read so far with times (empty pages carry none).
    spans: BTreeMap<u64, Span>,
    /// Oldest-first: the smallest page known to reach the cutoff (`last + 1`: none known).
    /// Newest-first: the largest page known to reach it (0: none known).
    bound: u64,
    /// The other side: oldest-first, the largest page known to end before the cutoff (0);
    /// newest-first, the smallest page known to end before it (`last + 1`).
    before: u64,
}

impl PageSearch {
    /// Starts from page 1 (which tells `last`). `last` of 0 is an empty list.
    pub fn new(
        last: u64,
        cutoff: i64,
        page1: &[i64],
        epoch: u64,
    ) -> Result<PageSearch, Contradiction> {
        let last = last.max(1);
        let mut s = PageSearch {
            last,
            cutoff,
            direction: None,
            spans: BTreeMap::new(),
            bound: 0,
            before: 0,
        };
        s.observe(1, page1, epoch)?;
        Ok(s)
    }

    pub fn direction(&self) -> Option<Direction> {
        self.direction
    }

    /// Up to `k` pages the search needs next, to be fetched at once: they split the pages
    /// not yet known into `k + 1` even parts (a `k + 1`-ary search: about
    /// `k · log_{k+1}(pages)` pages in `log_{k+1}(pages)` rounds). Empty when `range` is final.
    pub fn next_probes(&self, k: usize) -> Vec<u64> {
        let Some(dir) = self.direction else {
            // Page 1 could not tell the order: the last page can (unless it is page 1).
            let last = self.last > 1 && !self.spans.contains_key(&self.last);
            return if last { vec![self.last] } else { Vec::new() };
        };
        let (lo, hi) = self.open(dir);
        let width = hi.saturating_sub(lo);
        let k = (k.max(1) as u64).min(width);
        let mut probes: Vec<u64> = (1..=k).map(|i| lo + (width * i) / (k + 1)).collect();
        probes.dedup();
        probes
    }

    /// The pages not yet known, as a half-open interval `[lo, hi)` of candidates.
    fn open(&self, dir: Direction) -> (u64, u64) {
        match dir {
            // Pages <= before end before the cutoff; pages >= bound reach it.
            Direction::OldestFirst => (self.before + 1, self.bound.min(self.last + 1)),
            // Pages <= bound reach it; pages >= before end before it.
            Direction::NewestFirst => (self.bound + 1, self.before.min(self.last + 1)),
        }
    }

    /// Takes in one page read (probed, or read for the range) and the list's size as that
    /// page reported it (`epoch`). A page must agree with the order and with every page read
    /// before it at the same size.
    pub fn observe(&mut self, page: u64, times: &[i64], epoch: u64) -> Result<(), Contradiction> {
        let contra = |reason: String| Contradiction { page, reason };
        let own = page_direction(times).map_err(contra)?;
        let span = match (times.iter().min(), times.iter().max()) {
            (Some(&min), Some(&max)) => Span { min, max, epoch },
            // An empty page (past the end of a list that shrank): says nothing.
            _ => return Ok(()),
        };
        if let (Some(d), Some(o)) = (self.direction, own) {
            if d != o {
                return Err(contra(format!("sorted {o} while the list looked {d}")));
            }
        }
        if self.direction.is_none() {
            self.direction = own.or_else(|| self.direction_from(page, span));
        }
        if let Some(dir) = self.direction {
            for (&p, s) in &self.spans {
                let ok = match (dir, p < page) {
                    (Direction::OldestFirst, true) => s.max <= span.min,
                    (Direction::OldestFirst, false) => span.max <= s.min,
                    (Direction::NewestFirst, true) => s.min >= span.max,
                    (Direction::NewestFirst, false) => span.min >= s.max,
                };
                if !ok && p != page && s.epoch == epoch {
                    return Err(contra(format!(
                        "its created_at range disagrees with page {p}'s ({dir})"
                    )));
                }
            }
        }
        self.spans.insert(page, span);
        self.place();
        Ok(())
    }

    /// The direction two pages with times imply, when they differ.
    fn direction_from(&self, page: u64, span: Span) -> Option<Direction> {
        self.spans.iter().find_map(|(&p, s)| {
            let (older, newer) = if p < page { (*s, span) } else { (span, *s) };
            if older.max < newer.min {
                Some(Direction::OldestFirst)
            } else if older.min > newer.max {
                Some(Direction::NewestFirst)
            } else {
                None
            }
        })
    }

    /// Narrows the search with every page read whose side of the cutoff is known.
    fn place(&mut self) {
        let Some(dir) = self.direction else {
            return;
        };
        let (mut bound, mut before) = match dir {
            Direction::OldestFirst => (self.last + 1, 0),
            Direction::NewestFirst => (0, self.last + 1),
        };
        for (&p, s) in &self.spans {
            let reaches = s.max >= self.cutoff;
            match (dir, reaches) {
                (Direction::OldestFirst, true) => bound = bound.min(p),
                (Direction::OldestFirst, false) => before = before.max(p),
                (Direction::NewestFirst, true) => bound = bound.max(p),
                (Direction::NewestFirst, false) => before = before.min(p),
            }
        }
        self.bound = bound;
        self.before = before;
    }

    /// The pages to read once `next_probes` is empty: from one page before the first page
    /// that reaches the cutoff to the end (oldest-first), or from page 1 to one page past the
    /// last one that does (newest-first). `None` when no page reaches it (nothing in the
    /// window) — except the margin page, which is still read.
    pub fn range(&self) -> RangeInclusive<u64> {
        match self.direction {
            // Page 1 and the last page agree on nothing: one page, or all equal times.
            None => 1..=self.last,
            Some(Direction::OldestFirst) => {
                let first = self.bound.min(self.last + 1);
                first.saturating_sub(1).max(1)..=self.last
            }
            Some(Direction::NewestFirst) => 1..=(self.bound + 1).min(self.last),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A list of `n` records, `per` a page, record i created at `t(i)`, oldest first.
    fn pages(n: u64, per: u64, t: impl Fn(u64) -> i64) -> Vec<Vec<i64>> {
        (0..n.div_ceil(per))
            .map(|p| (p * per..((p + 1) * per).min(n)).map(&t).collect())
            .collect()
    }

    /// Runs the search over `list` (page 1 first); returns the range and the pages probed.
    fn search(
        list: &[Vec<i64>],
        cutoff: i64,
    ) -> Result<(RangeInclusive<u64>, usize), Contradiction> {
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
        let mut s =
            PageSearch::new(10, 0, &[100, 99, 98, 97, 96, 95, 94, 93, 92, 91], 100).unwrap();
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
}
