//! One notification list read as docs/configuration.md, "Long notification lists", says: whole
//! (the failed list, a forced full read, a fallback), or only the pages that can hold a record
//! of the run's window, found by the boundary search over pages on `created_at`
//! (`domain::page_search`) with every page read checked against the order the pages show.
//!
//! Laravel pages by offset, and the list grows while it is read, so what was read is kept
//! as record offsets counted from the list's fixed end (`domain::list_cover`): pages that
//! records moved to, or that the list grew by, are read in further rounds, and a record that
//! moves from a page not read yet onto one already read is not lost. Lists whose pages do
//! not carry Laravel's `total` and `per_page` are read whole, page by page.

use std::collections::BTreeMap;

use futures::stream::{self, StreamExt};
use jiff::Timestamp;
use tokio::sync::mpsc;

use super::ChaingatewayClient;
use crate::domain::list_cover::{Cover, Frame};
use crate::domain::page_search::{Contradiction, Direction, PageSearch};
use crate::providers::{ListKind, ListPlan, ListStats, Page, ProviderError, StatsCell};

/// Rounds of re-reading pages that records moved to while the list was read; what still
/// moves after them is left for the next run (it is still in its window).
const MOVE_ROUNDS: usize = 6;
/// Search probes in flight at once (at most `max_concurrency`): a 4-ary search reads about
/// `1.5·log2(pages)` pages in `log4(pages)` rounds.
const PROBES: usize = 3;

/// A page as served: its records, their times, and where it sat in the list.
pub(super) struct Served {
    pub n: u64,
    pub page: Page,
    /// The records' `created_at`, Unix milliseconds, in page order (rejected ones have none).
    pub times: Vec<i64>,
    /// Items in `data`, rejected ones included.
    pub len: u64,
    pub last_page: Option<u64>,
    pub total: Option<u64>,
    pub per_page: Option<u64>,
}

/// Why a read stopped early.
enum Stop {
    /// The run stopped reading (the receiver is gone).
    Gone,
    Failed(ProviderError),
}

/// How a round of reads ended.
enum Fill {
    Done,
    /// Records kept moving past the last round.
    Unsettled,
    /// A page disagreed with the order (the search's reads only).
    Contradicted(Contradiction),
}

/// Reads `list` of `chain` by `plan` into `tx`; the stream's consumer sees pages, then at
/// most one error (the read stops at the first page that could not be read).
pub(super) async fn read(
    client: &ChaingatewayClient,
    chain: &str,
    list: ListKind,
    plan: ListPlan,
    tx: mpsc::Sender<Result<Page, ProviderError>>,
    cell: StatsCell,
) {
    let mut reader = Reader {
        client,
        chain,
        list,
        tx,
        stats: ListStats::default(),
        concurrency: client.settings.max_concurrency.max(1),
    };
    let result = reader.run(plan).await;
    *cell.lock().unwrap_or_else(|p| p.into_inner()) = reader.stats.clone();
    if let Err(Stop::Failed(e)) = result {
        let _ = reader.tx.send(Err(e)).await;
    }
}

struct Reader<'a> {
    client: &'a ChaingatewayClient,
    chain: &'a str,
    list: ListKind,
    tx: mpsc::Sender<Result<Page, ProviderError>>,
    stats: ListStats,
    concurrency: usize,
}

impl Reader<'_> {
    async fn run(&mut self, plan: ListPlan) -> Result<(), Stop> {
        let first = self.fetch(1).await?;
        let last = first.last_page.unwrap_or(1).max(1);
        let (per, total) = match (first.per_page, first.total) {
            (Some(per), Some(total)) if per > 0 => (per, total),
            _ => return self.whole_by_number(first, last).await,
        };
        match plan.cutoff {
            None => {
                let cover = Cover::new(Frame::Head, per, total);
                self.whole(cover, vec![first]).await
            }
            Some(cutoff) => self.search(first, last, per, total, cutoff).await,
        }
    }

    /// The boundary search, then the window's pages (and what moved) read in rounds.
    async fn search(
        &mut self,
        first: Served,
        last: u64,
        per: u64,
        total: u64,
        cutoff: Timestamp,
    ) -> Result<(), Stop> {
        let mut search = match PageSearch::new(last, cutoff.as_millisecond(), &first.times, total) {
            Ok(s) => s,
            Err(c) => {
                return self
                    .fall_back(c, Cover::new(Frame::Head, per, total), vec![first])
                    .await
            }
        };
        let mut probed = BTreeMap::from([(1, first)]);
        loop {
            let probes = search.next_probes(PROBES.min(self.concurrency));
            if probes.is_empty() {
                break;
            }
            let fetched = futures::future::join_all(probes.iter().map(|&n| self.fetch_raw(n)));
            for served in fetched.await {
                let served = self.count(served)?;
                let seen = search.observe(served.n, &served.times, served.total.unwrap_or(total));
                probed.insert(served.n, served);
                if let Err(c) = seen {
                    let cover = Cover::new(Frame::Head, per, total);
                    return self
                        .fall_back(c, cover, probed.into_values().collect())
                        .await;
                }
            }
        }
        let range = search.range();
        let (frame, from) = match search.direction() {
            // Counted from the tail: page `end` of the list as page 1 served it.
            Some(Direction::NewestFirst) => (Frame::Tail, total.saturating_sub(per * range.end())),
            _ => (Frame::Head, per * (range.start() - 1)),
        };
        let mut cover = Cover::new(frame, per, total);
        // Probed pages of the range are not fetched again.
        for (n, served) in probed {
            if range.contains(&n) {
                cover.add(n, served.total.unwrap_or(cover.total()), served.len);
                self.emit(served.page).await?;
            }
        }
        match self.fill(&mut cover, from, Some(&mut search)).await? {
            Fill::Done => self.stats.whole = from == 0,
            Fill::Unsettled => self.unsettled(),
            Fill::Contradicted(c) => return self.fall_back(c, cover, Vec::new()).await,
        }
        Ok(())
    }

    /// The order did not hold: the list is read whole in this run (pages read already are
    /// not fetched again).
    async fn fall_back(
        &mut self,
        c: Contradiction,
        cover: Cover,
        unsent: Vec<Served>,
    ) -> Result<(), Stop> {
        tracing::warn!(
            provider = %self.client.settings.name, chain = %self.chain, page = c.page,
            reason = %c.reason,
            "A page of the notification list disagrees with the order of the others; \
             reading the list whole in this run."
        );
        self.stats.fallback = Some(c);
        self.whole(cover, unsent).await
    }

    async fn whole(&mut self, mut cover: Cover, unsent: Vec<Served>) -> Result<(), Stop> {
        for served in unsent {
            cover.add(served.n, served.total.unwrap_or(cover.total()), served.len);
            self.emit(served.page).await?;
        }
        match self.fill(&mut cover, 0, None).await? {
            Fill::Done => self.stats.whole = true,
            Fill::Unsettled | Fill::Contradicted(_) => self.unsettled(),
        }
        Ok(())
    }

    /// Reads, in rounds, the pages holding what `cover` is missing from `from` on, until
    /// nothing is (or `MOVE_ROUNDS` passed). With `search`, every page is checked against it.
    async fn fill(
        &mut self,
        cover: &mut Cover,
        from: u64,
        mut search: Option<&mut PageSearch>,
    ) -> Result<Fill, Stop> {
        for _ in 0..MOVE_ROUNDS {
            let runs = cover.missing_pages(from);
            if runs.is_empty() {
                return Ok(Fill::Done);
            }
            let (client, chain, list) = (self.client, self.chain, self.list);
            let mut pages = stream::iter(runs.into_iter().flatten())
                .map(|n| client.fetch_page(chain, list, n))
                .buffer_unordered(self.concurrency);
            while let Some(served) = pages.next().await {
                let served = self.count(served)?;
                let seen = match search.as_deref_mut() {
                    Some(s) => s.observe(
                        served.n,
                        &served.times,
                        served.total.unwrap_or(cover.total()),
                    ),
                    None => Ok(()),
                };
                cover.add(served.n, served.total.unwrap_or(cover.total()), served.len);
                self.emit(served.page).await?;
                if let Err(c) = seen {
                    return Ok(Fill::Contradicted(c));
                }
            }
        }
        Ok(if cover.missing_pages(from).is_empty() {
            Fill::Done
        } else {
            Fill::Unsettled
        })
    }

    /// Pages 2 to `last`, for lists that do not say where their pages sit.
    async fn whole_by_number(&mut self, first: Served, last: u64) -> Result<(), Stop> {
        self.emit(first.page).await?;
        let (client, chain, list) = (self.client, self.chain, self.list);
        let mut pages = stream::iter(2..=last)
            .map(|n| client.fetch_page(chain, list, n))
            .buffer_unordered(self.concurrency);
        while let Some(served) = pages.next().await {
            let served = self.count(served)?;
            self.emit(served.page).await?;
        }
        self.stats.whole = true;
        Ok(())
    }

    fn unsettled(&mut self) {
        tracing::warn!(
            provider = %self.client.settings.name, chain = %self.chain,
            "Records kept moving between pages while the list was read; the next run reads \
             the rest of the window."
        );
        self.stats.unsettled = true;
    }

    async fn fetch(&mut self, n: u64) -> Result<Served, Stop> {
        let served = self.fetch_raw(n).await;
        self.count(served)
    }

    async fn fetch_raw(&self, n: u64) -> Result<Served, ProviderError> {
        self.client.fetch_page(self.chain, self.list, n).await
    }

    /// Counts a page fetched (and the `last_page` it reports).
    fn count(&mut self, served: Result<Served, ProviderError>) -> Result<Served, Stop> {
        let served = served.map_err(Stop::Failed)?;
        self.stats.pages_read += 1;
        if let Some(last) = served.last_page {
            self.stats.pages_total = last;
        }
        Ok(served)
    }

    async fn emit(&mut self, page: Page) -> Result<(), Stop> {
        self.tx.send(Ok(page)).await.map_err(|_| Stop::Gone)
    }
}
