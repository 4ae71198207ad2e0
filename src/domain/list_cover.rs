//! Which records of an offset-paginated list (Laravel: page `n` is records `per·(n-1)..per·n`
//! of the list *as it is when that page is served*) a run has read, while the list grows.
//!
//! A record's offset changes when records are added before it, so pages read at different
//! times do not add up by page number. Numbered from the end that does not move, they do:
//! a list that grows at its end (oldest first) keeps every record's offset from the head; one
//! that grows at its head (newest first) keeps every record's offset from the tail. `Cover`
//! keeps what was read in that frame, as disjoint intervals (one in the usual case: memory is
//! what is in flight, not the list), and names the pages that hold what is still missing in
//! the list as it was last served. No IO here.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

/// Where records are counted from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// Offset from the first record (lists that grow at the end).
    Head,
    /// Offset from the last record (lists that grow at the head).
    Tail,
}

#[derive(Debug, Clone)]
pub struct Cover {
    frame: Frame,
    per: u64,
    /// `start -> end` (half-open), disjoint, not adjacent.
    read: BTreeMap<u64, u64>,
    /// `total` of the page read last.
    total: u64,
}

impl Cover {
    /// `per` records a page; `total` as the first page read reported it.
    pub fn new(frame: Frame, per: u64, total: u64) -> Cover {
        Cover {
            frame,
            per: per.max(1),
            read: BTreeMap::new(),
            total,
        }
    }

    pub fn frame(&self) -> Frame {
        self.frame
    }

    /// The list's size as the page read last reported it.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Page `page` was served holding `len` records while the list held `total`.
    pub fn add(&mut self, page: u64, total: u64, len: u64) {
        self.total = total;
        if len == 0 {
            return;
        }
        let offset = self.per * page.saturating_sub(1);
        let (start, end) = match self.frame {
            Frame::Head => (offset, offset + len),
            Frame::Tail => (
                total.saturating_sub(offset + len),
                total.saturating_sub(offset),
            ),
        };
        self.insert(start, end);
    }

    fn insert(&mut self, mut start: u64, mut end: u64) {
        if start >= end {
            return;
        }
        // Merge with every interval that overlaps or touches [start, end).
        let touching: Vec<(u64, u64)> = self
            .read
            .range(..=end)
            .rev()
            .take_while(|(_, &e)| e >= start)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in touching {
            self.read.remove(&s);
            start = start.min(s);
            end = end.max(e);
        }
        self.read.insert(start, end);
    }

    /// The record offsets in `[from, total)` not read yet.
    pub fn gaps(&self, from: u64) -> Vec<(u64, u64)> {
        let mut gaps = Vec::new();
        let mut at = from;
        for (&s, &e) in self.read.range(..self.total) {
            if e <= at {
                continue;
            }
            if s > at {
                gaps.push((at, s.min(self.total)));
            }
            at = at.max(e);
            if at >= self.total {
                break;
            }
        }
        if at < self.total {
            gaps.push((at, self.total));
        }
        gaps
    }

    /// The pages that hold the gaps of `[from, total)` in the list as last served: ascending,
    /// disjoint runs of pages.
    pub fn missing_pages(&self, from: u64) -> Vec<RangeInclusive<u64>> {
        let mut runs: Vec<RangeInclusive<u64>> = self
            .gaps(from)
            .into_iter()
            .map(|(a, b)| {
                // Positions from the head, [p, q], in the list as last served.
                let (p, q) = match self.frame {
                    Frame::Head => (a, b - 1),
                    Frame::Tail => (self.total - b, self.total - 1 - a),
                };
                p / self.per + 1..=q / self.per + 1
            })
            .collect();
        runs.sort_unstable_by_key(|r| *r.start());
        let mut merged: Vec<RangeInclusive<u64>> = Vec::with_capacity(runs.len());
        for r in runs {
            match merged.last_mut() {
                Some(m) if *r.start() <= *m.end() + 1 => {
                    *m = *m.start()..=(*m.end()).max(*r.end());
                }
                _ => merged.push(r),
            }
        }
        merged
    }
}

#[cfg(test)]
mod tests;
