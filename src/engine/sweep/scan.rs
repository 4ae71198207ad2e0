//! The deposit scan, part of the chain sweep: unpaid orders' deposit addresses (keyset pages)
//! -> `Transfer` logs to them in the run's window (or, on a chain scanned by address such as
//! Bitcoin, every payment in their histories by block time) -> the same plan and apply as
//! provider records. It finds the payments no provider reported: Qvard never lists an underpaid or
//! pending payment, and a notification can be missing from every list.

use std::collections::{BTreeSet, HashMap};

use super::{fingerprint, observe, Sweep};
use crate::chain::{ChainClient, ScanCursors, MAX_FILTER_ADDRESSES};
use crate::domain::{Address, Asset, ChainHead, ChainTransfer, LedgerView, PaymentKey};
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
            let first = std::mem::replace(&mut after, last);
            let recipients: BTreeSet<Address> = rows.iter().map(|r| r.pay_to.clone()).collect();
            if client.scans_by_address() {
                let recipients: Vec<Address> = recipients.into_iter().collect();
                self.scan_addresses(chain, client, head, &recipients, (first, last))
                    .await?;
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
            self.settle_scanned(chain, transfers, &HashMap::new())
                .await?;
        }
        Ok(())
    }

    /// A chain scanned by address (Bitcoin, Solana), for the unpaid orders with ids in
    /// `ids` (`(first, last]`) paying to `recipients`: on Solana, payments carrying their
    /// Solana Pay references first, each listing from its account's cursor (not in a backfill),
    /// the cursors moved on once the payments are settled (when the run writes).
    async fn scan_addresses(
        &mut self,
        chain: &str,
        client: &ChainClient,
        head: &ChainHead,
        recipients: &[Address],
        ids: (i64, i64),
    ) -> Result<(), PartError> {
        let store = &self.engine.store;
        let solana = client.pays_by_reference();
        let references = match solana {
            true => store.unpaid_references(chain, ids.0, ids.1).await?,
            false => Vec::new(),
        };
        let mut cursors = ScanCursors::default();
        if solana && self.ctx.cursors {
            let mut owners: Vec<String> = recipients.iter().map(|a| a.to_string()).collect();
            owners.extend(references.iter().map(|r| r.1.clone()));
            cursors.from = store.scan_cursors(chain, &owners).await?;
        }
        let (mut found, named) = self
            .by_reference(client, head, references, &mut cursors)
            .await?;
        let since = self.ctx.since;
        let to = client
            .payments_to(head, recipients, since, &mut cursors)
            .await?;
        found.extend(to.into_iter().filter(|t| !named.contains_key(&t.key)));
        self.settle_scanned(chain, found, &named).await?;
        let ScanCursors { from, mut moved } = cursors;
        moved.retain(|(_, account, c)| from.get(account) != Some(c));
        if self.ctx.apply && !moved.is_empty() {
            self.engine.store.save_scan_cursors(chain, &moved).await?;
        }
        Ok(())
    }

    /// The payments carrying the Solana Pay references of unpaid orders (`(order_ref,
    /// reference, pay_to)`), each named for its order (matched to it first).
    async fn by_reference(
        &self,
        client: &ChainClient,
        head: &ChainHead,
        rows: Vec<(String, String, String)>,
        cursors: &mut ScanCursors,
    ) -> Result<(Vec<ChainTransfer>, HashMap<PaymentKey, String>), PartError> {
        let mut named = HashMap::new();
        let mut order_of = HashMap::new();
        let mut pairs = Vec::new();
        for (order_ref, reference, pay_to) in rows {
            let Ok(to) = client.settings().kind.address("pay_to", &pay_to) else {
                continue;
            };
            order_of.insert(reference.clone(), order_ref);
            pairs.push((reference, to));
        }
        if pairs.is_empty() {
            return Ok((Vec::new(), named));
        }
        let found = client
            .payments_by_reference(head, &pairs, self.ctx.since, cursors)
            .await?;
        let mut out = Vec::with_capacity(found.len());
        for (reference, t) in found {
            // A transaction carrying two orders' references names the first.
            if let (Some(order_ref), false) = (order_of.get(&reference), named.contains_key(&t.key))
            {
                named.insert(t.key.clone(), order_ref.clone());
                out.push(t);
            }
        }
        Ok((out, named))
    }

    /// Settles scanned transfers; one in `named` is observed as naming that order (found by
    /// its Solana Pay reference: the order it names is matched first).
    async fn settle_scanned(
        &mut self,
        chain: &str,
        transfers: Vec<ChainTransfer>,
        named: &HashMap<PaymentKey, String>,
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
            let mut obs = observe(chain, t);
            obs.order_ref = named.get(&t.key).cloned();
            observations.push(obs);
        }
        slots.sort();
        slots.dedup();
        let mut view: LedgerView = self.engine.store.load_view(&keys, &slots).await?;
        view.policy = self.engine.amounts.clone();
        let mut refs: Vec<String> = named.values().cloned().collect();
        refs.sort();
        refs.dedup();
        if !refs.is_empty() {
            for row in self.engine.store.orders_by_ref(&refs).await? {
                view.by_ref.insert(row.order_ref.clone(), row);
            }
        }
        self.settle(&observations, &view, Vec::new()).await
    }
}
