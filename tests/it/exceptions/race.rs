//! Two people settle one exception at once: one wins, the other exits 1 and is told who and
//! when, and the ledger has one decision. A process killed mid-decision leaves nothing: the
//! exception stays open and the decision can be made again. Both processes are held at the
//! database (a write lock on SQLite, the order's row lock on PostgreSQL and MariaDB) so that they really
//! act at the same time.

use std::time::Duration;

use payrecon::domain::State;
use sqlx::{Connection, Executor};

use super::{all, count, id, one, order, pay};
use crate::cli::harness::{command, payrecon, Running, World};
use payrecon_testkit::inspect::Inspect;

/// A lock that holds every decision on `order_ref` at the database until `release`.
enum Hold {
    Sqlite(sqlx::SqliteConnection),
    Pg(sqlx::PgConnection),
    My(sqlx::MySqlConnection),
}

impl Hold {
    async fn take(url: &str, order_ref: &str) -> Hold {
        if url.starts_with("sqlite") {
            let mut c = sqlx::SqliteConnection::connect(url).await.unwrap();
            c.execute("BEGIN IMMEDIATE").await.unwrap();
            Hold::Sqlite(c)
        } else if url.starts_with("mysql") {
            let mut c = sqlx::MySqlConnection::connect(url).await.unwrap();
            c.execute("BEGIN").await.unwrap();
            let sql = format!("SELECT id FROM orders WHERE order_ref = '{order_ref}' FOR UPDATE");
            c.execute(sql.as_str()).await.unwrap();
            Hold::My(c)
        } else {
            let mut c = sqlx::PgConnection::connect(url).await.unwrap();
            c.execute("BEGIN").await.unwrap();
            let sql = format!("SELECT id FROM orders WHERE order_ref = '{order_ref}' FOR UPDATE");
            c.execute(sql.as_str()).await.unwrap();
            Hold::Pg(c)
        }
    }

    /// Gives the processes time to reach the lock and wait on it. (They wait in SQLite's
    /// busy handler, or on the row lock; either way nothing of theirs is written until
    /// `release`, so a process that is slower only makes the race less close, never the
    /// assertions wrong.)
    async fn waiting(&mut self) {
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }

    async fn release(self) {
        match self {
            Hold::Sqlite(mut c) => c.execute("ROLLBACK").await.map(|_| ()).unwrap(),
            Hold::Pg(mut c) => c.execute("ROLLBACK").await.map(|_| ()).unwrap(),
            Hold::My(mut c) => c.execute("ROLLBACK").await.map(|_| ()).unwrap(),
        }
    }
}

/// `payrecon exceptions accept ID --reason ok --by BY`, running.
fn accept(config: &std::path::Path, id: &str, by: &str) -> Running {
    Running::spawn(command(
        config,
        &["exceptions", "accept", id, "--reason", "ok", "--by", by],
    ))
}

/// A held order `X-1` and its open exception's id.
async fn held(w: &World, config: &std::path::Path) -> (String, String) {
    let r = order(w, 1, 30).await;
    pay(w, 1, 20, "n-1");
    payrecon(config, &["run"]).await.assert_code(0);
    let xs = all(config).await;
    (r.clone(), id(one(&xs, "amount_mismatch", &r)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_people_accepting_at_once_one_wins_and_the_other_is_told_who() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let config = w.config("");
        let (r, x) = held(&w, &config).await;
        let mut hold = Hold::take(&url, &r).await;
        let mut a = accept(&config, &x, "ann");
        let mut b = accept(&config, &x, "ben");
        hold.waiting().await;
        hold.release().await;
        let (ca, _) = a.wait(Duration::from_secs(30)).await;
        let (cb, _) = b.wait(Duration::from_secs(30)).await;
        let mut codes = [ca, cb];
        codes.sort();
        assert_eq!(
            codes,
            [Some(0), Some(1)],
            "{url}: {}\n{}",
            a.stderr(),
            b.stderr()
        );
        let (winner, loser) = if ca == Some(0) {
            ("ann", &b)
        } else {
            ("ben", &a)
        };
        assert!(
            loser
                .stderr()
                .contains(&format!("accepted by {winner} at ")),
            "{url}: {}",
            loser.stderr()
        );
        assert_eq!(
            count(&w, "payrecon_transitions", "source = 'operator'").await,
            1,
            "{url}"
        );
        let xs = all(&config).await;
        assert_eq!(
            one(&xs, "amount_mismatch", &r)["resolved_by"],
            winner,
            "{url}"
        );
        assert_eq!(
            w.store.order_by_ref(&r).await.unwrap().unwrap().state,
            State::Final
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_killed_midway_leaves_nothing_and_can_be_made_again() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let config = w.config("");
        let (r, x) = held(&w, &config).await;
        let mut hold = Hold::take(&url, &r).await;
        let mut a = accept(&config, &x, "ann");
        hold.waiting().await;
        a.signal("KILL").await;
        let (code, _) = a.wait(Duration::from_secs(10)).await;
        assert_eq!(code, None, "{url}: killed by the signal");
        hold.release().await;
        assert_eq!(
            count(&w, "payrecon_transitions", "source = 'operator'").await,
            0,
            "{url}"
        );
        assert_eq!(
            count(&w, "payrecon_exceptions", "status = 'open'").await,
            1,
            "{url}"
        );
        assert_eq!(
            w.store.order_by_ref(&r).await.unwrap().unwrap().state,
            State::Unpaid
        );
        payrecon(
            &config,
            &["exceptions", "accept", &x, "--reason", "ok", "--by", "ann"],
        )
        .await
        .assert_code(0);
        assert_eq!(
            w.store.order_by_ref(&r).await.unwrap().unwrap().state,
            State::Final
        );
    }
}
