//! Findings into exceptions: one exception per problem (`problem_of`), opened or touched
//! in the findings' transaction, or a webhook delivery's apply's
//! (`ExceptionSql::upsert_exceptions`).

use sqlx::{Database, Decode, Encode, Executor, IntoArguments, Transaction, Type};

use crate::store::dialect::Dialect;
use crate::store::rows::counted;
use crate::store::types::FindingRow;

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
        "unexpected_outflow" => f.tx_hash.as_deref().map(|t| {
            let log = f.log_index.map_or("-".to_string(), |l| l.to_string());
            format!("outflow:{}:{t}:{log}", f.chain)
        }),
        "balance_mismatch" => f.address.as_deref().map(|a| {
            let asset = f.asset.as_deref().unwrap_or("-");
            format!("balance:{}:{a}:{asset}", f.chain)
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
    // In the problems' order: two transactions touching the same exceptions lock them in
    // the same order (PostgreSQL found a deadlock between a run and a delivery otherwise).
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The order an exception names: none for an unknown payment (its `order_ref` is a guess).
fn order_of(f: &FindingRow) -> Option<&str> {
    f.order_ref
        .as_deref()
        .filter(|_| f.kind != "unknown_payment")
}

/// The upsert of a chunk of exceptions, its placeholders numbered in the order of the text
/// (MariaDB/MySQL's `?` are positional) and bound in that order by `upsert_exceptions`:
/// problem, kind, [the order's id, or its `order_ref` to look up], chain, tx hash, log index,
/// amount, detail, run id.
fn upsert_sql<D: Dialect>(
    chunk: &[(String, &FindingRow)],
    id_of: &(dyn Fn(&str) -> Option<i64> + Sync),
) -> String {
    let mut n = 0;
    let mut next = || {
        n += 1;
        D::p(n)
    };
    let rows: Vec<String> = chunk
        .iter()
        .map(|(_, f)| {
            let (problem, kind) = (next(), next());
            let order = match order_of(f) {
                Some(r) if id_of(r).is_some() => next(),
                Some(_) => format!("(SELECT id FROM orders WHERE order_ref = {})", next()),
                None => "NULL".into(),
            };
            let rest: Vec<String> = (0..5).map(|_| next()).collect();
            let now = D::NOW;
            format!(
                "({problem}, {kind}, {order}, {}, {now}, {now}, 1, {})",
                rest.join(", "),
                next()
            )
        })
        .collect();
    // `seen_count` before `last_run_id`: MySQL's assignments see the ones before.
    format!(
        "INSERT INTO payrecon_exceptions (problem, kind, order_id, chain, tx_hash, \
         log_index, amount, detail, first_seen_at, last_seen_at, seen_count, \
         last_run_id) VALUES {} {}",
        rows.join(", "),
        D::upsert(
            "(problem) WHERE status = 'open'",
            "order_id = excluded.order_id, tx_hash = excluded.tx_hash, \
             log_index = excluded.log_index, amount = excluded.amount, \
             detail = excluded.detail, last_seen_at = excluded.last_seen_at, \
             seen_count = payrecon_exceptions.seen_count + CASE WHEN \
             payrecon_exceptions.last_run_id = excluded.last_run_id THEN 0 ELSE 1 END, \
             last_run_id = excluded.last_run_id",
        )
    )
}

/// Opening exceptions, the same statements on every backend: one trait with one blanket
/// impl carrying sqlx's bounds once (as `apply::SharedSql`).
pub(in crate::store) trait ExceptionSql: Dialect {
    /// Opens or touches the exceptions of `findings` inside `tx` (the findings'
    /// transaction, or the apply's of a webhook delivery): one multi-row upsert per 500 on the
    /// partial unique index of open problems. `seen_count` counts runs (a second batch of the
    /// same run touches only). `id_of` gives the ids of orders the transaction holds already
    /// (a batch's), written as they are: reading such an order again by `order_ref` after its
    /// row lock would take the `order_ref` key's lock second, the reverse of a shop's
    /// `UPDATE … WHERE order_ref = ?`, and MySQL would find a deadlock between them.
    async fn upsert_exceptions(
        tx: &mut Transaction<'_, Self>,
        run_id: &str,
        findings: &[FindingRow],
        id_of: &(dyn Fn(&str) -> Option<i64> + Sync),
    ) -> Result<(), sqlx::Error>;
}

impl<DB> ExceptionSql for DB
where
    DB: Dialect,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> <DB as Database>::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q str>: Encode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB> + Type<DB>,
    for<'r> String: Decode<'r, DB> + Type<DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
{
    async fn upsert_exceptions(
        tx: &mut Transaction<'_, DB>,
        run_id: &str,
        findings: &[FindingRow],
        id_of: &(dyn Fn(&str) -> Option<i64> + Sync),
    ) -> Result<(), sqlx::Error> {
        let mut items = exception_findings(findings);
        // A problem a person settled (dismissed, accepted, attached) stays settled: a payment
        // problem for good, an order's until a payment is credited to it after the decision.
        let mut settled: Vec<String> = Vec::new();
        for chunk in items.chunks(500) {
            let list: Vec<String> = (1..=chunk.len()).map(DB::p).collect();
            let sql = format!(
                "SELECT {} FROM payrecon_exceptions x WHERE x.status = 'resolved' \
                 AND x.resolution <> 'cleared' AND NOT (x.problem LIKE 'order:%' AND EXISTS \
                 (SELECT 1 FROM payrecon_payments p WHERE p.order_id = x.order_id \
                 AND p.created_at > x.resolved_at)) AND x.problem IN ({})",
                DB::exact_text("x.problem"),
                list.join(", ")
            );
            let mut q = sqlx::query_scalar::<_, String>(&sql);
            for (p, _) in chunk {
                q = q.bind(p.as_str());
            }
            settled.extend(q.fetch_all(counted(&mut **tx)).await?);
        }
        items.retain(|(p, _)| !settled.contains(p));
        for chunk in items.chunks(500) {
            let sql = upsert_sql::<DB>(chunk, id_of);
            let mut q = sqlx::query(&sql);
            for (problem, f) in chunk {
                q = q.bind(problem.as_str()).bind(f.kind.as_str());
                q = match order_of(f) {
                    Some(r) => match id_of(r) {
                        Some(id) => q.bind(id),
                        None => q.bind(r),
                    },
                    None => q,
                };
                q = q
                    .bind(f.chain.as_str())
                    .bind(f.tx_hash.as_deref())
                    .bind(f.log_index)
                    .bind(f.amount.as_deref())
                    .bind(f.detail.as_str())
                    .bind(run_id);
            }
            q.execute(counted(&mut **tx)).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
