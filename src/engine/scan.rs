//! The deposit scan, part of the chain sweep: unpaid orders' deposit addresses (keyset pages)
//! -> `Transfer` logs to them in the run's window -> the same plan and apply as provider
//! records. It finds the payments no provider reported: Qvard never lists an underpaid or
//! pending payment, and a notification can be missing from every list.

use super::error::PartError;
use std::collections::BTreeSet;

use super::batch::{BatchInput, PartTally};
use super::part::Part;
use super::{Engine, RunCtx};
use crate::chain::{ChainClient, MAX_FILTER_ADDRESSES};
use crate::domain::{Address, Asset, ChainHead, ChainVerdict, Observation};

impl Engine {
    /// Scans every chain with `scan_unpaid` whose head was read; a chain that fails fails the
    /// sweep's entry (the others still run).
    pub(crate) async fn scan_unpaid(&self, ctx: &RunCtx, acc: &mut PartTally) {
        for (name, client) in &self.chains {
            if !client.settings().scan_unpaid {
                continue;
            }
            // A chain whose head could not be read has already failed the sweep.
            let Some(Ok(head)) = ctx.heads.get(name) else {
                continue;
            };
            if let Err(e) = self.scan_chain(ctx, acc, name, client, head).await {
                self.fail(acc, format!("chain {name}: deposit scan: {e}"));
            }
        }
    }

    async fn scan_chain(
        &self,
        ctx: &RunCtx,
        acc: &mut PartTally,
        chain: &str,
        client: &ChainClient,
        head: &ChainHead,
    ) -> Result<(), PartError> {
        let mut from: Option<u64> = None;
        let mut after = 0i64;
        loop {
            let (rows, last) = self
                .store
                .unpaid_page(chain, after, MAX_FILTER_ADDRESSES as i64)
                .await?;
            let Some(last) = last else { break };
            after = last;
            let recipients: BTreeSet<Address> = rows
                .iter()
                .filter_map(|r| Address::parse(&r.pay_to).ok())
                .collect();
            // Native payments emit no log: only token orders are scanned.
            let tokens: BTreeSet<Address> = rows
                .iter()
                .filter_map(|r| match Asset::parse(&r.asset) {
                    Ok(Asset::Token(a)) => Some(a),
                    _ => None,
                })
                .collect();
            if recipients.is_empty() || tokens.is_empty() {
                continue;
            }
            let start = match from {
                Some(b) => b,
                None => {
                    let b = client.first_block_since(ctx.since, head.number).await?;
                    *from.insert(b)
                }
            };
            let recipients: Vec<Address> = recipients.into_iter().collect();
            let tokens: Vec<Address> = tokens.into_iter().collect();
            let mut transfers = Vec::new();
            for t in tokens.chunks(MAX_FILTER_ADDRESSES) {
                let found = client.transfers_to(head, t, &recipients, start).await?;
                transfers.extend(found);
            }
            self.settle_scanned(ctx, acc, chain, transfers).await?;
        }
        Ok(())
    }

    async fn settle_scanned(
        &self,
        ctx: &RunCtx,
        acc: &mut PartTally,
        chain: &str,
        transfers: Vec<crate::domain::ChainTransfer>,
    ) -> Result<(), PartError> {
        if transfers.is_empty() {
            return Ok(());
        }
        let mut observations = Vec::with_capacity(transfers.len());
        let mut keys = Vec::with_capacity(transfers.len());
        let mut slots = Vec::with_capacity(transfers.len());
        for t in transfers {
            let fp = {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                t.key.hash(&mut h);
                h.finish()
            };
            self.mark_checked(acc, chain, fp);
            keys.push(t.key.clone());
            slots.push((chain.to_string(), t.to.to_string(), t.asset.to_string()));
            observations.push(Observation {
                provider: Part::Sweep.name().into(),
                chain: chain.to_string(),
                tx_hash: t.key.tx_hash.clone(),
                notification_id: None,
                failed: false,
                order_ref: None,
                infer_failed: false,
                record_time: None,
                verdict: ChainVerdict::Transfer(t),
            });
        }
        slots.sort();
        slots.dedup();
        let view = self.store.load_view(&keys, &slots).await?;
        let seen = BatchInput {
            observations: &observations,
            claims: &[],
        };
        self.settle(ctx, acc, None, seen, &view, Vec::new())
            .await
            .map_err(PartError::from)
    }
}
