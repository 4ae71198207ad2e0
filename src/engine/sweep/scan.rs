//! The deposit scan, part of the chain sweep: unpaid orders' deposit addresses (keyset pages)
//! -> `Transfer` logs to them in the run's window (or, on a chain scanned by address such as
//! Bitcoin, every payment in their histories by block time) -> the same plan and apply as
//! provider records. It finds the payments no provider reported: Qvard never lists an underpaid or
//! pending payment, and a notification can be missing from every list.

use std::collections::BTreeSet;

use super::{fingerprint, observe, Sweep};
use crate::chain::{ChainClient, MAX_FILTER_ADDRESSES};
use crate::domain::{Address, Asset, ChainHead, LedgerView};
use crate::engine::error::PartError;

impl Sweep<'_> {
    /// Scans every chain with `scan_unpaid` whose head was read; a chain that fails fails the
    /// sweep's entry (the others still run).
    pub(super) async fn scan_unpaid(&mut self) {
        let e = self.engine;
        for (name, client) in &e.chains {
            if !client.settings().scan_unpaid {
                continue;
            }
            // A chain whose head could not be read has already failed the sweep.
            let Some(Ok(head)) = self.ctx.heads.get(name) else {
                continue;
            };
            if let Err(err) = self.scan_chain(name, client, head).await {
                e.fail(&mut self.acc, format!("chain {name}: deposit scan: {err}"));
            }
        }
    }

    async fn scan_chain(
        &mut self,
        chain: &str,
        client: &ChainClient,
        head: &ChainHead,
    ) -> Result<(), PartError> {
        let mut from: Option<u64> = None;
        let mut after = 0i64;
        loop {
            let (rows, last) = self
                .engine
                .store
                .unpaid_page(chain, after, MAX_FILTER_ADDRESSES as i64)
                .await?;
            let Some(last) = last else { break };
            after = last;
            let recipients: BTreeSet<Address> = rows.iter().map(|r| r.pay_to.clone()).collect();
            if client.scans_by_address() {
                let recipients: Vec<Address> = recipients.into_iter().collect();
                let found = client
                    .payments_to(head, &recipients, self.ctx.since)
                    .await?;
                self.settle_scanned(chain, found).await?;
                continue;
            }
            // Native payments emit no log: only token orders are scanned.
            let tokens: BTreeSet<Address> = rows
                .iter()
                .filter_map(|r| match &r.asset {
                    Asset::Token(a) => Some(a.clone()),
                    Asset::Native => None,
                })
                .collect();
            if recipients.is_empty() || tokens.is_empty() {
                continue;
            }
            let start = match from {
                Some(b) => b,
                None => {
                    let b = client
                        .first_block_since(self.ctx.since, head.number)
                        .await?;
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
            self.settle_scanned(chain, transfers).await?;
        }
        Ok(())
    }

    async fn settle_scanned(
        &mut self,
        chain: &str,
        transfers: Vec<crate::domain::ChainTransfer>,
    ) -> Result<(), PartError> {
        if transfers.is_empty() {
            return Ok(());
        }
        let mut observations = Vec::with_capacity(transfers.len());
        let mut keys = Vec::with_capacity(transfers.len());
        let mut slots = Vec::with_capacity(transfers.len());
        for t in &transfers {
            self.engine
                .mark_checked(&mut self.acc, chain, fingerprint(&t.key));
            keys.push(t.key.clone());
            slots.push((chain.to_string(), t.to.to_string(), t.asset.to_string()));
            observations.push(observe(chain, t));
        }
        slots.sort();
        slots.dedup();
        let mut view: LedgerView = self.engine.store.load_view(&keys, &slots).await?;
        view.policy = self.engine.amounts.clone();
        self.settle(&observations, &view, Vec::new()).await
    }
}
