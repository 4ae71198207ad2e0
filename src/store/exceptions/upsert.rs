//! Findings into exceptions: one exception per problem (`problem_of`), opened or touched
//! in the findings' transaction, or a webhook delivery's apply's (`upsert!`).

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

/// Opens or touches the exceptions of `$findings` inside `$tx` (the findings' transaction, or
/// the apply's of a webhook delivery: `ApplySql::open_exceptions`):
/// one multi-row upsert on the partial unique index of open problems. `$now` is the dialect's
/// current time; `seen_count` counts runs (a second batch of the same run touches only).
macro_rules! upsert {
    ($db:ty, $tx:expr, $run_id:expr, $findings:expr, $now:expr) => {
        $crate::store::exceptions::upsert!(
            $db,
            $tx,
            $run_id,
            $findings,
            $now,
            |_: &str| None::<i64>
        )
    };
    // `$id_of`: the ids of orders the transaction holds already (a batch's), written as they
    // are: reading such an order again by `order_ref` after its row lock would take the
    // `order_ref` key's lock second, the reverse of a shop's `UPDATE … WHERE order_ref = ?`,
    // and MySQL would find a deadlock between them.
    ($db:ty, $tx:expr, $run_id:expr, $findings:expr, $now:expr, $id_of:expr) => {{
        let id_of = $id_of;
        let mut items = $crate::store::exceptions::exception_findings($findings);
        let mut res: Result<(), sqlx::Error> = Ok(());
        // A problem a person settled (dismissed, accepted, attached) stays settled: a payment
        // problem for good, an order's until a payment is credited to it after the decision.
        let mut settled: Vec<String> = Vec::new();
        for chunk in items.chunks(500) {
            let mut qb = sqlx::QueryBuilder::<$db>::new(format!(
                "SELECT {} FROM payrecon_exceptions x WHERE x.status = 'resolved' \
                 AND x.resolution <> 'cleared' AND NOT (x.problem LIKE 'order:%' AND EXISTS \
                 (SELECT 1 FROM payrecon_payments p WHERE p.order_id = x.order_id \
                 AND p.created_at > x.resolved_at)) AND x.problem IN (",
                <$db as $crate::store::dialect::Dialect>::exact_text("x.problem")
            ));
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
                    Some(r) if f.kind != "unknown_payment" => match id_of(r.as_str()) {
                        Some(id) => {
                            b.push_bind(id);
                        }
                        None => {
                            b.push("(SELECT id FROM orders WHERE order_ref = ")
                                .push_bind_unseparated(r.as_str())
                                .push_unseparated(")");
                        }
                    },
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
            // `seen_count` before `last_run_id`: MySQL's assignments see the ones before.
            qb.push(" ")
                .push(<$db as $crate::store::dialect::Dialect>::upsert(
                    "(problem) WHERE status = 'open'",
                    "order_id = excluded.order_id, tx_hash = excluded.tx_hash, \
                 log_index = excluded.log_index, amount = excluded.amount, \
                 detail = excluded.detail, last_seen_at = excluded.last_seen_at, \
                 seen_count = payrecon_exceptions.seen_count + CASE WHEN \
                 payrecon_exceptions.last_run_id = excluded.last_run_id THEN 0 ELSE 1 END, \
                 last_run_id = excluded.last_run_id",
                ));
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

#[cfg(test)]
mod tests;
