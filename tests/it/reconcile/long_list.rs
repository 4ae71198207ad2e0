//! Long notification lists (docs/configuration.md) end to end: a Chaingateway account with
//! 30,000 notifications older than the window (2,001 pages) and payments in the last hour. The
//! first run reads the list whole (no whole read on record yet), the next ones the window's
//! pages and the search's; each run's report says how many pages it read of how many,
//! `payrecon status` shows it per list, a list served out of order is read whole with the
//! metric counted, and every payment of the window is applied in every case.

use jiff::SignedDuration;
use payrecon::config::Config;
use payrecon::domain::State;
use payrecon_testkit::sandbox::chaingateway::notification;

use super::{entry, ghost_hash, minutes_ago, on_backends, payee, toml, usdt, World, CG};

const OLD: u64 = 30_000;

/// `OLD` notifications of transactions the chain never saw, 79 to 96 hours old, in `order`.
fn old_history(w: &World, order: impl Iterator<Item = u64>) {
    let start = minutes_ago(96 * 60);
    for i in order {
        let at = start + SignedDuration::from_secs(i as i64 * 2);
        let n = notification(
            &format!("old-{i}"),
            &ghost_hash(i),
            &w.token,
            &payee(900_000 + i),
            Some("1"),
            at,
        );
        w.cg.add_notification("ethereum", n);
    }
}

/// Orders `P-{from..to}`, each paid on chain and notified `m` minutes ago.
async fn paid(w: &World, from: u64, to: u64) {
    let orders: Vec<(String, String)> = (from..to).map(|i| (format!("P-{i}"), payee(i))).collect();
    let rows: Vec<(&str, &str, _)> = orders
        .iter()
        .map(|(r, p)| (r.as_str(), p.as_str(), usdt(10 + from)))
        .collect();
    w.orders(&rows).await;
    for (i, (_, p)) in (from..to).zip(&orders) {
        let tx = w.pay(p, usdt(10 + from)).await;
        w.notify_at(
            &format!("new-{i}"),
            &tx,
            p,
            &(10 + from).to_string(),
            minutes_ago(20),
        );
    }
    w.anvil.mine(80).await;
}

fn pages(total: u64) -> u64 {
    total.div_ceil(15)
}

#[tokio::test]
async fn a_long_history_costs_its_window_after_the_first_run() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        old_history(&w, 0..OLD);
        paid(&w, 0, 10).await;

        // No whole read on record: the first run reads every page.
        let report = w.run().await;
        let cg = entry(&report, CG);
        let total = pages(OLD + 10);
        // The notifications list whole, plus the failed list's page.
        assert_eq!((cg.pages_read, cg.pages_total), (total + 1, total + 1));
        assert_eq!(cg.applied, 10, "{}", report.to_json());

        // Five more payments; the next run searches.
        paid(&w, 10, 15).await;
        w.cg.reset_counters();
        let report = w.run().await;
        let cg = entry(&report, CG);
        assert_eq!(cg.applied, 5, "{}", report.to_json());
        let total = pages(OLD + 15);
        let bound = 2 * (total as f64).log2().ceil() as u64 + 4;
        assert_eq!(cg.pages_total, total + 1);
        eprintln!(
            "long list: second run read {} of {} pages (bound {})",
            cg.pages_read,
            cg.pages_total,
            bound + 1
        );
        assert!(
            cg.pages_read <= bound + 1,
            "{} pages read, bound {bound}",
            cg.pages_read
        );
        assert_eq!(
            cg.pages_read,
            w.cg.requests(),
            "every request is a page counted"
        );
        for i in 0..15 {
            assert_eq!(
                w.order(&format!("P-{i}")).await.state,
                State::Final,
                "P-{i}"
            );
        }

        // `payrecon status`: per list, the last run's pages and the last whole read.
        let text = toml(&w.db_url, &w.cg_url, &w.anvil.url, &w.token, "", "");
        let config = Config::from_toml(&text, std::iter::empty()).unwrap();
        let status = payrecon::status::collect(&config).await.unwrap();
        let all = status
            .lists
            .iter()
            .find(|l| l.list == "all")
            .expect("the notifications list");
        assert_eq!(all.provider, CG);
        assert_eq!(all.chain.as_deref(), Some("ethereum"));
        assert_eq!(all.last_pages_read as u64, cg.pages_read - 1);
        assert_eq!(all.last_pages_total as u64, total);
        let full = all
            .last_full_read_at
            .as_deref()
            .expect("the first run was whole");
        assert!(
            full < all.last_read_at.as_str(),
            "{full} {}",
            all.last_read_at
        );
        let failed = status.lists.iter().find(|l| l.list == "failed").unwrap();
        assert_eq!(failed.last_pages_read, 1);
        assert!(
            failed.last_full_read_at.is_some(),
            "the failed list is always whole"
        );
        let text = status.to_text();
        assert!(
            text.contains(&format!("{} of {total}", all.last_pages_read)),
            "{text}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_list_out_of_order_is_read_whole_and_counted() {
    on_backends(|url| async move {
        // No forced whole read: the first run searches.
        let Some(w) = World::start_with(&url, "full_scan_every = \"0s\"\n", "").await else {
            return;
        };
        // Pages 1..=2,000 hold the history in an order created_at does not follow.
        old_history(&w, (0..OLD).map(|i| (i * 7_919) % OLD));
        paid(&w, 0, 10).await;
        let report = w.run().await;
        let cg = entry(&report, CG);
        assert_eq!(cg.applied, 10, "{}", report.to_json());
        let total = pages(OLD + 10);
        assert!(cg.pages_read > total, "read whole: {}", cg.pages_read);
        let metrics = w.app.engine.metrics.encode();
        assert!(
            metrics.contains("payrecon_list_full_scans_total{provider=\"cg\"} 1"),
            "{metrics}"
        );
    })
    .await;
}
