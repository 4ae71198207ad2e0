//! Floor A: the pages the engine reads (failed list, then the full list), fetched with the
//! same concurrency by a minimal reqwest loop that only reads the bodies: page 1 first (for
//! `last_page`), then pages 2..=last with `buffer_unordered(concurrency)`.

use std::time::{Duration, Instant};

use futures::StreamExt;

pub struct Floor {
    pub wall: Duration,
    pub pages: u64,
    pub bytes: u64,
}

pub async fn floor_a(
    base_url: &str,
    api_key: &str,
    chain: &str,
    concurrency: usize,
) -> anyhow::Result<Floor> {
    let http = reqwest::Client::new();
    let t0 = Instant::now();
    let (mut pages, mut bytes) = (0u64, 0u64);
    for list in ["failed", ""] {
        let path = format!("{base_url}/{chain}/webhooks/notifications");
        let path = if list.is_empty() {
            path
        } else {
            format!("{path}/{list}")
        };
        let get = |n: u64| {
            let req = http
                .get(format!("{path}?page={n}"))
                .bearer_auth(api_key)
                .header("X-Network", "mainnet")
                .header("Accept", "application/json");
            async move { anyhow::Ok(req.send().await?.error_for_status()?.bytes().await?) }
        };
        let first = get(1).await?;
        let last = serde_json::from_slice::<serde_json::Value>(&first)?["last_page"]
            .as_u64()
            .unwrap_or(1);
        pages += 1;
        bytes += first.len() as u64;
        let mut rest = futures::stream::iter(2..=last)
            .map(get)
            .buffer_unordered(concurrency.max(1));
        while let Some(body) = rest.next().await {
            pages += 1;
            bytes += body?.len() as u64;
        }
    }
    Ok(Floor {
        wall: t0.elapsed(),
        pages,
        bytes,
    })
}

/// Floor B: the same diff done by the database alone. The N records are bulk-loaded into a
/// temporary table (`COPY` on PostgreSQL; prepared multi-row `INSERT`s in one transaction on
/// SQLite and MariaDB/MySQL), then one statement joins them against `orders` by payment key (and, for records
/// no order holds yet, by deposit address among unpaid orders) and counts what differs.
pub struct FloorB {
    pub wall: Duration,
    pub load: Duration,
    /// Records whose order is behind (`lagging`) or unpaid with a matching deposit address.
    pub behind: u64,
    /// Records no order matches (stray).
    pub unmatched: u64,
}

/// One record as floor B loads it: chain, tx hash, log index, deposit address, asset, amount.
pub struct Row<'a> {
    pub tx_hash: &'a str,
    pub log_index: i64,
    pub to: String,
    pub amount: String,
}

const CREATE: &str =
    "CREATE TEMP TABLE bench_records (chain TEXT NOT NULL, tx_hash TEXT NOT NULL, \
     log_index BIGINT NOT NULL, pay_to TEXT NOT NULL, asset TEXT NOT NULL, amount TEXT NOT NULL)";
const DIFF: &str = "SELECT \
       COALESCE(SUM(CASE WHEN k.id IS NOT NULL AND k.state <> 'final' THEN 1 \
                         WHEN k.id IS NULL AND u.n > 0 THEN 1 ELSE 0 END), 0), \
       COALESCE(SUM(CASE WHEN k.id IS NULL AND u.n = 0 THEN 1 ELSE 0 END), 0) \
     FROM bench_records r \
     LEFT JOIN orders k ON k.chain = r.chain AND k.tx_hash = r.tx_hash AND k.log_index = r.log_index \
     CROSS JOIN LATERAL (SELECT count(*) AS n FROM orders o WHERE k.id IS NULL \
       AND o.state = 'unpaid' AND o.chain = r.chain AND o.pay_to = r.pay_to AND o.asset = r.asset) u";
/// SQLite has no LATERAL: the same as a correlated subquery.
const DIFF_SQLITE: &str = "SELECT \
       COALESCE(SUM(CASE WHEN k.id IS NOT NULL AND k.state <> 'final' THEN 1 \
                         WHEN k.id IS NULL AND EXISTS (SELECT 1 FROM orders o WHERE o.state = 'unpaid' \
                           AND o.chain = r.chain AND o.pay_to = r.pay_to AND o.asset = r.asset) THEN 1 \
                         ELSE 0 END), 0), \
       COALESCE(SUM(CASE WHEN k.id IS NULL AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.state = 'unpaid' \
                           AND o.chain = r.chain AND o.pay_to = r.pay_to AND o.asset = r.asset) THEN 1 \
                         ELSE 0 END), 0) \
     FROM bench_records r \
     LEFT JOIN orders k ON k.chain = r.chain AND k.tx_hash = r.tx_hash AND k.log_index = r.log_index";
/// MariaDB/MySQL: the columns in the character set of the `orders` columns they join (so that
/// its indexes are used).
const CREATE_MYSQL: &str =
    "CREATE TEMPORARY TABLE bench_records (chain VARCHAR(64) CHARACTER SET ascii NOT NULL, \
     tx_hash VARCHAR(128) CHARACTER SET ascii NOT NULL, log_index BIGINT NOT NULL, \
     pay_to VARCHAR(128) CHARACTER SET ascii NOT NULL, \
     asset VARCHAR(128) CHARACTER SET ascii NOT NULL, amount VARCHAR(80) NOT NULL)";
/// SQLite's diff with its sums read as integers (MariaDB/MySQL sum to DECIMAL).
fn diff_mysql() -> String {
    DIFF_SQLITE
        .replacen("COALESCE(SUM(", "CAST(COALESCE(SUM(", 2)
        .replace("ELSE 0 END), 0)", "ELSE 0 END), 0) AS SIGNED)")
}
/// Rows per multi-row INSERT on SQLite and MariaDB/MySQL (6 parameters each, under SQLite's
/// limit of 32,766).
const INSERT_ROWS: usize = 1_000;

/// Floor B on SQLite and MariaDB/MySQL, which differ only in their texts: `$create` the
/// table, the records as multi-row INSERTs of `?` placeholders in one transaction, `$diff`,
/// then `$drop`. The load's time and the diff's two counts.
macro_rules! by_inserts {
    ($pool:expr, $create:expr, $diff:expr, $drop:expr, $rows:expr, $chain:expr, $asset:expr, $t0:expr) => {{
        let mut conn = $pool.acquire().await?;
        sqlx::query($create).execute(&mut *conn).await?;
        let mut tx = sqlx::Connection::begin(&mut *conn).await?;
        for chunk in $rows.chunks(INSERT_ROWS) {
            let mut sql = String::from(
                "INSERT INTO bench_records (chain, tx_hash, log_index, pay_to, asset, amount) VALUES ",
            );
            for i in 0..chunk.len() {
                sql.push_str(if i == 0 {
                    "(?,?,?,?,?,?)"
                } else {
                    ",(?,?,?,?,?,?)"
                });
            }
            let mut q = sqlx::query(&sql);
            for r in chunk {
                q = q
                    .bind($chain)
                    .bind(r.tx_hash)
                    .bind(r.log_index)
                    .bind(&r.to)
                    .bind($asset)
                    .bind(&r.amount);
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        let load = $t0.elapsed();
        let got: (i64, i64) = sqlx::query_as($diff).fetch_one(&mut *conn).await?;
        sqlx::query($drop).execute(&mut *conn).await?;
        (load, got)
    }};
}

pub async fn floor_b(
    store: &payrecon::store::Store,
    chain: &str,
    asset: &str,
    rows: &[Row<'_>],
) -> anyhow::Result<FloorB> {
    use payrecon::store::Store;
    let t0 = Instant::now();
    let (load, (behind, unmatched)) = match store {
        Store::Postgres(pool) => {
            let mut conn = pool.acquire().await?;
            sqlx::query(CREATE).execute(&mut *conn).await?;
            let mut copy = conn
                .copy_in_raw("COPY bench_records FROM STDIN (FORMAT text)")
                .await?;
            let mut buf = String::with_capacity(1 << 20);
            for r in rows {
                use std::fmt::Write;
                let _ = writeln!(
                    buf,
                    "{chain}\t{}\t{}\t{}\t{asset}\t{}",
                    r.tx_hash, r.log_index, r.to, r.amount
                );
                if buf.len() > (1 << 20) - 512 {
                    copy.send(buf.as_bytes()).await?;
                    buf.clear();
                }
            }
            copy.send(buf.as_bytes()).await?;
            copy.finish().await?;
            sqlx::query("ANALYZE bench_records")
                .execute(&mut *conn)
                .await?;
            let load = t0.elapsed();
            let got: (i64, i64) = sqlx::query_as(DIFF).fetch_one(&mut *conn).await?;
            sqlx::query("DROP TABLE bench_records")
                .execute(&mut *conn)
                .await?;
            (load, got)
        }
        Store::Sqlite(pool) => by_inserts!(
            pool,
            CREATE,
            DIFF_SQLITE,
            "DROP TABLE bench_records",
            rows,
            chain,
            asset,
            t0
        ),
        Store::MySql(pool) => by_inserts!(
            pool,
            CREATE_MYSQL,
            &diff_mysql(),
            "DROP TEMPORARY TABLE bench_records",
            rows,
            chain,
            asset,
            t0
        ),
    };
    Ok(FloorB {
        wall: t0.elapsed(),
        load,
        behind: behind as u64,
        unmatched: unmatched as u64,
    })
}
