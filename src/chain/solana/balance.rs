//! Solana's side of the balance check (docs/configuration.md, "Solana"): a wallet's
//! SOL or token holding at the `finalized` commitment (with the slot it was read at), and its
//! finalized history since a slot (or, the first time, since a time), each transaction read
//! once (`getTransaction` in batches, as the scan does) into what it did to the wallet
//! (`Moves`). A token holding is the sum of the wallet's accounts of the mint, and its history
//! the union of theirs.

use std::collections::HashSet;

use futures::{StreamExt, TryStreamExt};
use serde::Deserialize;
use serde_json::{json, Value};

use super::scan::{Listed, MAX_PAGES, PAGE};
use super::tx::Moves;
use super::{SolanaClient, IN_FLIGHT};
use crate::chain::ChainError;
use crate::domain::{Address, Asset};

/// A wallet's holding of one asset at the `finalized` commitment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holding {
    /// The slot the node read it at (its `context.slot`).
    pub slot: u64,
    pub amount: u128,
    /// The accounts its history is read on: the wallet (SOL), or its token accounts of the
    /// mint.
    pub accounts: Vec<String>,
}

/// Where a history read stops: after a slot (where the last check ended), or at a time (the
/// first check: the wallet's oldest order).
#[derive(Debug, Clone, Copy)]
pub enum Floor {
    Slot(u64),
    Time(jiff::Timestamp),
}

/// One finalized transaction of a wallet's history and what it did to the wallet's asset.
#[derive(Debug)]
pub struct Moved {
    pub signature: String,
    pub slot: u64,
    pub moves: Moves,
}

#[derive(Debug, Deserialize)]
struct Slotted<T> {
    context: Slot,
    value: T,
}

#[derive(Debug, Deserialize)]
struct Slot {
    slot: u64,
}

#[derive(Debug, Deserialize)]
struct TokenAccount {
    pubkey: String,
    account: Value,
}

impl SolanaClient {
    /// `wallet`'s holding of `asset` at the `finalized` commitment: `getBalance`, or the sum of
    /// its token accounts of the mint (`getTokenAccountsByOwner`, `jsonParsed`).
    pub async fn holding(&self, wallet: &Address, asset: &Asset) -> Result<Holding, ChainError> {
        let opts = json!({ "commitment": "finalized" });
        let Asset::Token(mint) = asset else {
            let b: Slotted<u64> = self
                .rpc
                .call("getBalance", "getBalance", json!([wallet.as_str(), opts]))
                .await?;
            return Ok(Holding {
                slot: b.context.slot,
                amount: u128::from(b.value),
                accounts: vec![wallet.to_string()],
            });
        };
        let what = "getTokenAccountsByOwner";
        let params = json!([wallet.as_str(), { "mint": mint.as_str() },
                            { "encoding": "jsonParsed", "commitment": "finalized" }]);
        let owned: Slotted<Vec<TokenAccount>> = self.rpc.call(what, what, params).await?;
        let mut amount = 0u128;
        let mut accounts = Vec::with_capacity(owned.value.len());
        for a in owned.value {
            let info = &a.account["data"]["parsed"]["info"]["tokenAmount"]["amount"];
            let Some(units) = info.as_str().and_then(|s| s.parse::<u128>().ok()) else {
                return Err(self.fail(what, format!("token account {} has no amount", a.pubkey)));
            };
            amount = amount.saturating_add(units);
            accounts.push(a.pubkey);
        }
        Ok(Holding {
            slot: owned.context.slot,
            amount,
            accounts,
        })
    }

    /// The finalized transactions on `holding`'s accounts above `floor`, oldest first, each
    /// with what it did to `wallet`'s `asset` (failed ones too: their fee was paid).
    pub async fn history(
        &self,
        wallet: &Address,
        asset: &Asset,
        holding: &Holding,
        floor: Floor,
    ) -> Result<Vec<Moved>, ChainError> {
        let listed: Vec<Vec<(String, u64)>> = futures::stream::iter(holding.accounts.clone())
            .map(|account| async move { self.listed_above(&account, floor).await })
            .buffered(IN_FLIGHT)
            .try_collect()
            .await?;
        let mut seen = HashSet::new();
        let mut entries: Vec<(String, u64)> = listed
            .into_iter()
            .flatten()
            .filter(|(sig, _)| seen.insert(sig.clone()))
            .collect();
        entries.sort_by_key(|e| e.1);
        let sigs: Vec<String> = entries.iter().map(|e| e.0.clone()).collect();
        let mut txs = self.transactions(&sigs).await?;
        let mint = match asset {
            Asset::Native => None,
            Asset::Token(m) => Some(m.as_str()),
        };
        let mut out = Vec::with_capacity(entries.len());
        for (signature, slot) in entries {
            let Some(tx) = txs.remove(&signature).flatten() else {
                return Err(self.fail(
                    "getTransaction",
                    format!(
                        "{signature} (slot {slot}) is listed on {wallet} but the node has no \
                         transaction: its history is pruned; use an RPC node that keeps it"
                    ),
                ));
            };
            let moves = tx.moves(wallet.as_str(), mint);
            out.push(Moved {
                signature,
                slot,
                moves,
            });
        }
        Ok(out)
    }

    /// `(signature, slot)` of every finalized transaction listed on `address` above `floor`.
    async fn listed_above(
        &self,
        address: &str,
        floor: Floor,
    ) -> Result<Vec<(String, u64)>, ChainError> {
        let what = "getSignaturesForAddress";
        let mut out = Vec::new();
        let mut before: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut opts = json!({ "limit": PAGE, "commitment": "finalized" });
            if let Some(b) = &before {
                opts["before"] = json!(b);
            }
            let page: Vec<Listed> = self.rpc.call(what, what, json!([address, opts])).await?;
            let full = page.len() >= PAGE;
            for entry in &page {
                let above = match floor {
                    Floor::Slot(lo) => entry.slot > lo,
                    Floor::Time(t) => self.time_of(entry).await?.is_none_or(|at| at >= t),
                };
                if !above {
                    return Ok(out);
                }
                out.push((entry.signature.clone(), entry.slot));
            }
            match page.last() {
                Some(last) if full && before.as_deref() != Some(last.signature.as_str()) => {
                    before = Some(last.signature.clone());
                }
                _ => return Ok(out),
            }
        }
        Err(self.fail(
            what,
            format!(
                "the history of {address} since its last check is longer than {MAX_PAGES} pages"
            ),
        ))
    }
}
