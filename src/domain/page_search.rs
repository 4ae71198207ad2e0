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
/// two distinct times), `Err` when they go both ways: its text (a `String`) is the finding's
/// detail, and the one outcome a caller acts on is that it is an `Err`.
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
mod tests;
