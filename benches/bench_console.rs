//! Console benchmark (docs/benchmarks.md, "Operator console"): every page of the operator
//! console (docs/operations.md, "The operator console") against the real release binary's
//! `serve`, on SQLite and PostgreSQL, with a ledger seeded by SQL to `--orders` orders (nine in
//! ten paid, each with its payment and transition), `--exceptions` exceptions (one in five
//! open), `--events` events (one in 500 dead, one in 1,000 pending), `--findings` findings over
//! 30 days, `--runs` runs a minute apart and `--balances` deposit addresses (one in 100 with a
//! difference). Each page is asked `--samples` times, one request at a time, with ids, searches
//! and keyset bounds that vary; prints p50, p99 and max as the client measures them on loopback
//! (server time plus about 0.1 ms of HTTP). Asserts nothing about time; exits 1 when a page
//! does not answer 200.
//!
//! ```text
//! cargo bench --profile release --bench bench_console -- \
//!     [--orders 1000000] [--exceptions 100000] [--events 1000000] [--samples 200] \
//!     [--db sqlite|postgres|both]
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use payrecon::store::Store;
use payrecon_testkit::bench;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Db {
    Sqlite,
    Postgres,
    Both,
}

#[derive(Parser, Debug)]
#[command(about = "payrecon console benchmark")]
struct Args {
    #[arg(long, default_value_t = 1_000_000)]
    orders: u64,
    #[arg(long, default_value_t = 100_000)]
    exceptions: u64,
    #[arg(long, default_value_t = 1_000_000)]
    events: u64,
    #[arg(long, default_value_t = 300_000)]
    findings: u64,
    #[arg(long, default_value_t = 50_000)]
    runs: u64,
    #[arg(long, default_value_t = 100_000)]
    balances: u64,
    /// Requests per page.
    #[arg(long, default_value_t = 200)]
    samples: u64,
    #[arg(long, value_enum, default_value = "both")]
    db: Db,
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    pg_url: String,
    /// Keep the SQLite database and the configurations here (default: a temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
}

const TOKEN: &str = "0xdac17f958d2ee523a2206206994597c13d831ec7";
const KINDS: &str = "CASE i % 4 WHEN 0 THEN 'amount_mismatch' WHEN 1 THEN 'late_payment' \
                     WHEN 2 THEN 'unknown_payment' ELSE 'reorged' END";

/// The SQL that differs between the two backends.
#[derive(Clone, Copy, PartialEq)]
enum B {
    Sqlite,
    Pg,
}

impl B {
    /// A row source of `i` = 1..=n.
    fn series(self, n: u64) -> String {
        match self {
            B::Sqlite => format!(
                "(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {n}) \
                 SELECT i FROM s) AS g"
            ),
            B::Pg => format!("generate_series(1, {n}::bigint) AS g(i)"),
        }
    }
    /// `e` as `0x` and `width` hex digits.
    fn hex(self, e: &str, width: u32) -> String {
        match self {
            B::Sqlite => format!("printf('0x%0{width}x', {e})"),
            B::Pg => format!("'0x' || lpad(to_hex({e}), {width}, '0')"),
        }
    }
    /// The time `secs` seconds ago.
    fn ago(self, secs: &str) -> String {
        match self {
            B::Sqlite => {
                format!("strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || ({secs}) || ' seconds')")
            }
            B::Pg => format!("(now() - ({secs}) * interval '1 second')"),
        }
    }
    /// An integer as the backend keeps amounts.
    fn amount(self, e: &str) -> String {
        match self {
            B::Sqlite => format!("CAST({e} AS TEXT)"),
            B::Pg => format!("({e})"),
        }
    }
}

/// The statements that seed the ledger (orders `C-<i>`, ids 1..=orders in a new database).
fn seed_sql(b: B, a: &Args) -> Vec<(&'static str, String)> {
    let (n, x) = (a.orders, a.exceptions);
    let paid = "i % 10 <> 0";
    let orders = format!(
        "INSERT INTO orders (order_ref, chain, pay_to, asset, amount_due, tx_hash, log_index, \
         amount_paid, block_number, block_hash, state, state_changed_at, created_at, \
         payrecon_updated_at) \
         SELECT 'C-' || i, 'ethereum', {addr}, '{TOKEN}', {due}, \
         CASE WHEN {paid} THEN {tx} END, CASE WHEN {paid} THEN 0 END, \
         CASE WHEN {paid} THEN {due} WHEN i % 100 = 0 THEN {half} END, \
         CASE WHEN {paid} THEN 1000 + i / 10 END, \
         CASE WHEN {paid} THEN {block} END, CASE WHEN {paid} THEN 'final' ELSE 'unpaid' END, \
         CASE WHEN {paid} THEN {changed} END, {created}, {changed} FROM {series}",
        addr = b.hex("i", 40),
        due = b.amount("1000000 + i % 1000"),
        half = b.amount("500000"),
        tx = b.hex("i", 64),
        block = b.hex("1000 + i / 10", 64),
        changed = b.ago(&format!("({n} - i) * 2")),
        created = b.ago(&format!("({n} - i) * 2 + 60")),
        series = b.series(n),
    );
    let payments = "INSERT INTO payrecon_payments (order_id, chain, tx_hash, log_index, amount, \
         block_number, block_hash, block_time, state, source, provider, run_id, created_at, \
         state_changed_at) SELECT id, chain, tx_hash, log_index, amount_paid, block_number, \
         block_hash, state_changed_at, 'final', 'reconcile', 'cg', 'bench', state_changed_at, \
         state_changed_at FROM orders WHERE tx_hash IS NOT NULL"
        .to_string();
    // Orders held: one in 100 unpaid orders has half its amount paid.
    let held = format!(
        "INSERT INTO payrecon_payments (order_id, chain, tx_hash, log_index, amount, \
         block_number, block_hash, block_time, state, source, provider, run_id, created_at, \
         state_changed_at) SELECT id, chain, {tx}, 0, amount_paid, 1000, {tx}, created_at, \
         'final', 'reconcile', 'cg', 'bench', created_at, created_at FROM orders \
         WHERE state = 'unpaid' AND amount_paid IS NOT NULL",
        tx = b.hex(&format!("{} + id", 3 * n), 64),
    );
    let transitions = "INSERT INTO payrecon_transitions (order_id, from_state, to_state, source, \
         provider, run_id, created_at) SELECT id, 'unpaid', 'final', 'reconcile', 'cg', 'bench', \
         state_changed_at FROM orders WHERE tx_hash IS NOT NULL"
        .to_string();
    let body = "'{\"type\":\"order.final\",\"data\":{\"order_ref\":\"C-0\",\"state\":\"final\",\
                \"chain\":\"ethereum\",\"amount\":\"1000000\",\"tx_hash\":\"0x00000000000000000000\
                00000000000000000000000000000000000000000000\",\"log_index\":0}}'";
    let events = |cause: &str, table: &str, limit: u64| {
        let (tid, pid) = match cause {
            "t" => ("c.id", "NULL"),
            _ => ("NULL", "c.id"),
        };
        format!(
            "INSERT INTO payrecon_events (id, transition_id, payment_id, order_id, type, body, \
             created_at, attempts, next_attempt_at, delivered_at, dead_at, last_status, \
             last_error) SELECT 'msg_{cause}' || c.id, {tid}, {pid}, c.order_id, 'order.final', \
             {body}, c.created_at, CASE WHEN c.id % 500 = 0 THEN 12 ELSE 1 END, c.created_at, \
             CASE WHEN c.id % 500 = 0 OR c.id % 1000 = 1 THEN NULL ELSE c.created_at END, \
             CASE WHEN c.id % 500 = 0 THEN c.created_at END, \
             CASE WHEN c.id % 500 = 0 THEN 503 ELSE 200 END, \
             CASE WHEN c.id % 500 = 0 THEN 'HTTP 503' END \
             FROM {table} c ORDER BY c.id LIMIT {limit}"
        )
    };
    let by_transition = a.events.min(n - n / 10);
    let exceptions = format!(
        "INSERT INTO payrecon_exceptions (kind, order_id, chain, tx_hash, log_index, amount, \
         detail, status, first_seen_at, last_seen_at, seen_count, resolved_at, resolved_by, \
         resolution, note, problem, last_run_id) \
         SELECT {KINDS}, CASE WHEN i % 4 = 2 THEN NULL ELSE {oid} END, 'ethereum', \
         CASE WHEN i % 4 = 2 THEN {stray} ELSE {tx} END, 0, '999000', 'seeded', \
         CASE WHEN i % 5 = 0 THEN 'open' ELSE 'resolved' END, {seen}, {seen}, 1, \
         CASE WHEN i % 5 = 0 THEN NULL ELSE {seen} END, \
         CASE WHEN i % 5 = 0 THEN NULL ELSE 'bench' END, \
         CASE WHEN i % 5 = 0 THEN NULL ELSE 'dismissed' END, \
         CASE WHEN i % 5 = 0 THEN NULL ELSE 'seeded' END, 'bench:' || i, 'bench' FROM {series}",
        oid = order_of_exception(n, x, "i"),
        stray = b.hex(&format!("{n} + i"), 64),
        tx = b.hex(&order_of_exception(n, x, "i"), 64),
        seen = b.ago(&format!("({x} - i) * 20")),
        series = b.series(x),
    );
    let findings = format!(
        "INSERT INTO payrecon_findings (run_id, provider, kind, chain, tx_hash, log_index, \
         order_ref, local_state, observed_state, action, detail, created_at) \
         SELECT 'run-' || (i / 6), 'cg', CASE i % 3 WHEN 0 THEN 'missing' \
         WHEN 1 THEN 'failed_notification' ELSE {KINDS} END, 'ethereum', {tx}, 0, 'C-' || i, \
         'unpaid', 'final', 'applied', '', {at} FROM {series}",
        tx = b.hex("i", 64),
        at = b.ago(&format!("i * {}", 30 * 86_400 / a.findings.max(1))),
        series = b.series(a.findings),
    );
    let runs = format!(
        "INSERT INTO payrecon_runs (id, \"trigger\", started_at, finished_at, \"since\", \
         \"until\", status, checked, gaps, applied, resends_requested, error, providers) \
         SELECT 'run-' || i, 'schedule', {start}, {end}, {since}, {end}, \
         CASE WHEN i % 100 = 0 THEN 'failed' ELSE 'ok' END, 120, i % 3, i % 3, 0, \
         CASE WHEN i % 100 = 0 THEN 'sandbox: timed out' END, ',sandbox,chain,run,' FROM {series}",
        start = b.ago(&format!("({} - i) * 60 + 5", a.runs)),
        end = b.ago(&format!("({} - i) * 60", a.runs)),
        since = b.ago(&format!("({} - i) * 60 + 86400", a.runs)),
        series = b.series(a.runs),
    );
    let balances = format!(
        "INSERT INTO payrecon_balances (chain, address, asset, opening_block, opening_balance, \
         checked_block, balance, expected, difference, checked_at) \
         SELECT 'ethereum', {addr}, '{TOKEN}', 1000, {zero}, 2000, {bal}, {exp}, {diff}, {at} \
         FROM {series}",
        addr = b.hex("i", 40),
        zero = b.amount("0"),
        bal = b.amount("1000000"),
        exp = b.amount("CASE WHEN i % 100 = 0 THEN 1500000 ELSE 1000000 END"),
        diff = b.amount("CASE WHEN i % 100 = 0 THEN -500000 ELSE 0 END"),
        at = b.ago("600"),
        series = b.series(a.balances),
    );
    vec![
        ("orders", orders),
        ("payments", payments),
        ("held payments", held),
        ("transitions", transitions),
        (
            "transition events",
            events("t", "payrecon_transitions", by_transition),
        ),
        (
            "payment events",
            events("p", "payrecon_payments", a.events - by_transition),
        ),
        ("exceptions", exceptions),
        ("findings", findings),
        ("runs", runs),
        ("balances", balances),
    ]
}

/// The order (its id and number) exception `i` is about: a paid one (never a multiple of 10).
fn order_of_exception(orders: u64, exceptions: u64, i: &str) -> String {
    let step = (orders / exceptions.max(1)).max(1);
    format!("((({i}) * {step} - 1) % {orders} + 1)")
}

/// `serve` with the console on, the operator named by a header from loopback.
async fn start(url: &str, dir: &Path, name: &str) -> Result<bench::Serve, String> {
    let extra = format!(
        "[schedule]\ncron = \"0 0 0 1 1 *\"\n[console]\nenabled = true\n\
         operators_file = \"{}\"\ntrusted_header = \"X-Operator\"\n\
         trusted_proxies = [\"127.0.0.1\"]\n",
        dir.join("no-operators").display()
    );
    bench::serve(url, dir, name, &extra, Duration::from_secs(60)).await
}

/// A page's name and the path of its `k`th sample.
type Page = (&'static str, Box<dyn Fn(u64) -> String>);

/// The pages and the path of their `k`th sample.
fn pages(a: &Args) -> Vec<Page> {
    let (n, x, e, r) = (a.orders, a.exceptions, a.events, a.runs);
    let spread = move |k: u64, m: u64| (k * 7919) % m.max(1) + 1;
    let exc_order = move |k: u64| {
        let i = spread(k, x);
        let step = (n / x.max(1)).max(1);
        (i * step - 1) % n + 1
    };
    vec![
        ("overview", Box::new(|_| "/console".into())),
        (
            "exceptions (open)",
            Box::new(|_| "/console/exceptions".into()),
        ),
        (
            "exceptions by kind",
            Box::new(|k| {
                let kind = [
                    "amount_mismatch",
                    "late_payment",
                    "unknown_payment",
                    "reorged",
                ];
                format!("/console/exceptions?kind={}", kind[(k % 4) as usize])
            }),
        ),
        (
            "exceptions, a later page",
            Box::new(move |k| format!("/console/exceptions?status=all&before={}", spread(k, x))),
        ),
        (
            "search: order ref",
            Box::new(move |k| format!("/console/exceptions?status=all&q=C-{}", exc_order(k))),
        ),
        (
            "search: tx hash",
            Box::new(move |k| format!("/console/exceptions?status=all&q=0x{:064X}", exc_order(k))),
        ),
        (
            "search: address",
            Box::new(move |k| format!("/console/exceptions?status=all&q=0x{:040x}", exc_order(k))),
        ),
        (
            "an exception",
            Box::new(move |k| format!("/console/exceptions/{}", spread(k, x))),
        ),
        (
            "an order's story",
            Box::new(move |k| format!("/console/orders/C-{}", exc_order(k))),
        ),
        ("events (dead)", Box::new(|_| "/console/events".into())),
        (
            "events (pending)",
            Box::new(|_| "/console/events?status=pending".into()),
        ),
        (
            "events, a later page",
            Box::new(move |k| format!("/console/events?status=delivered&before={}", spread(k, e))),
        ),
        ("runs", Box::new(|_| "/console/runs".into())),
        (
            "runs, a later page",
            Box::new(move |k| {
                let i = spread(k, r);
                format!("/console/runs?at={}&id=run-{i}", at_of_run(r, i))
            }),
        ),
        ("balances", Box::new(|_| "/console/balances".into())),
    ]
}

/// Roughly when run `i` started (a keyset bound only needs to be a time).
fn at_of_run(runs: u64, i: u64) -> String {
    let t = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(((runs - i) * 60 + 5) as i64);
    t.to_string()
}

async fn bench(name: &str, url: &str, b: B, args: &Args, dir: &Path) -> Result<(), String> {
    let store = Store::connect(url, 4).await.map_err(|e| e.to_string())?;
    store.migrate().await.map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    for (what, sql) in seed_sql(b, args) {
        let t = Instant::now();
        let done = match &store {
            Store::Sqlite(p) => sqlx::query(&sql)
                .execute(p)
                .await
                .map(|r| r.rows_affected()),
            Store::Postgres(p) => sqlx::query(&sql)
                .execute(p)
                .await
                .map(|r| r.rows_affected()),
            Store::MySql(_) => return Err("SQLite and PostgreSQL only".into()),
        };
        let rows = done.map_err(|e| format!("seed {what}: {e}"))?;
        println!(
            "{name:<8} seeded {rows:>8} {what} in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    if let Store::Postgres(p) = &store {
        // As autovacuum leaves it: statistics and the visibility map.
        sqlx::query("VACUUM ANALYZE")
            .execute(p)
            .await
            .map_err(|e| e.to_string())?;
    }
    println!("{name:<8} seeded in {:.1} s", t0.elapsed().as_secs_f64());
    drop(store);
    let serve = start(url, dir, name).await?;
    let base = &serve.base;
    let client = reqwest::Client::new();
    println!(
        "{name:<8} {:<26} {:>8} {:>8} {:>8} {:>9}",
        "page", "p50 ms", "p99 ms", "max ms", "KiB"
    );
    for (page, path) in pages(args) {
        let mut lat = Vec::new();
        let mut size = 0;
        for k in 0..=args.samples {
            let p = path(k);
            let t = Instant::now();
            let resp = client
                .get(format!("{base}{p}"))
                .header("X-Operator", "bench")
                .send()
                .await
                .map_err(|e| format!("{p}: {e}"))?;
            let status = resp.status();
            let body = resp.bytes().await.map_err(|e| format!("{p}: {e}"))?;
            let us = t.elapsed().as_micros() as u64;
            if status != 200 {
                return Err(format!(
                    "{p} answered {status}: {}",
                    String::from_utf8_lossy(&body)
                ));
            }
            // The first request warms the connection and the caches.
            if k > 0 {
                lat.push(us);
                size = size.max(body.len());
            }
        }
        lat.sort_unstable();
        println!(
            "{name:<8} {page:<26} {:>8.2} {:>8.2} {:>8.2} {:>9.1}",
            bench::pct(&lat, 0.5),
            bench::pct(&lat, 0.99),
            bench::pct(&lat, 1.0),
            size as f64 / 1024.0
        );
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse_from(payrecon_testkit::bench::argv());
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dir = args.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let mut runs: Vec<(&str, String, B)> = Vec::new();
    if args.db != Db::Postgres {
        let url = format!("sqlite://{}?mode=rwc", dir.join("console.db").display());
        runs.push(("sqlite", url, B::Sqlite));
    }
    if args.db != Db::Sqlite {
        // A database of its own, dropped first: the bench never touches other tables.
        let db = "payrecon_bench_console";
        match sqlx::PgPool::connect(&args.pg_url).await {
            Ok(p) => {
                let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
                    .execute(&p)
                    .await;
                if let Err(e) = sqlx::query(&format!("CREATE DATABASE {db}"))
                    .execute(&p)
                    .await
                {
                    eprintln!("postgres: cannot create {db}: {e}");
                    return ExitCode::FAILURE;
                }
                let base = args.pg_url.rsplit_once('/').map(|(b, _)| b).unwrap_or("");
                runs.push(("postgres", format!("{base}/{db}"), B::Pg));
            }
            Err(e) => println!("postgres: skipped ({e})"),
        }
    }
    for (name, url, b) in runs {
        if let Err(e) = bench(name, &url, b, &args, &dir).await {
            eprintln!("{name}: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
