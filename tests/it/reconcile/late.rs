//! Late payments (docs/configuration.md, "Amounts"): a payment in a block after its order's
//! `expires_at` is credited and flagged `late_payment`; held with `late_payments = "hold"` (the
//! default), counted with `"accept"`; judged by the block's time, read from the real node.

use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::State;
use payrecon::store::Store;

use super::{entry, found, on_backends, opts, payee, toml_with_chain, usdt, World, CG, CONFS};

/// The world's app rebuilt with `[reconcile] late_payments = "accept"`.
async fn accepting(w: &World) -> App {
    let chain = format!("confirmations = {CONFS}\nfinality = \"finalized\"\nscan_unpaid = false");
    let extra = "[reconcile]\nlate_payments = \"accept\"";
    let text = toml_with_chain(
        &w.db_url,
        &w.cg_url,
        &w.anvil.url,
        &w.token,
        &chain,
        "",
        extra,
    );
    App::build(Config::from_toml(&text, std::iter::empty()).unwrap())
        .await
        .unwrap()
}

async fn expires(store: &Store, order_ref: &str, at: jiff::Timestamp) {
    // MariaDB's DATETIME reads no `T…Z` under strict mode.
    let at = match store {
        Store::MySql(_) => at.strftime("%Y-%m-%d %H:%M:%S%.6f").to_string(),
        _ => at.to_string(),
    };
    let sql = format!("UPDATE orders SET expires_at = '{at}' WHERE order_ref = '{order_ref}'");
    payrecon_testkit::on_pool!(store, p => sqlx::query(&sql).execute(p).await.map(|_| ())).unwrap();
}

fn held(m: &str, reason: &str, n: u32) -> bool {
    m.contains(&format!("payrecon_orders_held{{reason=\"{reason}\"}} {n}"))
}

#[tokio::test]
async fn a_payment_after_the_order_expired_is_credited_and_held_unless_accepted() {
    on_backends(|url| async move {
        let Some(w) = World::start(&url).await else {
            return;
        };
        w.orders(&[
            ("L-LATE", &payee(1), usdt(25)),
            ("L-ONTIME", &payee(2), usdt(25)),
            ("L-ACCEPT", &payee(3), usdt(25)),
        ])
        .await;
        // The node's blocks carry the wall clock's time.
        let now = jiff::Timestamp::now();
        let hour = jiff::SignedDuration::from_hours(1);
        expires(w.store(), "L-LATE", now - hour).await;
        expires(w.store(), "L-ONTIME", now + hour).await;
        expires(w.store(), "L-ACCEPT", now - hour).await;
        let late = w.pay(&payee(1), usdt(25)).await;
        let on_time = w.pay(&payee(2), usdt(25)).await;
        w.notify("701", &late, &payee(1), "25");
        w.notify("702", &on_time, &payee(2), "25");

        let report = w.run().await;
        let cg = entry(&report, CG);
        assert_eq!(cg.gaps.late_payment, 1, "{}", report.to_json());
        assert_eq!(cg.applied, 1, "{}", report.to_json());
        let l = w.order("L-LATE").await;
        assert_eq!(
            (l.state, l.tx_hash.as_deref(), l.amount_paid.as_deref()),
            (State::Unpaid, None, Some("25000000")),
            "{url}: credited, held"
        );
        assert_eq!(w.order("L-ONTIME").await.state, State::Pending);
        let f = &found(&report, "late_payment")[0];
        assert_eq!(
            (
                f.order_ref.as_deref(),
                f.action.as_str(),
                f.tx_hash.as_deref()
            ),
            (Some("L-LATE"), "held", Some(late.as_str()))
        );
        assert!(f.detail.starts_with("late: paid 25000000"), "{}", f.detail);
        // Not also an underpayment: it pays in full, it is late.
        assert!(
            found(&report, "amount_mismatch").is_empty(),
            "{}",
            report.to_json()
        );
        let m = w.app.engine.metrics.encode();
        assert!(held(&m, "late", 1) && held(&m, "underpaid", 0), "{m}");
        // Its exception (README.md, "Exceptions"), counted by the gauges at the end of the run.
        assert!(
            m.contains("payrecon_exceptions_open{kind=\"late_payment\"} 1")
                && m.contains("payrecon_exceptions_open{kind=\"amount_mismatch\"} 0"),
            "{m}"
        );
        let age = m
            .lines()
            .find(|l| {
                l.starts_with("payrecon_exceptions_oldest_open_seconds{kind=\"late_payment\"}")
            })
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(-1.0);
        assert!((0.0..60.0).contains(&age), "{m}");

        // Seen again: still held, credited once.
        let again = w.run().await;
        assert_eq!(entry(&again, CG).gaps.late_payment, 1);
        assert_eq!(
            w.order("L-LATE").await.amount_paid.as_deref(),
            Some("25000000")
        );

        // With late_payments = "accept", a late payment counts like any other.
        let app = accepting(&w).await;
        let paid = w.pay(&payee(3), usdt(25)).await;
        w.notify("703", &paid, &payee(3), "25");
        let report = app.engine.run(&opts()).await.unwrap();
        let a = w.order("L-ACCEPT").await;
        assert_eq!(
            (a.state, a.tx_hash.as_deref()),
            (State::Pending, Some(paid.as_str())),
            "{url}: {}",
            report.to_json()
        );
        let f = found(&report, "late_payment");
        let accepted = f
            .iter()
            .find(|f| f.order_ref.as_deref() == Some("L-ACCEPT"))
            .unwrap();
        assert_eq!(accepted.action, "applied");
    })
    .await;
}
