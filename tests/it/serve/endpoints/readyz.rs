//! /readyz with the database gone (a 503) and with the database hanging (a 503 within the
//! probe's timeout of 1 s, ready again once it answers).

use std::time::Duration;

use crate::cli::harness::World;
use crate::serve::{Served, NEVER};
use crate::support::wait_until;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_is_503_when_the_database_is_gone() {
    let Some(url) = crate::support::pg_database_url().await else {
        return;
    };
    let name = url.rsplit('/').next().unwrap().to_string();
    let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
    let config = w.config(NEVER);
    let mut s = Served::start(&config).await;
    assert_eq!(s.get("/readyz").await.0, 200);

    let t0 = std::time::Instant::now();
    let base = std::env::var("PAYRECON_TEST_PG_URL").unwrap();
    let admin = sqlx::PgPool::connect(&base).await.unwrap();
    // The database goes away: no new connections, every session ended. (Not DROP DATABASE:
    // its checkpoint takes tens of seconds on a busy test server.)
    for sql in [
        format!("ALTER DATABASE {name} ALLOW_CONNECTIONS false"),
        format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = '{name}' AND pid <> pg_backend_pid()"
        ),
    ] {
        sqlx::query(&sql).execute(&admin).await.unwrap();
    }
    eprintln!("dropped after {:?}", t0.elapsed());
    wait_until("/readyz 503", Duration::from_secs(30), || async {
        s.get("/readyz").await.0 == 503
    })
    .await;
    eprintln!("503 after {:?}", t0.elapsed());
    let (_, body) = s.get("/readyz").await;
    assert!(body.contains("database"), "{body}");
    assert_eq!(s.get("/healthz").await.0, 200, "healthz stays 200");
    // The database is back: ready again.
    sqlx::query(&format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true"))
        .execute(&admin)
        .await
        .unwrap();
    wait_until("/readyz 200 again", Duration::from_secs(30), || async {
        s.get("/readyz").await.0 == 200
    })
    .await;
    let (code, took) = s.stop("TERM", Duration::from_secs(20)).await;
    eprintln!("stopped after {:?} ({took:?})", t0.elapsed());
    assert_eq!(code, Some(0), "{}", s.proc.stderr());
}

/// A database that stops answering (every connection hangs, nothing is closed: a network
/// partition, a frozen server) is a 503 within Kubernetes' default probe timeout of 1 s, not a
/// probe that times out; ready again once it answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_answers_within_a_second_when_the_database_hangs() {
    use payrecon_testkit::pgproxy::{via, PgProxy};
    let Some(url) = crate::support::pg_url().await else {
        return;
    };
    let (_, upstream) = via(&url, "");
    let proxy = PgProxy::start(upstream).await;
    let w = World::new(
        payrecon_testkit::tmp::dir().unwrap(),
        via(&url, &proxy.addr).0,
    )
    .await;
    let config = w.config(NEVER);
    let mut s = Served::start(&config).await;
    assert_eq!(s.get("/readyz").await.0, 200);
    proxy.freeze(true);
    let probe = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    for i in 0..5 {
        let t0 = std::time::Instant::now();
        let answer = probe.get(format!("{}/readyz", s.base)).send().await;
        let status = answer.as_ref().map(|r| r.status().as_u16());
        eprintln!("probe {i}: {status:?} in {:?}", t0.elapsed());
        assert!(
            matches!(status, Ok(503)),
            "probe {i} while the database hangs: {answer:?}"
        );
    }
    assert_eq!(s.get("/healthz").await.0, 200, "healthz stays 200");
    proxy.freeze(false);
    proxy.cut(None).await;
    wait_until("/readyz 200 again", Duration::from_secs(30), || async {
        s.get("/readyz").await.0 == 200
    })
    .await;
    let (code, _) = s.stop("TERM", Duration::from_secs(20)).await;
    assert_eq!(code, Some(0), "{}", s.proc.stderr());
}
