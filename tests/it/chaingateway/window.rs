//! Long notification lists (docs/configuration.md) against the fake: lists of 100,000
//! notifications served oldest first, newest first, shuffled, with equal times across pages,
//! and changing while they are read. Every record of the window is read in each case, and the
//! pages fetched are counted (by the fake) and held to `window pages + 2·log2(pages) + 4`.

use std::collections::BTreeSet;

use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use payrecon::providers::ListKind;
use payrecon::providers::{ListPlan, ListStats, StatsCell};
use payrecon_testkit::sandbox::chaingateway::{notification, FakeChaingateway, ListChange};
use serde_json::Value;

use super::{addr, client, hash, settings, KEY, USDT};

const N: u64 = 100_000;
const PER: u64 = 15;

fn t0() -> Timestamp {
    "2026-01-01T00:00:00Z".parse().unwrap()
}

/// Record `i`, created `i · 10 s` after `t0` (or at `at`).
fn rec(i: u64, at: Option<Timestamp>) -> Value {
    let t = at.unwrap_or_else(|| t0() + SignedDuration::from_secs(i as i64 * 10));
    notification(&format!("n-{i}"), &hash(i), USDT, &addr(i), Some("1"), t)
}

fn time_of(i: u64) -> Timestamp {
    t0() + SignedDuration::from_secs(i as i64 * 10)
}

/// A fake holding records `0..N` in `order`.
async fn fake_with(order: impl Iterator<Item = u64>) -> (FakeChaingateway, String) {
    let (fake, base) = FakeChaingateway::start(KEY).await;
    for i in order {
        fake.add_notification("ethereum", rec(i, None));
    }
    (fake, base)
}

/// One read of the notifications list from `cutoff` (`None`: whole): the ids read, and
/// what the read says it did.
async fn read(base: &str, cutoff: Option<Timestamp>) -> (BTreeSet<String>, ListStats) {
    let (c, _) = client(settings(base));
    let stats = StatsCell::default();
    let plan = ListPlan { cutoff };
    let items: Vec<_> = c
        .pages("ethereum", ListKind::All, plan, stats.clone())
        .collect()
        .await;
    let mut ids = BTreeSet::new();
    for page in items {
        ids.extend(
            page.expect("every page reads")
                .records
                .into_iter()
                .map(|r| r.id),
        );
    }
    let stats = stats.lock().unwrap().clone();
    (ids, stats)
}

fn want(range: impl Iterator<Item = u64>) -> BTreeSet<String> {
    range.map(|i| format!("n-{i}")).collect()
}

/// The goal for a window of `window` records (docs/benchmarks.md, "Steady state").
fn bound(window: u64) -> u64 {
    let pages = N.div_ceil(PER);
    window.div_ceil(PER) + 2 * (pages as f64).log2().ceil() as u64 + 4
}

fn missing(want: &BTreeSet<String>, got: &BTreeSet<String>) -> Vec<String> {
    want.difference(got).take(5).cloned().collect()
}

#[tokio::test]
async fn an_oldest_first_list_is_read_from_the_window_in_a_log_of_pages() {
    let (fake, base) = fake_with(0..N).await;
    // The window: the last 1,000 records (cutoff = since - 10 min margin = 60 records).
    let since = time_of(N - 1_000);
    let cutoff = since - SignedDuration::from_mins(10);
    let (got, stats) = read(&base, Some(cutoff)).await;
    let w = want(N - 1_000..N);
    assert!(w.is_subset(&got), "missed {:?}", missing(&w, &got));
    assert_eq!(
        stats.pages_read,
        fake.pages_served(),
        "every page fetched is counted"
    );
    assert_eq!(stats.pages_total, N.div_ceil(PER));
    assert!(
        stats.pages_read <= bound(1_060),
        "{} pages read, bound {}",
        stats.pages_read,
        bound(1_060)
    );
    assert!(!stats.whole && stats.fallback.is_none() && !stats.unsettled);

    // A window past the newest record: the last page only, plus the search.
    let (got, stats) = read(&base, Some(time_of(N + 100))).await;
    assert!(got.len() as u64 <= PER, "{} records", got.len());
    assert!(stats.pages_read <= bound(0), "{}", stats.pages_read);
    // A window older than the list: everything, and it says so.
    let (got, stats) = read(&base, Some(t0() - SignedDuration::from_hours(1))).await;
    assert_eq!(got.len() as u64, N);
    assert!(stats.whole);
}

#[tokio::test]
async fn a_newest_first_list_is_read_from_page_one() {
    let (fake, base) = fake_with(0..N).await;
    fake.set_newest_first(true);
    let since = time_of(N - 2_000);
    let cutoff = since - SignedDuration::from_mins(10);
    let (got, stats) = read(&base, Some(cutoff)).await;
    let w = want(N - 2_000..N);
    assert!(w.is_subset(&got), "missed {:?}", missing(&w, &got));
    assert_eq!(stats.pages_read, fake.pages_served());
    assert!(
        stats.pages_read <= bound(2_060),
        "{} pages",
        stats.pages_read
    );
    assert!(!stats.whole && stats.fallback.is_none());
}

/// Log lines written while the guard lives (this thread's; a `tokio::test` runs its tasks here).
#[derive(Clone, Default)]
struct Logs(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn capture(&self) -> tracing::subscriber::DefaultGuard {
        let logs = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false)
            .with_writer(move || logs.clone())
            .finish();
        tracing::subscriber::set_default(subscriber)
    }
    fn lines(&self) -> Vec<String> {
        let text = String::from_utf8_lossy(&self.0.lock().unwrap()).to_string();
        text.lines().map(str::to_string).collect()
    }
}

#[tokio::test]
async fn a_shuffled_list_is_read_whole_once_with_the_fallback_said() {
    // A permutation of 0..N (7,919 is prime to N): created_at follows no page order.
    let (fake, base) = fake_with((0..N).map(|i| (i * 7_919) % N)).await;
    let logs = Logs::default();
    let guard = logs.capture();
    let (got, stats) = read(&base, Some(time_of(N - 500))).await;
    drop(guard);
    let warned: Vec<String> = logs
        .lines()
        .into_iter()
        .filter(|l| l.contains("reading the list whole"))
        .collect();
    assert_eq!(warned.len(), 1, "one warning: {warned:?}");
    let c = stats.fallback.as_ref().expect("the order contradicted");
    for part in [
        "provider=cg".to_string(),
        "chain=ethereum".to_string(),
        format!("page={}", c.page),
    ] {
        assert!(warned[0].contains(&part), "{part} in {}", warned[0]);
    }
    assert_eq!(got.len() as u64, N, "every record, the window's among them");
    assert!(c.page >= 1 && !c.reason.is_empty());
    assert!(stats.whole);
    let pages = N.div_ceil(PER);
    // Each page once, plus the probes made before the contradiction showed.
    assert!(
        stats.pages_read >= pages && stats.pages_read <= pages + 8,
        "{}",
        stats.pages_read
    );
    assert_eq!(stats.pages_read, fake.pages_served());
}

#[tokio::test]
async fn equal_times_across_page_boundaries_lose_nothing() {
    // Records 90,000..92,250 (150 pages) share one second, the window's start.
    let tie = time_of(90_000);
    let (_fake, base) = {
        let (fake, base) = FakeChaingateway::start(KEY).await;
        for i in 0..N {
            let at = (90_000..92_250).contains(&i).then_some(tie);
            fake.add_notification("ethereum", rec(i, at));
        }
        (fake, base)
    };
    let (got, stats) = read(&base, Some(tie)).await;
    let w = want(90_000..N);
    assert!(w.is_subset(&got), "missed {:?}", missing(&w, &got));
    assert!(stats.pages_read <= bound(10_000), "{}", stats.pages_read);
    assert!(stats.fallback.is_none());
}

#[tokio::test]
async fn records_appended_while_an_oldest_first_list_is_read_are_read_too() {
    let (fake, base) = fake_with(0..N).await;
    // 40 new records (3 pages) arrive once 30 pages were served: mid-window.
    let new: Vec<Value> = (N..N + 40).map(|i| rec(i, None)).collect();
    fake.change_after_pages(30, "ethereum", ListChange::Append(new));
    let (got, stats) = read(&base, Some(time_of(N - 1_000))).await;
    assert_eq!(fake.changes_fired(), 1, "the list grew during the read");
    let w = want(N - 1_000..N + 40);
    assert!(w.is_subset(&got), "missed {:?}", missing(&w, &got));
    assert_eq!(stats.pages_total, (N + 40).div_ceil(PER));
    assert!(stats.pages_read <= bound(1_100), "{}", stats.pages_read);
}

#[tokio::test]
async fn records_pushed_down_a_newest_first_list_while_it_is_read_are_not_lost() {
    let (fake, base) = fake_with(0..N).await;
    fake.set_newest_first(true);
    // Newest first, every arrival moves each record down a place: 25 arrive after 20
    // pages, 25 more after 40 (Laravel's offsets shift under the reader twice).
    for (after, from) in [(20, N), (40, N + 25)] {
        let new: Vec<Value> = (from..from + 25).map(|i| rec(i, None)).collect();
        fake.change_after_pages(after, "ethereum", ListChange::Append(new));
    }
    let (got, stats) = read(&base, Some(time_of(N - 1_500))).await;
    assert_eq!(fake.changes_fired(), 2);
    let w = want(N - 1_500..N + 50);
    assert!(w.is_subset(&got), "missed {:?}", missing(&w, &got));
    assert!(!stats.unsettled);
    // The pages the arrivals moved are read again: a few more than the bound.
    assert!(stats.pages_read <= bound(1_600) + 8, "{}", stats.pages_read);
}

#[tokio::test]
async fn records_deleted_between_and_during_reads_leave_no_window_record_unread() {
    let (fake, base) = fake_with(0..N).await;
    let since = time_of(N - 1_000);
    // Between runs: 30 old records and 10 of the window go.
    let old: Vec<String> = (0..30).map(|i| format!("n-{}", i * 1_000)).collect();
    let mut gone: Vec<&str> = old.iter().map(String::as_str).collect();
    let window_gone: Vec<String> = (0..10).map(|i| format!("n-{}", N - 900 + i)).collect();
    gone.extend(window_gone.iter().map(String::as_str));
    fake.remove_notifications("ethereum", &gone);
    let (got, stats) = read(&base, Some(since)).await;
    let mut w = want(N - 1_000..N);
    for id in &window_gone {
        w.remove(id);
    }
    assert!(w.is_subset(&got), "missed {:?}", missing(&w, &got));
    assert!(stats.pages_read <= bound(1_060));
    // During a run: 20 window records go once 25 pages were served, so later ones move up
    // a page under the reader; what one run misses, the next (same window) reads.
    let during: Vec<String> = (0..20).map(|i| format!("n-{}", N - 950 + i)).collect();
    fake.change_after_pages(
        fake.pages_served() + 25,
        "ethereum",
        ListChange::Remove(during.clone()),
    );
    let (first, _) = read(&base, Some(since)).await;
    assert_eq!(fake.changes_fired(), 1);
    let (second, _) = read(&base, Some(since)).await;
    for id in &during {
        w.remove(id);
    }
    let both: BTreeSet<String> = first.union(&second).cloned().collect();
    assert!(w.is_subset(&both), "missed {:?}", missing(&w, &both));
    assert!(w.is_subset(&second), "a run on a still list reads it all");
}

#[tokio::test]
async fn a_whole_read_reads_every_page_once() {
    let (fake, base) = fake_with(0..N).await;
    let (got, stats) = read(&base, None).await;
    assert_eq!(got.len() as u64, N);
    assert_eq!(stats.pages_read, N.div_ceil(PER));
    assert_eq!(stats.pages_read, fake.pages_served());
    assert!(stats.whole && stats.fallback.is_none());
}
