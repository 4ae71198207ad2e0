//! An operator's walk through the console: the overview, a held order's exception found by the
//! search (by order ref, transaction hash and age) and accepted in a form, through the same path
//! as `payrecon exceptions accept`; refused forms (no token, a wrong one, no reason, too large a
//! body, no session) and the same form sent twice change nothing; the runs and balances pages.

use payrecon::domain::State;

use crate::cli::harness::{payrecon, World};
use crate::exceptions::{all, count, one};
use crate::serve::{series, Served};
use payrecon_testkit::inspect::Inspect;

use super::{console_config, held, Agent, ANA};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_finds_and_accepts_an_exception_and_refusals_change_nothing() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let config = console_config(&w, "");
        let (x, tx) = held(&w, &config).await;
        let served = Served::start(&config).await;
        let mut a = Agent::new(&served.base);
        assert_eq!(a.login("ana", ANA).await.status, 303);

        // The overview plots the run's gap today (an SVG without text or inline style).
        let p = a.get("/console").await;
        let at = p.body.find("<svg");
        let svg = &p.body[at.unwrap_or_else(|| panic!("{url}: no plot in {}", p.body))..];
        assert!(
            svg.contains("<polyline") && !svg.contains("style="),
            "{url}: {svg}"
        );
        assert!(p.body.contains("amount_mismatch 1"), "{url}: {}", p.body);
        // X-1 is held, listed with what it is short of.
        assert!(
            p.body.contains("1 held") && p.body.contains("href=\"/console/orders/X-1\""),
            "{url}: {}",
            p.body
        );
        assert!(
            p.body.contains("10 USDT"),
            "{url}: the shortfall {}",
            p.body
        );

        // The search box finds it by order ref and by transaction hash (in any case).
        for q in ["X-1", &tx.to_uppercase().replacen("0X", "0x", 1)] {
            let p = a.get(&format!("/console/exceptions?q={q}")).await;
            assert_eq!(p.status, 200, "{url}: {}", p.body);
            assert!(
                p.body.contains(&format!("/console/exceptions/{x}\"")),
                "{url} {q}: {}",
                p.body
            );
        }
        let p = a.get("/console/exceptions?q=X-2").await;
        assert!(p.body.contains("No exception matches"), "{}", p.body);
        let p = a.get("/console/exceptions?kind=late_payment").await;
        assert!(p.body.contains("No exception matches"), "{}", p.body);
        // By age: first seen just now, so not among those seen over a day ago.
        let p = a.get("/console/exceptions?age=1d").await;
        assert!(p.body.contains("No exception matches"), "{url}: {}", p.body);
        let p = a.get("/console/exceptions?age=").await;
        assert!(
            p.body.contains(&format!("/console/exceptions/{x}\"")),
            "{url}: {}",
            p.body
        );

        let page = a.get(&format!("/console/exceptions/{x}")).await;
        assert_eq!(page.status, 200);
        assert!(
            page.body.contains("Held: order X-1 was paid short"),
            "{}",
            page.body
        );
        assert!(
            page.body.contains("20 USDT"),
            "amounts in tokens: {}",
            page.body
        );
        let csrf = page.hidden("csrf");
        let decide = format!("/console/exceptions/{x}/decide");
        let open_where = format!("id = {x} AND status = 'open'");

        // Refusals: no token, a wrong one, no reason, too large a body, no session. Nothing moves.
        let p = a
            .post(&decide, &[("action", "accept"), ("reason", "paid by card")])
            .await;
        assert_eq!(p.status, 403, "{url}");
        let p = a
            .post(
                &decide,
                &[("csrf", "0000"), ("action", "accept"), ("reason", "r")],
            )
            .await;
        assert_eq!(p.status, 403);
        let p = a
            .post(
                &decide,
                &[("csrf", &csrf), ("action", "accept"), ("reason", "  ")],
            )
            .await;
        assert_eq!(p.status, 422);
        let big = "x".repeat(64 * 1024);
        let p = a
            .post(
                &decide,
                &[("csrf", &csrf), ("action", "accept"), ("reason", &big)],
            )
            .await;
        assert_eq!(p.status, 413);
        let mut stranger = Agent::new(&served.base);
        let p = stranger
            .post(
                &decide,
                &[("csrf", &csrf), ("action", "accept"), ("reason", "r")],
            )
            .await;
        assert_eq!(p.status, 403);
        assert_eq!(
            count(&w, "payrecon_exceptions", &open_where).await,
            1,
            "{url}: a refused form changed nothing"
        );
        assert_eq!(
            w.store.order_by_ref("X-1").await.unwrap().unwrap().state,
            State::Unpaid
        );

        let p = a
            .post(
                &decide,
                &[
                    ("csrf", &csrf),
                    ("action", "accept"),
                    ("reason", "paid the rest by card"),
                ],
            )
            .await;
        assert_eq!(p.status, 303, "{url}: {}", p.body);
        assert_eq!(count(&w, "payrecon_exceptions", &open_where).await, 0);
        assert_eq!(
            w.store.order_by_ref("X-1").await.unwrap().unwrap().state,
            State::Final
        );
        let done = one(&all(&config).await, "amount_mismatch", "X-1").clone();
        assert_eq!(done["resolved_by"], "ana", "{done}");
        assert_eq!(done["note"], "paid the rest by card");
        let page = a.get(&format!("/console/exceptions/{x}")).await;
        assert!(page.body.contains("accepted by ana"), "{}", page.body);
        let p = a.get("/console").await;
        assert!(p.body.contains("No order is held."), "{url}: {}", p.body);

        // The same form again lost the race to itself: who and when, nothing changed.
        let p = a
            .post(
                &decide,
                &[("csrf", &csrf), ("action", "dismiss"), ("reason", "again")],
            )
            .await;
        assert_eq!(p.status, 409);
        assert!(
            p.body.contains("resolved already: accepted by ana at"),
            "{}",
            p.body
        );
        assert_eq!(a.get("/console/exceptions/999999").await.status, 404);

        // Runs in keyset pages (a second run to page over), and the balances page.
        payrecon(&config, &["run"]).await.assert_code(0);
        let first = w.store.runs_page(None, 1).await.unwrap();
        let bound = (first[0].started_at.as_str(), first[0].id.as_str());
        let second = w.store.runs_page(Some(bound), 1).await.unwrap();
        assert_eq!((first.len(), second.len()), (1, 1), "{url}");
        assert!(
            second[0].started_at < first[0].started_at,
            "{url}: {first:?} {second:?}"
        );
        let bound = (second[0].started_at.as_str(), second[0].id.as_str());
        assert!(
            w.store.runs_page(Some(bound), 1).await.unwrap().is_empty(),
            "{url}"
        );
        let p = a.get("/console/runs").await;
        assert_eq!(p.status, 200, "{url}: {}", p.body);
        assert_eq!(p.body.matches("<td>cli</td>").count(), 2, "{}", p.body);
        let p = a.get("/console/balances").await;
        assert!(
            p.body.contains("left a difference nothing explains") && p.body.contains("None."),
            "{}",
            p.body
        );
        let m = served.metrics().await;
        let decided = |status| {
            series(
                &m,
                "payrecon_console_requests_total",
                &[
                    ("route", "POST /console/exceptions/{id}/decide"),
                    ("status", status),
                ],
            )
        };
        assert_eq!(
            (decided("403"), decided("303"), decided("413")),
            (Some(3.0), Some(1.0), Some(1.0)),
            "{url}"
        );
    }
}
