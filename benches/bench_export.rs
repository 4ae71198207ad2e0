//! Export benchmark (README.md, "Exceptions and the export for finance"): `payrecon export` of
//! N credited payments to a CSV file, run as the real binary, timed, with its peak RSS as the
//! kernel counts it (GNU time's `%M`), first at `--first` payments and then at `--payments`:
//! memory must stay flat (the rows stream from one cursor to a buffered writer).
//!
//! ```text
//! cargo bench --profile release --bench bench_export -- \
//!     [--first 100000] [--payments 1000000] [--db sqlite|postgres|both] [--pg-url URL]
//! ```
//! The payments are seeded by SQL (orders `E-<i>`, final, one payment each, amounts that
//! vary in every digit, a block time a second apart). Prints figures; asserts nothing about
//! time. Exits 1 when the export does not hold every payment.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

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
#[command(about = "payrecon export benchmark")]
struct Args {
    /// Payments at the first measurement.
    #[arg(long, default_value_t = 100_000)]
    first: u64,
    /// Payments at the second measurement.
    #[arg(long, default_value_t = 1_000_000)]
    payments: u64,
    #[arg(long, value_enum, default_value = "both")]
    db: Db,
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    pg_url: String,
}

const TOKEN: &str = "0xdac17f958d2ee523a2206206994597c13d831ec7";
/// 2026-01-01T00:00:00Z.
const EPOCH: u64 = 1_767_225_600;

/// One final payment for each order from `E-<from>` on (the same on both backends).
fn payments_sql(from: u64) -> String {
    format!(
        "INSERT INTO payrecon_payments (order_id, chain, tx_hash, log_index, amount, \
         block_number, block_hash, block_time, state, source, provider, run_id, \
         created_at, state_changed_at) \
         SELECT id, chain, tx_hash, log_index, amount_paid, block_number, block_hash, \
         state_changed_at, 'final', 'reconcile', 'cg', 'bench', state_changed_at, \
         state_changed_at FROM orders WHERE id >= (SELECT id FROM orders \
         WHERE order_ref = 'E-{from}')"
    )
}

/// Orders `E-<from..=to>` and their payments, in the database (SQL only).
async fn seed(store: &Store, from: u64, to: u64) -> Result<(), sqlx::Error> {
    match store {
        Store::Sqlite(p) => {
            let orders = format!(
                "WITH RECURSIVE n(i) AS (SELECT {from} UNION ALL SELECT i + 1 FROM n WHERE i < {to}) \
                 INSERT INTO orders (order_ref, chain, pay_to, asset, amount_due, tx_hash, log_index, \
                 amount_paid, block_number, block_hash, state, state_changed_at) \
                 SELECT 'E-' || i, 'ethereum', printf('0x%040x', i), '{TOKEN}', \
                 CAST(1000000 + (i * 7919) % 999999999 AS TEXT), printf('0x%064x', i), i % 3, \
                 CAST(1000000 + (i * 7919) % 999999999 AS TEXT), 1000 + i / 10, \
                 printf('0x%064x', 1000 + i / 10), 'final', \
                 strftime('%Y-%m-%dT%H:%M:%fZ', {EPOCH} + i, 'unixepoch') FROM n"
            );
            sqlx::query(&orders).execute(p).await?;
            sqlx::query(&payments_sql(from)).execute(p).await?;
        }
        Store::Postgres(p) => {
            let orders = format!(
                "INSERT INTO orders (order_ref, chain, pay_to, asset, amount_due, tx_hash, log_index, \
                 amount_paid, block_number, block_hash, state, state_changed_at) \
                 SELECT 'E-' || i, 'ethereum', '0x' || lpad(to_hex(i), 40, '0'), '{TOKEN}', \
                 1000000 + (i * 7919) % 999999999, '0x' || lpad(to_hex(i), 64, '0'), i % 3, \
                 1000000 + (i * 7919) % 999999999, 1000 + i / 10, \
                 '0x' || lpad(to_hex(1000 + i / 10), 64, '0'), 'final', to_timestamp({EPOCH} + i) \
                 FROM generate_series({from}::bigint, {to}::bigint) AS i"
            );
            sqlx::query(&orders).execute(p).await?;
            sqlx::query(&payments_sql(from)).execute(p).await?;
            sqlx::query("ANALYZE").execute(p).await?;
        }
        Store::MySql(_) => {
            return Err(sqlx::Error::Configuration(
                "bench_export seeds SQLite and PostgreSQL only".into(),
            ))
        }
    }
    Ok(())
}

struct Measured {
    seconds: f64,
    peak_kib: u64,
    rows: u64,
    bytes: u64,
}

/// Runs `payrecon export` under GNU time; reads wall time and peak RSS from its last line.
fn export(config: &Path, out: &Path) -> Result<Measured, String> {
    let t0 = Instant::now();
    let o = std::process::Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(bench::binary())
        .arg("--config")
        .arg(config)
        .args(["export", "--output"])
        .arg(out)
        .output()
        .map_err(|e| format!("run /usr/bin/time: {e}"))?;
    let seconds = t0.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() {
        return Err(format!("export failed: {stderr}"));
    }
    let peak_kib = stderr
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| format!("no peak RSS in {stderr:?}"))?;
    let text = std::fs::read(out).map_err(|e| e.to_string())?;
    let rows = text.iter().filter(|b| **b == b'\n').count() as u64 - 1;
    Ok(Measured {
        seconds,
        peak_kib,
        rows,
        bytes: text.len() as u64,
    })
}

async fn bench(name: &str, url: &str, args: &Args, dir: &Path) -> Result<(), String> {
    let store = Store::connect(url, 4).await.map_err(|e| e.to_string())?;
    store.migrate().await.map_err(|e| e.to_string())?;
    let config = dir.join(format!("{name}.toml"));
    let toml =
        payrecon_testkit::sandbox::config_toml(url, "http://127.0.0.1:9", "http://127.0.0.1:9", "");
    std::fs::write(&config, toml).map_err(|e| e.to_string())?;
    let out = dir.join(format!("{name}.csv"));
    let mut have = 0;
    for n in [args.first, args.payments] {
        let t0 = Instant::now();
        seed(&store, have + 1, n).await.map_err(|e| e.to_string())?;
        let seeded = t0.elapsed().as_secs_f64();
        have = n;
        let m = export(&config, &out)?;
        println!(
            "{name:<8} {n:>9} payments  seeded in {seeded:>6.1} s  export {:>6.2} s \
             ({:>7.0} rows/s)  peak RSS {:>6.1} MiB  file {:>6.1} MiB",
            m.seconds,
            m.rows as f64 / m.seconds,
            m.peak_kib as f64 / 1024.0,
            m.bytes as f64 / 1_048_576.0
        );
        if m.rows != n {
            return Err(format!("{name}: the export holds {} rows, not {n}", m.rows));
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse_from(payrecon_testkit::bench::argv());
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut runs: Vec<(&str, String)> = Vec::new();
    if args.db != Db::Postgres {
        let url = format!(
            "sqlite://{}?mode=rwc",
            dir.path().join("export.db").display()
        );
        runs.push(("sqlite", url));
    }
    if args.db != Db::Sqlite {
        // A schema of its own, dropped first: the bench never touches other tables.
        match bench::pg_schema(&args.pg_url, "payrecon_bench_export").await {
            Ok(url) => runs.push(("postgres", url)),
            Err(e) => {
                eprintln!("bench_export: {e}");
                return ExitCode::from(1);
            }
        }
    }
    println!(
        "payrecon export: {} then {} payments",
        args.first, args.payments
    );
    for (name, url) in &runs {
        if let Err(e) = bench(name, url, &args, dir.path()).await {
            eprintln!("bench_export: {e}");
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}
