//! Exceptions (README.md, "Exceptions"): what payrecon cannot settle alone, one row per problem
//! however many runs see it. Opened or touched in the transaction of a run's findings
//! (`upsert!`), cleared at the end of a run when their condition is gone (`clear_exceptions`),
//! listed, and settled by an operator: the claim (`status = 'open'` → `resolved`) is a
//! conditional UPDATE in the transaction of the decision it records, so of two people acting at
//! once one wins.

use jiff::Timestamp;
use serde::Serialize;

use super::rows::{db_error, on_pool, pg_ms, sqlite_ms, sqlite_ts};
use super::{FindingRow, Store, StoreError};

/// The four kinds a person settles (the other gap kinds payrecon fixes itself).
pub const EXCEPTION_KINDS: [&str; 4] = [
    "amount_mismatch",
    "late_payment",
    "unknown_payment",
    "reorged",
];

/// Who clears an exception whose condition went away.
pub const CLEARED_BY: &str = "payrecon";

/// What names one problem across runs (at most one open row each), or `None` for a finding
/// that opens no exception: an underpayment within tolerance (the order advanced), a late
/// payment counted by `late_payments = "accept"`, a provider's status for an order the
/// ledger does not have, a transaction that pays nothing (no payment to attach), and every
/// kind payrecon fixes itself.
pub(crate) fn problem_of(f: &FindingRow) -> Option<String> {
    let order = || {
        f.order_ref
            .as_deref()
            .map(|r| format!("order:{r}:{}", f.kind))
    };
    let payment = || {
        let log = f.log_index.map_or("-".to_string(), |l| l.to_string());
        f.tx_hash
            .as_deref()
            .map(|t| format!("payment:{}:{t}:{log}", f.chain))
    };
    match f.kind.as_str() {
        "amount_mismatch" if f.detail.starts_with("underpaid within tolerance") => None,
        "amount_mismatch" => order().or_else(payment),
        "late_payment" if f.action == "held" => order(),
        // A payment is a transfer read on chain: a transaction that reverted, has no
        // receipt yet, or pays nothing opens none (a later sighting with its transfer does).
        "unknown_payment" if f.log_index.is_some() => payment(),
        "reorged" => f.tx_hash.as_deref().map(|t| {
            let r = f.order_ref.as_deref().unwrap_or("-");
            format!("reorged:{}:{t}:{r}", f.chain)
        }),
        _ => None,
    }
}

/// The findings that open or touch an exception, one per problem (the last one wins: its row
/// names the latest payment).
pub(crate) fn exception_findings(findings: &[FindingRow]) -> Vec<(String, &FindingRow)> {
    let mut out: Vec<(String, &FindingRow)> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for f in findings {
        if let Some(p) = problem_of(f) {
            match at.get(&p) {
                Some(&i) => out[i].1 = f,
                None => {
                    at.insert(p.clone(), out.len());
                    out.push((p, f));
                }
            }
        }
    }
    out
}

/// Opens or touches the exceptions of `$findings` inside `$tx` (the findings' transaction):
/// one multi-row upsert on the partial unique index of open problems. `$now` is the dialect's
/// current time; `seen_count` counts runs (a second batch of the same run touches only).
macro_rules! upsert {
    ($db:ty, $tx:expr, $run_id:expr, $findings:expr, $now:expr) => {{
        let mut items = $crate::store::exceptions::exception_findings($findings);
        let mut res: Result<(), sqlx::Error> = Ok(());
        // A problem a person settled (dismissed, accepted, attached) stays settled: a payment
        // problem for good, an order's until a payment is credited to it after the decision.
        let mut settled: Vec<String> = Vec::new();
        for chunk in items.chunks(500) {
            let mut qb = sqlx::QueryBuilder::<$db>::new(
                "SELECT x.problem FROM payrecon_exceptions x WHERE x.status = 'resolved' \
                 AND x.resolution <> 'cleared' AND NOT (x.problem LIKE 'order:%' AND EXISTS \
                 (SELECT 1 FROM payrecon_payments p WHERE p.order_id = x.order_id \
                 AND p.created_at > x.resolved_at)) AND x.problem IN (",
            );
            let mut sep = qb.separated(", ");
            for (p, _) in chunk {
                sep.push_bind(p.as_str());
            }
            qb.push(")");
            match qb
                .build_query_scalar::<String>()
                .fetch_all($crate::store::rows::counted(&mut *$tx))
                .await
            {
                Ok(rows) => settled.extend(rows),
                Err(e) => {
                    res = Err(e);
                    break;
                }
            }
        }
        items.retain(|(p, _)| !settled.contains(p));
        for chunk in items.chunks(500) {
            if res.is_err() {
                break;
            }
            let mut qb = sqlx::QueryBuilder::<$db>::new(
                "INSERT INTO payrecon_exceptions (problem, kind, order_id, chain, tx_hash, \
                 log_index, amount, detail, first_seen_at, last_seen_at, seen_count, \
                 last_run_id) ",
            );
            qb.push_values(chunk, |mut b, (problem, f)| {
                b.push_bind(problem.as_str()).push_bind(f.kind.as_str());
                match &f.order_ref {
                    Some(r) if f.kind != "unknown_payment" => {
                        b.push("(SELECT id FROM orders WHERE order_ref = ")
                            .push_bind_unseparated(r.as_str())
                            .push_unseparated(")");
                    }
                    _ => {
                        b.push("NULL");
                    }
                }
                b.push_bind(f.chain.as_str())
                    .push_bind(f.tx_hash.as_deref())
                    .push_bind(f.log_index)
                    .push_bind(f.amount.as_deref())
                    .push_bind(f.detail.as_str())
                    .push($now)
                    .push($now)
                    .push("1")
                    .push_bind($run_id);
            });
            qb.push(
                " ON CONFLICT (problem) WHERE status = 'open' DO UPDATE SET \
                 order_id = excluded.order_id, tx_hash = excluded.tx_hash, \
                 log_index = excluded.log_index, amount = excluded.amount, \
                 detail = excluded.detail, last_seen_at = excluded.last_seen_at, \
                 seen_count = payrecon_exceptions.seen_count + CASE WHEN \
                 payrecon_exceptions.last_run_id = excluded.last_run_id THEN 0 ELSE 1 END, \
                 last_run_id = excluded.last_run_id",
            );
            if let Err(e) = qb
                .build()
                .execute($crate::store::rows::counted(&mut *$tx))
                .await
            {
                res = Err(e);
                break;
            }
        }
        res
    }};
}
pub(crate) use upsert;

/// A payment the run saw at final depth, in this block: a `reorged` exception of its
/// transaction is cleared when the ledger holds it there (README.md, "Exceptions": final
/// again in its new block).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FinalSeen {
    pub chain: String,
    pub tx_hash: String,
    pub block_hash: String,
}

/// One row of `payrecon exceptions`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct ExceptionRow {
    pub id: i64,
    pub kind: String,
    pub order_id: Option<i64>,
    pub order_ref: Option<String>,
    pub chain: String,
    pub tx_hash: Option<String>,
    pub log_index: Option<i64>,
    pub amount: Option<String>,
    pub detail: String,
    pub status: String,
    pub first_seen_at: String,
    pub last_seen_at: String,
    pub seen_count: i64,
    pub resolved_at: Option<String>,
    pub resolved_by: Option<String>,
    pub resolution: Option<String>,
    pub note: Option<String>,
}

/// Filters of `payrecon exceptions`.
#[derive(Debug, Clone, Default)]
pub struct ExceptionFilter {
    /// `open` | `resolved`; `None`: all.
    pub status: Option<String>,
    pub kind: Option<String>,
    pub order_ref: Option<String>,
    pub id: Option<i64>,
    pub limit: i64,
}

/// Open exceptions of one kind: how many, and when the oldest was first seen.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct OpenExceptions {
    pub kind: String,
    pub open: i64,
    pub oldest_first_seen_at: Option<String>,
    #[serde(skip)]
    pub oldest: Option<Timestamp>,
}

/// An operator's decision on one exception: the claim written with it.
#[derive(Debug, Clone)]
pub struct Resolve {
    pub id: i64,
    /// `accepted` | `attached` | `dismissed`.
    pub resolution: &'static str,
    pub by: String,
    pub note: String,
    /// The order's id and `amount_paid` as the decision read them: checked under the
    /// decision's lock, so that a payment credited meanwhile fails it (`None`: no check).
    pub order_paid: Option<(i64, Option<String>)>,
}

/// The sentinels a claim fails its transaction with: the exception is no longer open
/// (`StoreError::ExceptionTaken`), or the decision changed nothing (`StoreError::Invalid`).
pub(crate) const TAKEN: &str = "payrecon: the exception is not open";
pub(crate) const UNCHANGED: &str =
    "the order or the payment changed since it was read (another writer got there first): \
     nothing applied";

/// An exception as selected by `Dialect::columns` (times in milliseconds).
#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    kind: String,
    order_id: Option<i64>,
    order_ref: Option<String>,
    chain: String,
    tx_hash: Option<String>,
    log_index: Option<i64>,
    amount: Option<String>,
    detail: String,
    status: String,
    first_ms: Option<i64>,
    last_ms: Option<i64>,
    seen_count: i64,
    resolved_ms: Option<i64>,
    resolved_by: Option<String>,
    resolution: Option<String>,
    note: Option<String>,
}

fn ms_text(ms: Option<i64>) -> Option<String> {
    ms.and_then(|m| Timestamp::from_millisecond(m).ok())
        .map(sqlite_ts)
}

impl ExceptionRow {
    fn from_row(r: Row) -> ExceptionRow {
        ExceptionRow {
            id: r.id,
            kind: r.kind,
            order_id: r.order_id,
            order_ref: r.order_ref,
            chain: r.chain,
            tx_hash: r.tx_hash,
            log_index: r.log_index,
            amount: r.amount,
            detail: r.detail,
            status: r.status,
            first_seen_at: ms_text(r.first_ms).unwrap_or_default(),
            last_seen_at: ms_text(r.last_ms).unwrap_or_default(),
            seen_count: r.seen_count,
            resolved_at: ms_text(r.resolved_ms),
            resolved_by: r.resolved_by,
            resolution: r.resolution,
            note: r.note,
        }
    }
}

/// The dialect bits the statements here differ in.
struct Dialect {
    pg: bool,
}

impl Dialect {
    fn of(store: &Store) -> Dialect {
        Dialect {
            pg: matches!(store, Store::Postgres(_)),
        }
    }
    fn p(&self, n: usize) -> String {
        if self.pg {
            format!("${n}")
        } else {
            format!("?{n}")
        }
    }
    fn ts(&self, n: usize) -> String {
        if self.pg {
            format!("${n}::timestamptz")
        } else {
            format!("?{n}")
        }
    }
    fn ms(&self, col: &str) -> String {
        if self.pg {
            pg_ms(col)
        } else {
            sqlite_ms(col)
        }
    }
    fn int(&self, col: &str) -> String {
        if self.pg {
            format!("{col}::bigint")
        } else {
            col.to_string()
        }
    }
    fn columns(&self) -> String {
        format!(
            "x.id, x.kind, x.order_id, o.order_ref, x.chain, x.tx_hash, {log} AS log_index, \
             x.amount, x.detail, x.status, {first} AS first_ms, {last} AS last_ms, \
             {seen} AS seen_count, {resolved} AS resolved_ms, x.resolved_by, x.resolution, \
             x.note",
            log = self.int("x.log_index"),
            first = self.ms("x.first_seen_at"),
            last = self.ms("x.last_seen_at"),
            seen = self.int("x.seen_count"),
            resolved = self.ms("x.resolved_at"),
        )
    }
}

impl Store {
    /// The order named `order_ref` with its credited payments (what an operator's decision is
    /// planned on), or `None`.
    pub async fn order_with_payments(
        &self,
        order_ref: &str,
    ) -> Result<Option<crate::domain::LedgerRow>, StoreError> {
        let mut rows = self.orders_by_ref(&[order_ref.to_string()]).await?;
        let mut refs: Vec<&mut crate::domain::LedgerRow> = rows.iter_mut().collect();
        super::payments::load_credits(self, &mut refs).await?;
        Ok(rows.into_iter().next())
    }

    /// `payrecon exceptions`: the newest `limit` exceptions matching `f`, newest first.
    pub async fn list_exceptions(
        &self,
        f: &ExceptionFilter,
    ) -> Result<Vec<ExceptionRow>, StoreError> {
        let d = Dialect::of(self);
        let mut clauses = vec!["1 = 1".to_string()];
        let mut binds: Vec<String> = Vec::new();
        let mut push = |clause: &str, v: String, binds: &mut Vec<String>| {
            binds.push(v);
            clauses.push(clause.replace("{}", &d.p(binds.len())));
        };
        if let Some(s) = &f.status {
            push("x.status = {}", s.clone(), &mut binds);
        }
        if let Some(k) = &f.kind {
            push("x.kind = {}", k.clone(), &mut binds);
        }
        if let Some(r) = &f.order_ref {
            push("o.order_ref = {}", r.clone(), &mut binds);
        }
        let id_clause = f.id.map(|_| format!("x.id = {}", d.p(binds.len() + 1)));
        let limit = d.p(binds.len() + 1 + usize::from(f.id.is_some()));
        if let Some(c) = id_clause {
            clauses.push(c);
        }
        let sql = format!(
            "SELECT {cols} FROM payrecon_exceptions x LEFT JOIN orders o ON o.id = x.order_id \
             WHERE {w} ORDER BY x.id DESC LIMIT {limit}",
            cols = d.columns(),
            w = clauses.join(" AND "),
        );
        let rows: Vec<Row> = on_pool!(self, p => {
            let mut q = sqlx::query_as(&sql);
            for b in &binds {
                q = q.bind(b);
            }
            if let Some(id) = f.id {
                q = q.bind(id);
            }
            q.bind(f.limit.max(1)).fetch_all(p).await
        })
        .map_err(|e| db_error("list exceptions", e))?;
        Ok(rows.into_iter().map(ExceptionRow::from_row).collect())
    }

    /// One exception by id.
    pub async fn exception(&self, id: i64) -> Result<Option<ExceptionRow>, StoreError> {
        let f = ExceptionFilter {
            id: Some(id),
            limit: 1,
            ..Default::default()
        };
        Ok(self.list_exceptions(&f).await?.into_iter().next())
    }

    /// Open exceptions per kind (every kind, zeros included), with the oldest's first sight.
    pub async fn open_exceptions(&self) -> Result<Vec<OpenExceptions>, StoreError> {
        let d = Dialect::of(self);
        let sql = format!(
            "SELECT kind, COUNT(*), MIN({first}) FROM payrecon_exceptions \
             WHERE status = 'open' GROUP BY kind",
            first = d.ms("first_seen_at"),
        );
        let rows: Vec<(String, i64, Option<i64>)> =
            on_pool!(self, p => sqlx::query_as(&sql).fetch_all(p).await)
                .map_err(|e| db_error("count open exceptions", e))?;
        Ok(EXCEPTION_KINDS
            .iter()
            .map(|k| {
                let found = rows.iter().find(|r| r.0 == *k);
                let oldest = found
                    .and_then(|r| r.2)
                    .and_then(|m| Timestamp::from_millisecond(m).ok());
                OpenExceptions {
                    kind: k.to_string(),
                    open: found.map_or(0, |r| r.1),
                    oldest_first_seen_at: oldest.map(sqlite_ts),
                    oldest,
                }
            })
            .collect())
    }

    /// Clears (`resolved_by = "payrecon"`, `resolution = "cleared"`) the open exceptions whose
    /// condition is gone: a held order that advanced (a top-up covered it, or the merchant
    /// moved it); a payment to no order that some order now holds; a reorged payment the
    /// ledger holds in a block this run saw at final depth (`finals`). One statement.
    pub async fn clear_exceptions(
        &self,
        finals: &[FinalSeen],
        now: Timestamp,
    ) -> Result<u64, StoreError> {
        let d = Dialect::of(self);
        let mut binds: Vec<String> = vec![sqlite_ts(now)];
        let mut reorged = String::from("1 = 0");
        if !finals.is_empty() {
            let mut alts = Vec::new();
            for f in finals {
                let base = binds.len();
                binds.extend([f.chain.clone(), f.tx_hash.clone(), f.block_hash.clone()]);
                alts.push(format!(
                    "(p.chain = {} AND p.tx_hash = {} AND p.block_hash = {})",
                    d.p(base + 1),
                    d.p(base + 2),
                    d.p(base + 3)
                ));
            }
            reorged = format!(
                "x.kind = 'reorged' AND EXISTS (SELECT 1 FROM payrecon_payments p \
                 WHERE p.chain = x.chain AND p.tx_hash = x.tx_hash \
                 AND (x.order_id IS NULL OR p.order_id = x.order_id) AND p.state = 'final' \
                 AND p.reorged_at IS NULL AND ({}))",
                alts.join(" OR ")
            );
        }
        let sql = format!(
            "UPDATE payrecon_exceptions SET status = 'resolved', resolution = 'cleared', \
             resolved_by = '{CLEARED_BY}', resolved_at = {now} \
             WHERE status = 'open' AND id IN (SELECT x.id FROM payrecon_exceptions x \
             WHERE x.status = 'open' AND (\
             (x.kind IN ('amount_mismatch', 'late_payment') \
              AND (x.kind = 'late_payment' OR x.detail LIKE 'underpaid%') \
              AND EXISTS (SELECT 1 FROM orders o WHERE o.id = x.order_id \
                          AND o.state <> 'unpaid')) \
             OR (x.kind = 'unknown_payment' AND EXISTS (SELECT 1 FROM payrecon_payments p \
                 WHERE p.chain = x.chain AND p.tx_hash = x.tx_hash \
                 AND (x.log_index IS NULL OR p.log_index = x.log_index))) \
             OR ({reorged})))",
            now = d.ts(1),
        );
        let res = on_pool!(self, p => {
            let mut q = sqlx::query(&sql);
            for b in &binds {
                q = q.bind(b);
            }
            q.execute(super::rows::counted(p)).await.map(|r| r.rows_affected())
        });
        res.map_err(|e| db_error("clear exceptions", e))
    }

    /// Opens the exception of every order held now (unpaid, no key, part of its amount
    /// credited) that has none open: `late_payment` when one of its payments is in a block
    /// after `expires_at` (and `late_payments = "hold"`), else `amount_mismatch`, naming its
    /// latest payment. Held orders whose payments came by webhook (which records no
    /// findings) or whose findings were never recorded get theirs here; one a person settled
    /// is opened again only for a payment credited after the decision. One statement.
    pub async fn open_held_exceptions(
        &self,
        run_id: &str,
        now: Timestamp,
        accept_late: bool,
    ) -> Result<u64, StoreError> {
        let d = Dialect::of(self);
        let (txt, paid, bt, exp) = if d.pg {
            (
                "::text",
                "o.amount_paid > 0",
                "p.block_time".to_string(),
                "o.expires_at".to_string(),
            )
        } else {
            (
                "",
                "CAST(o.amount_paid AS TEXT) NOT IN ('0', '')",
                sqlite_ms("p.block_time"),
                sqlite_ms("o.expires_at"),
            )
        };
        let latest = |col: &str| {
            format!(
                "(SELECT p.{col} FROM payrecon_payments p WHERE p.order_id = h.id \
                 ORDER BY p.id DESC LIMIT 1)"
            )
        };
        let sql = format!(
            "INSERT INTO payrecon_exceptions (problem, kind, order_id, chain, tx_hash, log_index, \
             amount, detail, first_seen_at, last_seen_at, seen_count, last_run_id) \
             SELECT 'order:' || h.order_ref || ':' || h.kind, h.kind, h.id, h.chain, \
             {tx}, {log}, {amount}{txt}, \
             CASE h.kind WHEN 'late_payment' THEN 'late: paid ' || h.paid || ' of ' || h.due || \
             ' after the order expired; held' ELSE 'underpaid: paid ' || h.paid || ' of ' || \
             h.due || '; held until covered' END, {now}, {now}, 1, {run} \
             FROM (SELECT o.id, o.order_ref, o.chain, o.amount_paid{txt} AS paid, \
             o.amount_due{txt} AS due, CASE WHEN {late} AND EXISTS (SELECT 1 FROM \
             payrecon_payments p WHERE p.order_id = o.id AND {bt} > {exp}) THEN 'late_payment' \
             ELSE 'amount_mismatch' END AS kind FROM orders o \
             WHERE o.state = 'unpaid' AND o.tx_hash IS NULL AND o.amount_paid IS NOT NULL \
             AND {paid}) h \
             WHERE NOT EXISTS (SELECT 1 FROM payrecon_exceptions x WHERE x.order_id = h.id \
             AND x.status = 'open' AND x.kind IN ('amount_mismatch', 'late_payment')) \
             AND NOT EXISTS (SELECT 1 FROM payrecon_exceptions x WHERE x.order_id = h.id \
             AND x.status = 'resolved' AND x.resolution <> 'cleared' \
             AND x.kind IN ('amount_mismatch', 'late_payment') AND NOT EXISTS (SELECT 1 \
             FROM payrecon_payments p WHERE p.order_id = h.id AND p.created_at > x.resolved_at)) \
             ON CONFLICT (problem) WHERE status = 'open' DO NOTHING",
            late = if accept_late { "1 = 0" } else { "1 = 1" },
            tx = latest("tx_hash"),
            log = latest("log_index"),
            amount = latest("amount"),
            now = d.ts(1),
            run = d.p(2),
        );
        let res = on_pool!(self, p => sqlx::query(&sql)
            .bind(sqlite_ts(now))
            .bind(run_id)
            .execute(super::rows::counted(p))
            .await
            .map(|r| r.rows_affected()));
        res.map_err(|e| db_error("open the exceptions of held orders", e))
    }

    /// Closes exception `r.id` with the ledger unchanged (`dismiss`): `Ok(None)` when this
    /// call closed it, `Ok(Some(row))` when it was not open (the row says who resolved it and
    /// when), `Err(Invalid)` when there is no such exception.
    pub async fn dismiss_exception(&self, r: &Resolve) -> Result<Option<ExceptionRow>, StoreError> {
        let d = Dialect::of(self);
        let sql = claim_sql(&d);
        let now = sqlite_ts(Timestamp::now());
        let done = on_pool!(self, p => sqlx::query(&sql)
            .bind(r.id)
            .bind(r.resolution)
            .bind(&r.by)
            .bind(&r.note)
            .bind(&now)
            .execute(super::rows::counted(p))
            .await
            .map(|x| x.rows_affected()))
        .map_err(|e| db_error("resolve an exception", e))?;
        if done == 1 {
            return Ok(None);
        }
        match self.exception(r.id).await? {
            Some(row) => Ok(Some(row)),
            None => Err(StoreError::Invalid(format!(
                "no exception with id {}",
                r.id
            ))),
        }
    }
}

/// The claim: 1 id, 2 resolution, 3 by, 4 note, 5 now; changes one row only while it is open.
pub(crate) fn claim_sql_for(pg: bool) -> String {
    claim_sql(&Dialect { pg })
}

fn claim_sql(d: &Dialect) -> String {
    format!(
        "UPDATE payrecon_exceptions SET status = 'resolved', resolution = {res}, \
         resolved_by = {by}, note = {note}, resolved_at = {now} \
         WHERE id = {id} AND status = 'open'",
        id = d.p(1),
        res = d.p(2),
        by = d.p(3),
        note = d.p(4),
        now = d.ts(5),
    )
}

/// Fails the decision's transaction with `UNCHANGED` when the order's `amount_paid` is no
/// longer what the decision read (a payment was credited meanwhile). Run after the order's
/// row is locked (PostgreSQL `FOR UPDATE`; SQLite's write lock is taken at `BEGIN`).
macro_rules! check_paid {
    ($tx:expr, $pg:expr, $r:expr) => {{
        match &$r.order_paid {
            None => Ok(()),
            Some((id, want)) => {
                let sql = if $pg {
                    "SELECT amount_paid::text FROM orders WHERE id = $1"
                } else {
                    "SELECT CAST(amount_paid AS TEXT) FROM orders WHERE id = ?1"
                };
                let got: Option<Option<String>> = sqlx::query_scalar(sql)
                    .bind(*id)
                    .fetch_optional($crate::store::rows::counted(&mut *$tx))
                    .await?;
                let norm =
                    |v: Option<&str>| v.and_then(|v| $crate::domain::parse_base_units(v).ok());
                if norm(got.flatten().as_deref()) == norm(want.as_deref()) {
                    Ok(())
                } else {
                    Err(sqlx::Error::Protocol(
                        $crate::store::exceptions::UNCHANGED.to_string(),
                    ))
                }
            }
        }
    }};
}
pub(crate) use check_paid;

/// Claims `r` as the last statement of a transaction of the apply path, after its decision
/// was applied: fails the transaction with `UNCHANGED` when the decision changed nothing (the
/// order moved, or the payment was credited, meanwhile) and with `TAKEN` when the exception is
/// no longer open, so that a decision is written whole with its claim or not at all.
macro_rules! claim {
    ($tx:expr, $pg:expr, $r:expr, $out:expr) => {{
        use $crate::store::ApplyOutcome as O;
        let changed = $out
            .iter()
            .all(|o| matches!(o, O::Applied { .. } | O::Credited | O::Attached));
        let sql = $crate::store::exceptions::claim_sql_for($pg);
        let now = $crate::store::rows::sqlite_ts(jiff::Timestamp::now());
        let protocol = |m: &str| Err(sqlx::Error::Protocol(m.to_string()));
        if !changed {
            protocol($crate::store::exceptions::UNCHANGED)
        } else {
            match sqlx::query(&sql)
                .bind($r.id)
                .bind($r.resolution)
                .bind(&$r.by)
                .bind(&$r.note)
                .bind(&now)
                .execute($crate::store::rows::counted(&mut *$tx))
                .await
            {
                Ok(done) if done.rows_affected() == 1 => Ok(()),
                Ok(_) => protocol($crate::store::exceptions::TAKEN),
                Err(e) => Err(e),
            }
        }
    }};
}
pub(crate) use claim;

#[cfg(test)]
mod tests {
    use super::{exception_findings, problem_of};
    use crate::store::FindingRow;

    fn f(
        kind: &str,
        action: &str,
        detail: &str,
        order: Option<&str>,
        tx: Option<&str>,
    ) -> FindingRow {
        FindingRow {
            provider: "cg".into(),
            kind: kind.into(),
            chain: "ethereum".into(),
            tx_hash: tx.map(String::from),
            log_index: tx.map(|_| 3),
            order_ref: order.map(String::from),
            local_state: None,
            observed_state: None,
            action: action.into(),
            detail: detail.into(),
            amount: None,
        }
    }

    #[test]
    fn one_problem_per_order_or_payment_and_none_for_what_payrecon_settles() {
        let cases = [
            (
                f(
                    "amount_mismatch",
                    "held",
                    "underpaid: paid 1 of 2",
                    Some("A"),
                    Some("0xa"),
                ),
                Some("order:A:amount_mismatch"),
            ),
            (
                f(
                    "amount_mismatch",
                    "applied",
                    "overpaid: paid 3 of 2",
                    Some("A"),
                    Some("0xb"),
                ),
                Some("order:A:amount_mismatch"),
            ),
            (
                f(
                    "amount_mismatch",
                    "applied",
                    "underpaid within tolerance: paid",
                    Some("A"),
                    Some("0xa"),
                ),
                None,
            ),
            (
                f("late_payment", "held", "late: paid", Some("B"), Some("0xc")),
                Some("order:B:late_payment"),
            ),
            (
                f(
                    "late_payment",
                    "applied",
                    "late: paid",
                    Some("B"),
                    Some("0xc"),
                ),
                None,
            ),
            (
                f("unknown_payment", "none", "no order", None, Some("0xd")),
                Some("payment:ethereum:0xd:3"),
            ),
            (
                f("unknown_payment", "none", "no such order", Some("Z"), None),
                None,
            ),
            (
                FindingRow {
                    log_index: None,
                    ..f("unknown_payment", "none", "reverted", None, Some("0xd"))
                },
                None,
            ),
            (
                f("reorged", "none", "gone", Some("C"), Some("0xe")),
                Some("reorged:ethereum:0xe:C"),
            ),
            (f("missing", "applied", "", Some("D"), Some("0xf")), None),
            (f("lagging", "applied", "", Some("D"), Some("0xf")), None),
            (
                f(
                    "failed_notification",
                    "resend_requested",
                    "",
                    Some("D"),
                    Some("0xf"),
                ),
                None,
            ),
        ];
        for (finding, want) in &cases {
            assert_eq!(problem_of(finding).as_deref(), *want, "{finding:?}");
        }
        // Two findings of one problem in a batch: one row, naming the latest payment.
        let batch = [cases[0].0.clone(), cases[1].0.clone(), cases[5].0.clone()];
        let got = exception_findings(&batch);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].1.tx_hash.as_deref(), Some("0xb"));
    }
}
