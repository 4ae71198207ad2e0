//! Event delivery benchmark (docs/reference.md §6): how fast payrecon's delivery loop empties
//! an outbox into a local receiver, and how long an event waits between its commit and its
//! first attempt while `serve`'s loop runs.
//!
//! ```text
//! cargo bench --profile release --bench bench_events -- [--events 20000] [--db sqlite|postgres|both]
//!     [--concurrency 8] [--latency-samples 200] [--receiver-ms 0] [--pg-url URL]
//! ```
//! The receiver is a real HTTP server on loopback, in this process on its own runtime; it
//! answers 200 after `--receiver-ms`. Prints figures; asserts nothing about time. Exits 1 when
//! an event was not delivered exactly once.

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use payrecon::app::App;
use payrecon::config::Config;
use payrecon::domain::{PlannedTransition, State, U256};
use payrecon::store::{ApplyContext, NewOrder, Source, Store};
use payrecon_testkit::inspect::Inspect;
use sqlx::Connection;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Db {
    Sqlite,
    Postgres,
    Both,
}

#[derive(Parser, Debug)]
#[command(about = "payrecon event delivery benchmark (local receiver on loopback)")]
struct Args {
    /// Events in the outbox for the throughput run.
    #[arg(long, default_value_t = 20_000)]
    events: usize,
    #[arg(long, value_enum, default_value = "sqlite")]
    db: Db,
    /// `events.max_concurrency`.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Commits measured one by one for the commit-to-first-attempt latency.
    #[arg(long, default_value_t = 200)]
    latency_samples: usize,
    /// The receiver's own time per request.
    #[arg(long, default_value_t = 0)]
    receiver_ms: u64,
    #[arg(
        long,
        env = "PAYRECON_BENCH_PG_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/postgres"
    )]
    pg_url: String,
}

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// Arrival time of each webhook-id, and how many requests in all.
#[derive(Default)]
struct Seen {
    at: HashMap<String, Instant>,
    requests: u64,
}

async fn receiver(delay: Duration) -> (String, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let state = seen.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/events", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/events",
        axum::routing::post(move |headers: axum::http::HeaderMap| {
            let state = state.clone();
            async move {
                let id = headers
                    .get("webhook-id")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string();
                {
                    let mut g = state.lock().unwrap();
                    g.requests += 1;
                    g.at.entry(id).or_insert_with(Instant::now);
                }
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                axum::http::StatusCode::OK
            }
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, seen)
}

fn main() -> ExitCode {
    let args = Args::parse_from(payrecon_testkit::bench::argv());
    let receiver_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("receiver")
        .enable_all()
        .build()
        .expect("receiver runtime");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (url, seen) = receiver_rt.block_on(receiver(Duration::from_millis(args.receiver_ms)));
    let dbs: &[&str] = match args.db {
        Db::Sqlite => &["sqlite"],
        Db::Postgres => &["postgres"],
        Db::Both => &["sqlite", "postgres"],
    };
    let mut ok = true;
    for db in dbs {
        *seen.lock().unwrap() = Seen::default();
        match rt.block_on(bench(&args, db, &url, &seen)) {
            Ok(()) => {}
            Err(e) => {
                eprintln!("bench_events ({db}): {e:#}");
                ok = false;
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

async fn bench(args: &Args, db: &str, url: &str, seen: &Arc<Mutex<Seen>>) -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let (db_url, pg_name) = if db == "sqlite" {
        (
            format!("sqlite://{}", tmp.path().join("events.db").display()),
            None,
        )
    } else {
        let name = format!("payrecon_bench_events_{}", std::process::id());
        let mut admin = sqlx::PgConnection::connect(&args.pg_url).await?;
        sqlx::query(&format!("DROP DATABASE IF EXISTS {name}"))
            .execute(&mut admin)
            .await?;
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await?;
        let base = args
            .pg_url
            .rsplit_once('/')
            .map(|(b, _)| b)
            .unwrap_or(&args.pg_url);
        (format!("{base}/{name}"), Some(name))
    };
    let text = format!(
        "[database]\nurl = \"{db_url}\"\n[events]\nurl = \"{url}\"\nsecret = \"{SECRET}\"\n\
         max_concurrency = {}\nflush_timeout = \"10m\"\n",
        args.concurrency
    );
    let app = App::build(Config::from_toml(&text, std::iter::empty())?).await?;
    let store = app.engine.store.clone();
    let deliverer = app.events.clone().expect("events on");

    // Throughput: an outbox of `events` pending events, emptied by one flush.
    let t0 = Instant::now();
    seed(&store, "T", args.events).await?;
    let seeded = t0.elapsed();
    let t1 = Instant::now();
    let f = deliverer.flush(Duration::from_secs(600)).await;
    let wall = t1.elapsed();
    let (distinct, requests) = {
        let g = seen.lock().unwrap();
        (g.at.len(), g.requests)
    };
    println!(
        "bench_events ({db}): {} events written in {:.2?} (batches of 500, with their \
         transitions); delivered {} in {:.2?} at max_concurrency {}: {:.0} events/s; \
         {} requests, {} distinct ids",
        args.events,
        seeded,
        f.delivered,
        wall,
        args.concurrency,
        f.delivered as f64 / wall.as_secs_f64(),
        requests,
        distinct
    );
    anyhow::ensure!(
        f.delivered as usize == args.events && distinct == args.events,
        "not every event was delivered exactly once"
    );

    // Latency: serve's loop runs; each sample commits one transition and wakes it, as a run's
    // batch does; the receiver notes the arrival of that event's first attempt.
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let d = deliverer.clone();
    let task = tokio::spawn(async move {
        d.run(async move {
            let _ = stop_rx.await;
        })
        .await
    });
    let wake = app.engine.events_wake.clone().expect("events on");
    let mut latencies = Vec::with_capacity(args.latency_samples);
    for i in 0..args.latency_samples {
        let order_ref = format!("L-{i}");
        insert_orders(&store, &order_ref, 1).await?;
        let id = order_id(&store, &format!("{order_ref}-0")).await?;
        let before = seen.lock().unwrap().at.len();
        apply(&store, &[id]).await?;
        let committed = Instant::now();
        wake.notify_one();
        let deadline = Instant::now() + Duration::from_secs(10);
        let arrived = loop {
            let newest = {
                let g = seen.lock().unwrap();
                (g.at.len() > before).then(|| g.at.values().max().copied())
            };
            if let Some(a) = newest {
                break a;
            }
            anyhow::ensure!(Instant::now() < deadline, "sample {i} was not delivered");
            tokio::time::sleep(Duration::from_micros(200)).await;
        };
        if let Some(a) = arrived {
            latencies.push(a.saturating_duration_since(committed));
        }
        // Idle between commits, as a quiet shop is.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let _ = stop_tx.send(());
    task.await?;
    latencies.sort();
    let pct = |p: f64| {
        let i = ((latencies.len() as f64 - 1.0) * p).round() as usize;
        latencies.get(i).copied().unwrap_or_default()
    };
    println!(
        "bench_events ({db}): commit to first attempt over {} commits: p50 {:.2?}, p99 {:.2?}, \
         max {:.2?} (serve's loop, woken by the commit; polling every {:?} is the fallback)",
        latencies.len(),
        pct(0.5),
        pct(0.99),
        latencies.last().copied().unwrap_or_default(),
        payrecon::events::POLL
    );
    payrecon_testkit::on_pool!(&store, p => p.close().await);
    drop(app);
    if let Some(name) = pg_name {
        let mut admin = sqlx::PgConnection::connect(&args.pg_url).await?;
        sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .execute(&mut admin)
            .await?;
    }
    Ok(())
}

async fn insert_orders(store: &Store, prefix: &str, n: usize) -> anyhow::Result<()> {
    let orders: Vec<NewOrder> = (0..n)
        .map(|i| NewOrder {
            order_ref: format!("{prefix}-{i}"),
            chain: "ethereum".into(),
            pay_to: format!("0x{:040x}", i + 1),
            asset: "native".into(),
            amount_due: U256::from(1000u64),
        })
        .collect();
    store.insert_orders(&orders).await?;
    Ok(())
}

async fn order_id(store: &Store, order_ref: &str) -> anyhow::Result<i64> {
    Ok(store
        .order_by_ref(order_ref)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no order {order_ref}"))?
        .id)
}

/// `n` orders moved `unpaid -> pending` by payrecon in batches of 500 (events on).
async fn seed(store: &Store, prefix: &str, n: usize) -> anyhow::Result<()> {
    insert_orders(store, prefix, n).await?;
    let ids: Vec<i64> = payrecon_testkit::on_pool!(store, p => {
        sqlx::query_scalar("SELECT id FROM orders ORDER BY id")
            .fetch_all(p)
            .await?
    });
    for chunk in ids.chunks(500) {
        apply(store, chunk).await?;
    }
    Ok(())
}

async fn apply(store: &Store, ids: &[i64]) -> anyhow::Result<()> {
    let batch: Vec<PlannedTransition> = ids
        .iter()
        .map(|&order_id| PlannedTransition {
            order_id,
            order_ref: String::new(),
            from: State::Unpaid,
            to: State::Pending,
            attach: None,
            credit: None,
        })
        .collect();
    let ctx = ApplyContext {
        source: Source::Reconcile,
        provider: "bench".into(),
        run_id: "bench".into(),
        events: true,
        retries: Default::default(),
    };
    store.apply(&batch, &ctx).await?;
    Ok(())
}
