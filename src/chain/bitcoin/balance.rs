//! What the balance check reads from Esplora (docs/operations.md, "Balances", on Bitcoin): an
//! address's confirmed balance at the tip (`GET /address/:address`, `chain_stats`: funded minus
//! spent), and its confirmed history down to a height or a time, each transaction as what it
//! did to the address.

use serde::Deserialize;

use super::BitcoinClient;
use super::Tx;
use crate::chain::rest::Body;
use crate::chain::ChainError;
use crate::domain::{Address, BlockRef, TxHash};

#[derive(Deserialize)]
struct AddressInfo {
    chain_stats: Stats,
}

#[derive(Deserialize)]
struct Stats {
    funded_txo_sum: u64,
    spent_txo_sum: u64,
}

/// One confirmed transaction of a deposit address's history, as the balance check reads it
/// (amounts in satoshis, addresses in the ledger's spelling).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddressTx {
    pub txid: TxHash,
    pub block: BlockRef,
    /// The block's timestamp (seconds).
    pub time: Option<u64>,
    /// Outputs paying the address: (output index, value).
    pub received: Vec<(i64, u64)>,
    /// What the address's own inputs spent.
    pub spent: u64,
    /// Every input spent one of the address's outputs: its own transaction, fee included.
    pub own: bool,
    /// Outputs paying anything else: (output index, address or `script`, value).
    pub sent: Vec<(i64, String, u64)>,
    /// The inputs' sum minus the outputs' (the fee paid), when every input's value is known.
    pub fee: u64,
    /// The first input's address: who paid an inflow.
    pub payer: Option<String>,
}

impl AddressTx {
    /// What the transaction did to the address's balance: `received − spent`.
    pub fn net(&self) -> i128 {
        let received: u64 = self.received.iter().map(|r| r.1).sum();
        i128::from(received) - i128::from(self.spent)
    }
}

impl BitcoinClient {
    /// The address's confirmed balance at the tip: `chain_stats.funded_txo_sum −
    /// spent_txo_sum` (`GET /address/:address`).
    pub async fn confirmed_balance(&self, address: &Address) -> Result<u64, ChainError> {
        let what = "/address/:address";
        let fail = |reason: String| ChainError::Rpc {
            chain: self.settings().name.clone(),
            what,
            reason,
        };
        let path = format!("/address/{address}");
        let info = match self.rest.get(what, &path).await? {
            Some(Body::Json(v)) => AddressInfo::deserialize(v)
                .map_err(|e| fail(format!("malformed stats for {address}: {e}")))?,
            Some(Body::Text(t)) => {
                return Err(fail(format!("malformed stats for {address}: {t:.60}")))
            }
            None => {
                return Err(fail(format!(
                    "HTTP 404 for the stats of {address} (is esplora_url an Esplora API?)"
                )))
            }
        };
        let s = info.chain_stats;
        s.funded_txo_sum
            .checked_sub(s.spent_txo_sum)
            .ok_or_else(|| {
                fail(format!(
                    "{address} spent {} of {} funded",
                    s.spent_txo_sum, s.funded_txo_sum
                ))
            })
    }

    /// The address's confirmed transactions, newest first, down to the first history page
    /// whose oldest entry is `past` (given its height and block time).
    pub async fn address_txs(
        &self,
        address: &Address,
        past: impl Fn(u64, Option<u64>) -> bool,
    ) -> Result<Vec<AddressTx>, ChainError> {
        let txs = self
            .history(address, |t| {
                past(t.status.block_height.unwrap_or(0), t.status.block_time)
            })
            .await?;
        txs.into_iter()
            .map(|t| self.address_tx(address, t))
            .collect()
    }

    fn address_tx(&self, me: &Address, tx: Tx) -> Result<AddressTx, ChainError> {
        let kind = self.settings().kind;
        let fail = |reason: String| ChainError::Rpc {
            chain: self.settings().name.clone(),
            what: "/address/:address/txs",
            reason: format!("{reason} in the history of {me}"),
        };
        let txid = kind
            .tx_hash(&tx.txid)
            .map_err(|e| fail(format!("malformed txid: {e}")))?;
        let (Some(number), Some(hash)) = (tx.status.block_height, tx.status.block_hash.as_ref())
        else {
            return Err(fail(format!("confirmed {} without its block", tx.txid)));
        };
        let spell = |a: &Option<String>| {
            a.as_deref()
                .and_then(|a| kind.address("address", a).ok())
                .map(|a| a.to_string())
        };
        let mine = me.to_string();
        let (mut spent, mut inputs_total, mut own, mut known) = (0u64, 0u64, true, true);
        let mut payer = None;
        for input in &tx.vin {
            let Some(prev) = &input.prevout else {
                known = false; // a coinbase
                own = false;
                continue;
            };
            let from = spell(&prev.scriptpubkey_address);
            if payer.is_none() {
                payer.clone_from(&from);
            }
            inputs_total = inputs_total.saturating_add(prev.value);
            if from.as_deref() == Some(mine.as_str()) {
                spent = spent.saturating_add(prev.value);
            } else {
                own = false;
            }
        }
        let (mut received, mut sent, mut outputs_total) = (Vec::new(), Vec::new(), 0u64);
        for (i, o) in tx.vout.iter().enumerate() {
            outputs_total = outputs_total.saturating_add(o.value);
            match spell(&o.scriptpubkey_address) {
                Some(to) if to == mine => received.push((i as i64, o.value)),
                Some(to) => sent.push((i as i64, to, o.value)),
                None if o.value > 0 => sent.push((i as i64, "script".to_string(), o.value)),
                None => {}
            }
        }
        Ok(AddressTx {
            txid,
            block: BlockRef {
                number,
                hash: hash.to_lowercase(),
            },
            time: tx.status.block_time,
            received,
            spent,
            own: own && spent > 0,
            sent,
            fee: if known {
                inputs_total.saturating_sub(outputs_total)
            } else {
                0
            },
            payer,
        })
    }
}
