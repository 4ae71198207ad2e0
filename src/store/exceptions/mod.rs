//! Exceptions (README.md, "Exceptions"): what payrecon cannot settle alone, one row per problem
//! however many runs see it. Opened or touched in the transaction of a run's findings, or of
//! a webhook delivery's apply (`upsert!`), cleared at the end of a run when their condition is
//! gone (`clear_exceptions`),
//! listed, and settled by an operator: the claim (`status = 'open'` → `resolved`) is a
//! conditional UPDATE in the transaction of the decision it records, so of two people acting at
//! once one wins.

mod claims;
mod upsert;

pub(crate) use claims::claim_sql;
pub(crate) use upsert::exception_findings;
pub(in crate::store) use upsert::ExceptionSql;

use jiff::Timestamp;

use super::backend::dispatch;
use super::dialect::Dialect;
use super::rows::{db_error, ms_text, ms_time, sqlite_ts};
use super::types::{
    ExceptionFilter, ExceptionRow, FinalSeen, OpenExceptions, Resolve, EXCEPTION_KINDS,
};
use super::{Store, StoreError};

/// Who clears an exception whose condition went away.
pub const CLEARED_BY: &str = "payrecon";

from_row! {
    /// An exception as selected by `columns` (times in milliseconds).
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
        asset: Option<String>,
    }
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
            asset: r.asset,
        }
    }
}

/// The columns of an `ExceptionRow` (`Row`).
fn columns<D: Dialect>() -> String {
    format!(
        "x.id, x.kind, x.order_id, {order_ref} AS order_ref, x.chain, x.tx_hash, {log} AS log_index, \
         x.amount, x.detail, x.status, {first} AS first_ms, {last} AS last_ms, \
         {seen} AS seen_count, {resolved} AS resolved_ms, x.resolved_by, x.resolution, \
         x.note, {asset} AS asset",
        order_ref = D::exact_text("o.order_ref"),
        asset = D::exact_text("o.asset"),
        log = D::int8("x.log_index"),
        first = D::ms("x.first_seen_at"),
        last = D::ms("x.last_seen_at"),
        seen = D::int8("x.seen_count"),
        resolved = D::ms("x.resolved_at"),
    )
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
        dispatch!(self, pool => {
                        let mut clauses = vec!["1 = 1".to_string()];
            let mut binds: Vec<String> = Vec::new();
            let mut push = |clause: &str, v: String, binds: &mut Vec<String>| {
                binds.push(v);
                clauses.push(clause.replace("{}", &D::p(binds.len())));
            };
            if let Some(s) = &f.status {
                push("x.status = {}", s.clone(), &mut binds);
            }
            if let Some(k) = &f.kind {
                push("x.kind = {}", k.clone(), &mut binds);
            }
            // By the order's id, on `payrecon_exceptions_order` (never a scan of the join).
            if let Some(r) = &f.order_ref {
                push(
                    "x.order_id IN (SELECT id FROM orders WHERE order_ref = {})",
                    r.clone(),
                    &mut binds,
                );
            }
            if let Some(q) = &f.search {
                // Three binds of one value: MariaDB/MySQL's `?` cannot be named twice. Each
                // branch is an indexed lookup (order_ref, `orders_pay_to`,
                // `payrecon_exceptions_order`, `payrecon_exceptions_tx`).
                binds.extend([q.clone(), q.clone(), q.clone()]);
                let n = binds.len();
                clauses.push(format!(
                    "x.id IN (SELECT e.id FROM payrecon_exceptions e WHERE e.order_id IN \
                     (SELECT id FROM orders WHERE order_ref = {} OR pay_to = {}) \
                     UNION SELECT e.id FROM payrecon_exceptions e WHERE e.tx_hash = {})",
                    D::p(n - 2),
                    D::p(n - 1),
                    D::p(n)
                ));
            }
            if let Some(t) = f.first_seen_before {
                binds.push(D::ts_bind(t));
                clauses.push(format!("x.first_seen_at <= {}", D::ts(binds.len())));
            }
            // The integer binds after the text ones: the id, the keyset bound, the limit.
            let mut ints: Vec<i64> = Vec::new();
            for (v, op) in [(f.id, "="), (f.before, "<")] {
                if let Some(v) = v {
                    ints.push(v);
                    clauses.push(format!("x.id {op} {}", D::p(binds.len() + ints.len())));
                }
            }
            let limit = D::p(binds.len() + ints.len() + 1);
            let sql = format!(
                "SELECT {cols} FROM payrecon_exceptions x LEFT JOIN orders o ON o.id = x.order_id \
                 WHERE {w} ORDER BY x.id DESC LIMIT {limit}",
                cols = columns::<D>(),
                w = clauses.join(" AND "),
            );
            let rows: Vec<Row> = ({
                let mut q = sqlx::query_as(&sql);
                for b in &binds {
                    q = q.bind(b);
                }
                for v in &ints {
                    q = q.bind(*v);
                }
                q.bind(f.limit.max(1)).fetch_all(pool).await
            })
            .map_err(|e| db_error("list exceptions", e))?;
            Ok(rows.into_iter().map(ExceptionRow::from_row).collect())
        })
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

    /// Opens or touches the exceptions of `findings` without recording the findings: those of
    /// a webhook delivery that applies nothing, which is no run (`by` stands for a run id:
    /// `last_run_id`). One that applies opens them in its apply's transaction
    /// (`Store::apply_opening`).
    pub async fn open_exceptions_for(
        &self,
        by: &str,
        findings: &[super::types::FindingRow],
    ) -> Result<(), StoreError> {
        if exception_findings(findings).is_empty() {
            return Ok(());
        }
        dispatch!(self, p => {
            let mut tx = super::rows::counted(p)
                .begin_with(D::BEGIN_WRITE)
                .await
                .map_err(|e| db_error("open or touch exceptions", e))?;
            D::upsert_exceptions(&mut tx, by, findings, &|_| None)
                .await
                .map_err(|e| db_error("open or touch exceptions", e))?;
            super::rows::counted(tx)
                .commit()
                .await
                .map_err(|e| db_error("open or touch exceptions", e))
        })
    }

    /// Open exceptions per kind (every kind, zeros included), with the oldest's first sight.
    pub async fn open_exceptions(&self) -> Result<Vec<OpenExceptions>, StoreError> {
        dispatch!(self, pool => {
                        let sql = format!(
                "SELECT kind, COUNT(*), MIN({first}) FROM payrecon_exceptions \
                 WHERE status = 'open' GROUP BY kind",
                first = D::ms("first_seen_at"),
            );
            let rows: Vec<(String, i64, Option<i64>)> =
                (sqlx::query_as(&sql).fetch_all(pool).await)
                    .map_err(|e| db_error("count open exceptions", e))?;
            Ok(EXCEPTION_KINDS
                .iter()
                .map(|k| {
                    let found = rows.iter().find(|r| r.0 == *k);
                    let oldest = ms_time(found.and_then(|r| r.2));
                    OpenExceptions {
                        kind: k.to_string(),
                        open: found.map_or(0, |r| r.1),
                        oldest_first_seen_at: oldest.map(sqlite_ts),
                        oldest,
                    }
                })
                .collect())
        })
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
        dispatch!(self, pool => {
            let mut binds: Vec<String> = vec![sqlite_ts(now)];
            let mut reorged = String::from("1 = 0");
            if !finals.is_empty() {
                let mut alts = Vec::new();
                for f in finals {
                    let base = binds.len();
                    binds.extend([f.chain.clone(), f.tx_hash.clone(), f.block_hash.clone()]);
                    alts.push(format!(
                        "(p.chain = {} AND p.tx_hash = {} AND p.block_hash = {})",
                        D::p(base + 1),
                        D::p(base + 2),
                        D::p(base + 3)
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
            let cleared = D::own_table(&format!(
                "SELECT x.id FROM payrecon_exceptions x \
                 WHERE x.status = 'open' AND (\
                 (x.kind IN ('amount_mismatch', 'late_payment') \
                  AND (x.kind = 'late_payment' OR x.detail LIKE 'underpaid%') \
                  AND EXISTS (SELECT 1 FROM orders o WHERE o.id = x.order_id \
                              AND o.state <> 'unpaid')) \
                 OR (x.kind = 'unknown_payment' AND EXISTS (SELECT 1 FROM payrecon_payments p \
                     WHERE p.chain = x.chain AND p.tx_hash = x.tx_hash \
                     AND (x.log_index IS NULL OR p.log_index = x.log_index))) \
                 OR ({reorged}))"
            ));
            let sql = format!(
                "UPDATE payrecon_exceptions SET status = 'resolved', resolution = 'cleared', \
                 resolved_by = '{CLEARED_BY}', resolved_at = {now} \
                 WHERE status = 'open' AND id IN ({cleared})",
                now = D::ts(1),
            );
            let res = {
                let mut q = sqlx::query(&sql);
                for b in &binds {
                    q = q.bind(b);
                }
                q.execute(super::rows::counted(pool)).await.map(|r| r.rows_affected())
            };
            res.map_err(|e| db_error("clear exceptions", e))
        })
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
        dispatch!(self, pool => {
                        let (paid, bt, exp) = (
                D::amount_positive("o.amount_paid"),
                D::cmp_time("p.block_time"),
                D::cmp_time("o.expires_at"),
            );
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
                 {tx}, {log}, {amount}, \
                 CASE h.kind WHEN 'late_payment' THEN 'late: paid ' || h.paid || ' of ' || h.due || \
                 ' after the order expired; held' ELSE 'underpaid: paid ' || h.paid || ' of ' || \
                 h.due || '; held until covered' END, {first}, {last}, 1, {run} \
                 FROM (SELECT o.id, o.order_ref, o.chain, {paid_text} AS paid, \
                 {due_text} AS due, CASE WHEN {late} AND EXISTS (SELECT 1 FROM \
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
                 {nothing}",
                nothing = D::do_nothing("payrecon_exceptions", "(problem) WHERE status = 'open'"),
                late = if accept_late { "1 = 0" } else { "1 = 1" },
                tx = latest("tx_hash"),
                log = latest("log_index"),
                amount = D::amount_text(&latest("amount")),
                paid_text = D::amount_text("o.amount_paid"),
                due_text = D::amount_text("o.amount_due"),
                first = D::ts(1),
                last = D::ts(2),
                run = D::p(3),
            );
            let res = sqlx::query(&sql)
                .bind(sqlite_ts(now))
                .bind(sqlite_ts(now))
                .bind(run_id)
                .execute(super::rows::counted(pool))
                .await
                .map(|r| r.rows_affected());
            res.map_err(|e| db_error("open the exceptions of held orders", e))
        })
    }

    /// Closes exception `r.id` with the ledger unchanged (`dismiss`): `Ok(None)` when this
    /// call closed it, `Ok(Some(row))` when it was not open (the row says who resolved it and
    /// when), `Err(Invalid)` when there is no such exception.
    pub async fn dismiss_exception(&self, r: &Resolve) -> Result<Option<ExceptionRow>, StoreError> {
        dispatch!(self, pool => {
                        let sql = claim_sql::<D>();
            let now = sqlite_ts(Timestamp::now());
            let done = (sqlx::query(&sql)
                .bind(r.resolution)
                .bind(&r.by)
                .bind(&r.note)
                .bind(&now)
                .bind(r.id)
                .execute(super::rows::counted(pool))
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
        })
    }
}
