//! Solana over its JSON-RPC (docs/configuration.md, "Solana"). A payment is a
//! transfer instruction keyed `(chain, first signature, outer × 65536 + inner + 1)`; its state
//! is the cluster's commitment from `getSignatureStatuses` (`processed` pending, `confirmed`
//! confirmed, `finalized` final); what it pays is read from `getTransaction` (`jsonParsed`,
//! `tx.rs`), in JSON-RPC batches, or in single calls (a few at a time) from a node
//! that refuses batches. A signature the cluster no longer knows is `NotFound` (before
//! `finalized`: the sweep's `reorged`). The deposit scan is `scan.rs`.

pub(super) mod balance;
mod check;
pub(super) mod scan;
pub(super) mod tx;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::{StreamExt, TryStreamExt};
use serde::Deserialize;
use serde_json::{json, Value};

use super::rpc::Rpc;
use super::{ChainError, ChainSettings, Lookup, Preflight, TransferQuery};
use crate::domain::{
    Address, Asset, BlockRef, ChainHead, ChainKind, ChainTransfer, PaymentKey, State,
};
use tx::{Payment, Tx};

/// Signatures per `getSignatureStatuses` call (the most a node takes).
const STATUSES: usize = 256;
/// Single calls in flight at once, where a node refuses batches; addresses scanned at once.
pub(super) const IN_FLIGHT: usize = 4;

pub struct SolanaClient {
    settings: ChainSettings,
    pub(super) rpc: Rpc,
    /// Until when (Unix seconds) transactions are read in single calls: the node refused a
    /// batch. 0 while it takes them; batches are tried again after `BATCH_RETRY`.
    singles_until: AtomicU64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    slot: u64,
    err: Option<Value>,
    confirmation_status: Option<String>,
}

/// How long single calls are used after a node refused a batch.
const BATCH_RETRY: std::time::Duration = std::time::Duration::from_secs(3_600);

fn now_secs() -> u64 {
    u64::try_from(jiff::Timestamp::now().as_second()).unwrap_or(0)
}

impl Status {
    /// Confirmed or finalized, and not failed: its transaction can be read.
    fn readable(&self) -> bool {
        self.err.is_none() && self.confirmation_status.as_deref() != Some("processed")
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct Context<T> {
    pub value: T,
}

/// Where a signature stands, and what its transaction pays.
struct Known {
    status: Status,
    tx: Option<Tx>,
}

impl SolanaClient {
    /// Builds the JSON-RPC client; sends nothing yet.
    pub fn new(settings: ChainSettings) -> Result<SolanaClient, ChainError> {
        let rpc = Rpc::new(&settings)?;
        Ok(SolanaClient {
            settings,
            rpc,
            singles_until: AtomicU64::new(0),
        })
    }

    pub fn settings(&self) -> &ChainSettings {
        &self.settings
    }

    pub fn failovers(&self) -> u64 {
        self.rpc.failovers()
    }

    pub(super) fn fail(&self, what: &'static str, reason: String) -> ChainError {
        ChainError::Rpc {
            chain: self.settings.name.clone(),
            what,
            reason,
        }
    }

    /// The head is the `confirmed` slot, the final block the `finalized` one: states come
    /// from each signature's own status, these only place the run.
    pub async fn head(&self) -> Result<ChainHead, ChainError> {
        let slot = |c: &'static str| async move {
            let v: u64 = self
                .rpc
                .call("getSlot", "getSlot", json!([{ "commitment": c }]))
                .await?;
            Ok::<u64, ChainError>(v)
        };
        Ok(ChainHead {
            number: slot("confirmed").await?,
            final_block: slot("finalized").await?,
            confirmations: 1,
        })
    }

    /// A cluster has no chain id: the check is that it answers with its slots.
    pub async fn preflight(&self) -> Result<Preflight, ChainError> {
        Ok(Preflight::head_only(self.head().await?))
    }

    /// One answer per query, in order. Each distinct signature's status is read once
    /// (`getSignatureStatuses`, 256 a call) and each known one's transaction once.
    pub async fn lookup(
        &self,
        head: &ChainHead,
        queries: &[TransferQuery],
    ) -> Result<Vec<Lookup>, ChainError> {
        let mut sigs: Vec<String> = queries
            .iter()
            .map(|q| q.tx_hash.as_str().to_string())
            .collect();
        sigs.sort();
        sigs.dedup();
        let known = self.known(&sigs).await?;
        Ok(queries
            .iter()
            .map(|q| self.resolve(head, q, known.get(q.tx_hash.as_str())))
            .collect())
    }

    /// The status and transaction of each signature the cluster knows.
    async fn known(&self, sigs: &[String]) -> Result<HashMap<String, Known>, ChainError> {
        let mut found: Vec<(String, Status)> = Vec::new();
        for chunk in sigs.chunks(STATUSES) {
            let statuses: Context<Vec<Option<Status>>> = self
                .rpc
                .call(
                    "getSignatureStatuses",
                    "getSignatureStatuses",
                    json!([chunk, { "searchTransactionHistory": true }]),
                )
                .await?;
            if statuses.value.len() != chunk.len() {
                return Err(self.fail(
                    "getSignatureStatuses",
                    format!(
                        "{} statuses for {} signatures",
                        statuses.value.len(),
                        chunk.len()
                    ),
                ));
            }
            for (sig, s) in chunk.iter().zip(statuses.value) {
                found.extend(s.map(|s| (sig.clone(), s)));
            }
        }
        // A `processed` transaction is not served by getTransaction yet: seen next run.
        let wanted: Vec<String> = found
            .iter()
            .filter(|(_, s)| s.readable())
            .map(|(sig, _)| sig.clone())
            .collect();
        let mut txs = self.transactions(&wanted).await?;
        let mut out = HashMap::with_capacity(found.len());
        for (sig, status) in found {
            let tx = txs.remove(&sig).flatten();
            if status.readable() && tx.is_none() {
                // Listed with a status but without its transaction: the node's history does
                // not reach it (pruned), which is not "gone".
                return Err(self.fail(
                    "getTransaction",
                    format!(
                        "the cluster has a status for {sig} (slot {}) but no transaction: the \
                         node's history is pruned; use an RPC node that keeps it",
                        status.slot
                    ),
                ));
            }
            out.insert(sig, Known { status, tx });
        }
        Ok(out)
    }

    /// `getTransaction` of each signature: batches of `batch_size`, or single calls once the
    /// node refused a batch. `None` where the node has no transaction.
    pub(super) async fn transactions(
        &self,
        sigs: &[String],
    ) -> Result<HashMap<String, Option<Tx>>, ChainError> {
        let params = |s: &str| {
            json!([s, { "encoding": "jsonParsed", "maxSupportedTransactionVersion": 0,
                        "commitment": "confirmed" }])
        };
        let mut out = HashMap::with_capacity(sigs.len());
        for chunk in sigs.chunks(self.settings.batch_size.max(1)) {
            if self.singles_until.load(Ordering::Relaxed) <= now_secs() {
                let calls: Vec<(&'static str, Value)> = chunk
                    .iter()
                    .map(|s| ("getTransaction", params(s)))
                    .collect();
                match self.rpc.batch("getTransaction", &calls).await {
                    Ok(raws) => {
                        for (sig, raw) in chunk.iter().zip(raws) {
                            let tx = self.decode(sig, raw.get())?;
                            out.insert(sig.clone(), tx);
                        }
                        continue;
                    }
                    Err(e) => self.refused_batch(e, &params(&chunk[0])).await?,
                }
            }
            let txs: Vec<(String, Option<Tx>)> = futures::stream::iter(chunk.to_vec())
                .map(|sig| async move {
                    let v: Value = self
                        .rpc
                        .call("getTransaction", "getTransaction", params(&sig))
                        .await?;
                    let tx = self.decode(&sig, &v.to_string())?;
                    Ok::<_, ChainError>((sig, tx))
                })
                .buffered(IN_FLIGHT)
                .try_collect()
                .await?;
            out.extend(txs);
        }
        Ok(out)
    }

    /// After a failed batch: when the same call alone succeeds, the node refuses batches
    /// (surfpool, some hosted RPCs): single calls for the next `BATCH_RETRY` (a node behind a
    /// proxy may take them again). Otherwise the batch's error.
    async fn refused_batch(&self, e: ChainError, one: &Value) -> Result<(), ChainError> {
        let alone: Result<Value, ChainError> = self
            .rpc
            .call("getTransaction", "getTransaction", one.clone())
            .await;
        if alone.is_err() {
            return Err(e);
        }
        let until = now_secs() + BATCH_RETRY.as_secs();
        if self.singles_until.swap(until, Ordering::Relaxed) <= now_secs() {
            tracing::info!(chain = %self.settings.name, error = %e,
                "The Solana node refuses JSON-RPC batches; reading transactions in single calls, {IN_FLIGHT} at a time, for an hour.");
        }
        Ok(())
    }

    fn decode(&self, sig: &str, raw: &str) -> Result<Option<Tx>, ChainError> {
        let malformed = |why: String| {
            self.fail(
                "getTransaction",
                format!("malformed transaction {sig:.20}…: {why}"),
            )
        };
        let tx = serde_json::from_str::<Option<Tx>>(raw).map_err(|e| malformed(e.to_string()))?;
        // Without `meta` nothing says whether it succeeded: an error, never "reverted".
        if tx.as_ref().is_some_and(|t| t.meta.is_none()) {
            return Err(malformed("no meta".into()));
        }
        Ok(tx)
    }

    /// One query's answer from what the cluster knows of its signature.
    fn resolve(&self, head: &ChainHead, q: &TransferQuery, known: Option<&Known>) -> Lookup {
        let Some(k) = known else {
            return Lookup::NotFound;
        };
        if k.status.err.is_some() {
            return Lookup::Reverted;
        }
        let Some(tx) = &k.tx else {
            // `processed` only: not yet readable, like an EVM transaction not yet mined.
            return Lookup::NotFound;
        };
        if tx.failed() {
            return Lookup::Reverted;
        }
        if tx.first_signature() != Some(q.tx_hash.as_str()) {
            return Lookup::NoTransfer(format!(
                "{} is not the first signature of its transaction: a Solana payment is keyed \
                 by the first, {}",
                q.tx_hash,
                tx.first_signature().unwrap_or("(none)")
            ));
        }
        let state = match k.status.confirmation_status.as_deref() {
            Some("finalized") => State::Final,
            Some("confirmed") => State::Confirmed,
            // processed, or a node too old to say (then the slots decide).
            Some(_) => State::Pending,
            None => head.state_of(k.status.slot),
        };
        let parsed = tx.payments();
        for why in &parsed.refused {
            tracing::warn!(chain = %self.settings.name, tx_hash = %q.tx_hash,
                "A transfer was left out: {why}.");
        }
        let found: Vec<ChainTransfer> = parsed
            .payments
            .iter()
            .filter(|p| self.wanted(q, p))
            .filter_map(|p| self.transfer(q, tx, k.status.slot, state, p))
            .collect();
        if !found.is_empty() {
            return Lookup::Found(found);
        }
        let to =
            q.to.as_ref()
                .map_or("the address".into(), Address::to_string);
        Lookup::NoTransfer(match parsed.refused.first() {
            Some(why) => why.clone(),
            None => format!("no transfer of the transaction pays {to}"),
        })
    }

    fn wanted(&self, q: &TransferQuery, p: &Payment) -> bool {
        let asset_ok = match &q.asset {
            None => true,
            Some(Asset::Native) => p.mint.is_none(),
            Some(Asset::Token(m)) => p.mint.as_deref() == Some(m.as_str()),
        };
        asset_ok
            && q.to.as_ref().is_none_or(|to| to.as_str() == p.wallet)
            && q.log_index.is_none_or(|i| i == p.index)
    }

    fn transfer(
        &self,
        q: &TransferQuery,
        tx: &Tx,
        slot: u64,
        state: State,
        p: &Payment,
    ) -> Option<ChainTransfer> {
        let kind = ChainKind::Solana;
        let asset = match &p.mint {
            None => Asset::Native,
            Some(m) => kind.asset(m).ok()?,
        };
        Some(ChainTransfer {
            key: PaymentKey {
                chain: self.settings.name.clone(),
                tx_hash: q.tx_hash.clone(),
                log_index: p.index,
            },
            to: kind.address("to", &p.wallet).ok()?,
            asset,
            amount: p.amount,
            // A slot has one block: the slot stands for its hash.
            block: BlockRef {
                number: slot,
                hash: slot.to_string(),
            },
            state,
            block_time: tx.time(),
        })
    }

    /// The time of each slot (`getBlockTime`, a few at a time): late payments are judged by it.
    pub async fn block_times(
        &self,
        slots: &[u64],
    ) -> Result<HashMap<u64, jiff::Timestamp>, ChainError> {
        let times: Vec<(u64, Option<jiff::Timestamp>)> = futures::stream::iter(slots.to_vec())
            .map(|s| async move { self.block_time(s).await.map(|t| (s, t)) })
            .buffered(IN_FLIGHT)
            .try_collect()
            .await?;
        Ok(times
            .into_iter()
            .filter_map(|(s, t)| Some((s, t?)))
            .collect())
    }

    pub(super) async fn block_time(
        &self,
        slot: u64,
    ) -> Result<Option<jiff::Timestamp>, ChainError> {
        let v: Option<i64> = self
            .rpc
            .call("getBlockTime", "getBlockTime", json!([slot]))
            .await?;
        Ok(v.and_then(|s| jiff::Timestamp::from_second(s).ok()))
    }
}
