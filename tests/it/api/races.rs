//! Concurrent registrations of one ref, and a database that does not answer, on SQLite and
//! PostgreSQL: one 201 and the rest 200 (or 409 for other fields), one row; 503 with
//! `Retry-After` while the orders table is locked, then 201 once it is free.

use std::time::Duration;

use super::{order, post, serve_api};
use crate::cli::harness::{addr, World};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_clients_get_one_201_and_one_row() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let mut s = serve_api(&w, "").await;
        let pay_to = addr(3).to_string();
        let same = order("R-1", &pay_to, "500");
        let posts = (0..16).map(|_| post(&s, &same));
        let mut statuses: Vec<u16> = futures::future::join_all(posts)
            .await
            .iter()
            .map(|a| a.status)
            .collect();
        statuses.sort_unstable();
        assert_eq!(statuses[..2], [200, 200], "{url}");
        assert_eq!(
            statuses.iter().filter(|s| **s == 201).count(),
            1,
            "{url}: {statuses:?}"
        );
        assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 15);
        // Other amounts, at once: one of them wins the ref, the others are told 409.
        let bodies: Vec<_> = (0..8)
            .map(|i| order("R-2", &pay_to, &(1000 + i).to_string()))
            .collect();
        let answers = futures::future::join_all(bodies.iter().map(|b| post(&s, b))).await;
        let created = answers.iter().filter(|a| a.status == 201).count();
        let conflicts = answers.iter().filter(|a| a.status == 409).count();
        assert_eq!((created, conflicts), (1, 7), "{url}: {answers:?}");
        assert_eq!(w.count("orders").await, 2, "{url}");
        let _ = s.stop("TERM", Duration::from_secs(30)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_database_is_a_503_with_retry_after_and_nothing_half_written() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let mut s = serve_api(&w, "").await;
        let body = order("D-1", &addr(4).to_string(), "1");
        // Another session holds the orders table for longer than a request may wait.
        let held = hold_orders(&url).await;
        let wrong = super::client()
            .post(format!("{}/v1/orders", s.base))
            .bearer_auth(format!("{}x", super::TOKEN))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(wrong.status(), 401);
        let started = std::time::Instant::now();
        let resp = super::client()
            .post(format!("{}/v1/orders", s.base))
            .bearer_auth(super::TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        let a = super::answer(resp).await;
        assert_eq!(a.status, 503, "{url}: {a:?}");
        assert_eq!(a.content_type, "application/problem+json");
        assert_eq!(retry_after.as_deref(), Some("5"));
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{url}: bounded"
        );
        let text = a.body.to_string();
        assert!(
            !text.contains("postgres://") && !text.contains("sqlite") && !text.contains("mysql://"),
            "{text}"
        );
        held.release().await;
        let again = post(&s, &body).await;
        assert_eq!(again.status, 201, "{url}: {again:?}");
        assert_eq!(w.count("orders").await, 1, "{url}");
        let _ = s.stop("TERM", Duration::from_secs(30)).await;
        let log = s.proc.stderr();
        assert!(log.contains("answered 503"), "the 503 is logged:\n{log}");
        assert!(!log.contains(super::TOKEN), "the token is never logged");
    }
}

/// A transaction that holds the orders table: `BEGIN EXCLUSIVE` on SQLite, `LOCK TABLE` on
/// PostgreSQL, `LOCK TABLES … WRITE` on MariaDB/MySQL.
enum Held {
    Sqlite(sqlx::pool::PoolConnection<sqlx::Sqlite>, sqlx::SqlitePool),
    Postgres(sqlx::pool::PoolConnection<sqlx::Postgres>, sqlx::PgPool),
    MySql(sqlx::pool::PoolConnection<sqlx::MySql>, sqlx::MySqlPool),
}

impl Held {
    async fn release(self) {
        match self {
            Held::Sqlite(mut c, p) => {
                sqlx::query("ROLLBACK").execute(&mut *c).await.unwrap();
                drop(c);
                p.close().await;
            }
            Held::Postgres(mut c, p) => {
                sqlx::query("ROLLBACK").execute(&mut *c).await.unwrap();
                drop(c);
                p.close().await;
            }
            Held::MySql(mut c, p) => {
                sqlx::Executor::execute(&mut *c, "UNLOCK TABLES")
                    .await
                    .unwrap();
                drop(c);
                p.close().await;
            }
        }
    }
}

async fn hold_orders(url: &str) -> Held {
    if url.starts_with("sqlite") {
        let p = sqlx::SqlitePool::connect(url).await.unwrap();
        let mut c = p.acquire().await.unwrap();
        sqlx::query("BEGIN EXCLUSIVE")
            .execute(&mut *c)
            .await
            .unwrap();
        Held::Sqlite(c, p)
    } else if url.starts_with("mysql") {
        let p = sqlx::MySqlPool::connect(url).await.unwrap();
        let mut c = p.acquire().await.unwrap();
        // Unprepared: MySQL refuses LOCK TABLES as a prepared statement (1295).
        sqlx::Executor::execute(&mut *c, "LOCK TABLES orders WRITE")
            .await
            .unwrap();
        Held::MySql(c, p)
    } else {
        let p = sqlx::PgPool::connect(url).await.unwrap();
        let mut c = p.acquire().await.unwrap();
        sqlx::query("BEGIN").execute(&mut *c).await.unwrap();
        sqlx::query("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE")
            .execute(&mut *c)
            .await
            .unwrap();
        Held::Postgres(c, p)
    }
}
