//! The chain sweep: ledger rows with a payment key in `pending`/`confirmed`, read in keyset
//! pages, checked on chain and advanced whatever the providers say. A row whose block is
//! gone or changed is a `reorged` finding and is never moved (re-keying is not built yet).

use std::collections::BTreeMap;

use super::batch::BatchAcc;
use super::{Engine, RunCtx};
use crate::chain::{Lookup, TransferQuery};
use crate::domain::{
    Asset, ChainVerdict, Finding, GapKind, LedgerRow, LedgerView, Observation, Outcome,
};

pub const SWEEP: &str = "chain";

impl Engine {
    pub(crate) async fn sweep(&self, ctx: &RunCtx) -> BatchAcc {
        let mut acc = BatchAcc::new(SWEEP, SWEEP);
        let mut after = 0i64;
        loop {
            let rows = match self
                .store
                .sweep_page(after, self.settings.batch_size as i64)
                .await
            {
                Ok(rows) => rows,
                Err(e) => {
                    acc.fail(self.redact(&e.to_string()));
                    break;
                }
            };
            let Some(last) = rows.last() else { break };
            after = last.id;
            let mut by_chain: BTreeMap<String, Vec<LedgerRow>> = BTreeMap::new();
            for r in rows {
                by_chain.entry(r.chain.clone()).or_default().push(r);
            }
            for (chain, rows) in by_chain {
                if let Err(e) = self.sweep_chain(ctx, &mut acc, &chain, rows).await {
                    acc.fail(self.redact(&e));
                }
            }
        }
        acc
    }

    async fn sweep_chain(
        &self,
        ctx: &RunCtx,
        acc: &mut BatchAcc,
        chain: &str,
        rows: Vec<LedgerRow>,
    ) -> Result<(), String> {
        let (Some(client), Some(head)) = (self.chains.get(chain), ctx.heads.get(chain)) else {
            tracing::debug!(
                chain,
                rows = rows.len(),
                "Rows on a chain that is not configured are not swept."
            );
            return Ok(());
        };
        let head = head.as_ref().map_err(Clone::clone)?;
        let mut queries = Vec::with_capacity(rows.len());
        let mut swept = Vec::with_capacity(rows.len());
        for row in rows {
            let (Some(key), Ok(asset)) = (row.key.clone(), Asset::parse(&row.asset)) else {
                tracing::warn!(order_ref = %row.order_ref, "Ledger row has an unreadable asset; not swept.");
                continue;
            };
            let fp = {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                key.hash(&mut h);
                h.finish()
            };
            self.mark_checked(acc, chain, fp);
            queries.push(TransferQuery {
                tx_hash: key.tx_hash.clone(),
                asset,
                to: None,
                log_index: Some(key.log_index),
            });
            swept.push(row);
        }
        if let Some(pb) = &ctx.progress {
            pb.inc(swept.len() as u64);
        }
        let lookups = client
            .lookup(head, &queries)
            .await
            .map_err(|e| e.to_string())?;
        let mut view = LedgerView::default();
        let mut observations = Vec::new();
        let mut reorged = Vec::new();
        for (row, lookup) in swept.into_iter().zip(lookups) {
            let key = row.key.clone().expect("swept rows have keys");
            let gone = |detail: String| Finding {
                provider: SWEEP.into(),
                kind: GapKind::Reorged,
                chain: chain.to_string(),
                tx_hash: Some(key.tx_hash.to_string()),
                log_index: Some(key.log_index),
                order_ref: Some(row.order_ref.clone()),
                local_state: Some(row.state),
                observed_state: None,
                outcome: Outcome::Nothing,
                detail,
            };
            let transfer = match lookup {
                Lookup::Found(mut ts) if !ts.is_empty() => ts.remove(0),
                Lookup::Found(_) => {
                    reorged.push(gone("the payment's log is no longer in the receipt".into()));
                    continue;
                }
                Lookup::NotFound => {
                    reorged.push(gone(
                        "the chain no longer has a receipt for this transaction".into(),
                    ));
                    continue;
                }
                Lookup::Reverted => {
                    reorged.push(gone(
                        "the transaction now reverts on the canonical chain".into(),
                    ));
                    continue;
                }
                Lookup::NoTransfer(why) => {
                    reorged.push(gone(format!(
                        "the payment is no longer in the receipt: {why}"
                    )));
                    continue;
                }
            };
            // A block hash the ledger never recorded (a handler that wrote only the key) is not a reorg.
            if let Some(block) = row
                .block
                .as_ref()
                .filter(|b| !b.hash.is_empty() && b.hash != transfer.block.hash)
            {
                let mut f = gone(format!(
                    "block changed: ledger has block {} ({}), chain has block {} ({})",
                    block.number, block.hash, transfer.block.number, transfer.block.hash
                ));
                f.observed_state = Some(transfer.state);
                reorged.push(f);
                continue;
            }
            observations.push(Observation {
                provider: SWEEP.into(),
                chain: chain.to_string(),
                tx_hash: key.tx_hash.clone(),
                notification_id: None,
                failed: false,
                verdict: ChainVerdict::Transfer(transfer),
            });
            view.insert_keyed(row);
        }
        self.settle(ctx, acc, None, &observations, &view, reorged)
            .await
            .map_err(|e| e.to_string())
    }
}
