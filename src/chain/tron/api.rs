//! java-tron's HTTP API, for TRX transfers (docs/configuration.md, "Tron"):
//! `/wallet/gettransactionbyid` says what the transaction is (`raw_data.contract[0].type ==
//! "TransferContract"`, `to_address`, `amount` in sun, `ret[0].contractRet`),
//! `/wallet/gettransactioninfobyid` which block holds it, `/wallet/getblockbynum` that block's
//! id. A freeze, a vote, a TRC-10 transfer or a contract call with a value is never a payment.
//! For the balance check (docs/operations.md, "Balances"), the TRX that moved into and out of
//! deposit addresses, from `/wallet/getblockbylimitnext` (100 blocks a read) and the fees they
//! paid from `/wallet/gettransactioninfobyid`. Requests are retried like JSON-RPC ones
//! (connection errors, timeouts, 5xx, 429) and carry `TRON-PRO-API-KEY` when configured.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::chain::rest::Rest;
use crate::chain::rpc::Limiter;
use crate::chain::{ChainError, ChainSettings, Lookup, TransferQuery};
use crate::domain::{
    tron_address, Address, Asset, BlockRef, ChainHead, ChainKind, ChainTransfer, Flow, PaymentKey,
    TronAddress, U256,
};

/// Transactions looked up at once.
const IN_FLIGHT: usize = 4;
/// Blocks one `/wallet/getblockbylimitnext` answers at most (java-tron's limit).
const BLOCKS_PER_READ: u64 = 100;

pub(in crate::chain) struct TronApi {
    rest: Rest,
}

#[derive(Debug, Deserialize)]
struct Tx {
    #[serde(default)]
    ret: Vec<Ret>,
    raw_data: Option<RawData>,
}

#[derive(Debug, Deserialize)]
struct Blocks {
    #[serde(default)]
    block: Vec<ApiBlock>,
}

#[derive(Debug, Deserialize)]
struct ApiBlock {
    #[serde(rename = "blockID")]
    block_id: String,
    block_header: Header,
    #[serde(default)]
    transactions: Vec<ApiTx>,
}

#[derive(Debug, Deserialize)]
struct Header {
    raw_data: HeaderData,
}

#[derive(Debug, Deserialize)]
struct HeaderData {
    /// Absent on block 0 (protobuf's JSON leaves zeros out).
    #[serde(default)]
    number: u64,
}

#[derive(Debug, Deserialize)]
struct ApiTx {
    #[serde(rename = "txID")]
    txid: String,
    #[serde(flatten)]
    tx: Tx,
}

/// A transaction's info: `{}` when the node has none; `fee` absent when it is zero.
#[derive(Debug, Deserialize)]
struct Fee {
    id: Option<String>,
    #[serde(default)]
    fee: u64,
}

#[derive(Debug, Deserialize)]
struct Ret {
    #[serde(rename = "contractRet")]
    contract_ret: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RawData {
    #[serde(default)]
    contract: Vec<Contract>,
}

#[derive(Debug, Deserialize)]
struct Contract {
    #[serde(rename = "type")]
    kind: String,
    parameter: Option<Parameter>,
}

#[derive(Debug, Deserialize)]
struct Parameter {
    value: Value,
}

#[derive(Debug, Deserialize)]
struct Info {
    #[serde(rename = "blockNumber")]
    block_number: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct Block {
    #[serde(rename = "blockID")]
    block_id: Option<String>,
}

impl TronApi {
    /// `limiter`: `max_requests_per_second`, shared with the chain's JSON-RPC.
    pub(in crate::chain) fn new(
        settings: &ChainSettings,
        limiter: Option<Arc<Limiter>>,
    ) -> Result<TronApi, ChainError> {
        let what = "api_url (java-tron's HTTP API)";
        let rest = Rest::new(settings, settings.api_url.as_deref(), what, limiter)?;
        Ok(TronApi { rest })
    }

    /// One answer per native query, in order.
    pub(in crate::chain) async fn trx_transfers(
        &self,
        head: &ChainHead,
        queries: Vec<TransferQuery>,
    ) -> Result<Vec<Lookup>, ChainError> {
        // Owned queries: the stream's futures borrow nothing but `self` (keeps them Send).
        futures::stream::iter(queries)
            .map(|q| self.trx_transfer(*head, q))
            .buffered(IN_FLIGHT)
            .try_collect()
            .await
    }

    async fn trx_transfer(&self, head: ChainHead, q: TransferQuery) -> Result<Lookup, ChainError> {
        let q = &q;
        let chain = self.rest.chain();
        let txid = q.tx_hash.as_str();
        let tx = self
            .post("/wallet/gettransactionbyid", json!({ "value": txid }))
            .await?;
        let tx: Tx = match tx {
            Value::Object(o) if o.is_empty() => return Ok(Lookup::NotFound),
            v => match Tx::deserialize(v) {
                Ok(t) => t,
                Err(e) => return Ok(malformed("transaction", e)),
            },
        };
        let (to, amount) = match transfer_of(&tx, q) {
            Ok(x) => x,
            Err(answer) => return Ok(answer),
        };
        let info = self
            .post("/wallet/gettransactioninfobyid", json!({ "value": txid }))
            .await?;
        let number = match Info::deserialize(info) {
            Ok(Info {
                block_number: Some(n),
            }) => n,
            // `{}`: known to the node but not in a block yet.
            Ok(_) => return Ok(Lookup::NotFound),
            Err(e) => return Ok(malformed("transaction info", e)),
        };
        let block = self
            .post("/wallet/getblockbynum", json!({ "num": number }))
            .await?;
        let hash = match Block::deserialize(block) {
            Ok(Block { block_id: Some(id) }) if id.len() == 64 => {
                format!("0x{}", id.to_lowercase())
            }
            Ok(_) => return Ok(Lookup::NotFound),
            Err(e) => return Ok(malformed("block", e)),
        };
        Ok(Lookup::Found(vec![ChainTransfer {
            key: PaymentKey {
                chain: chain.to_string(),
                tx_hash: q.tx_hash.clone(),
                log_index: -1,
            },
            to,
            asset: Asset::Native,
            amount,
            block: BlockRef { number, hash },
            state: head.state_of(number),
            block_time: None,
        }]))
    }

    /// The TRX that moved into and out of `addresses` (Tron form) in blocks `from..=to`: a
    /// `TransferContract` to or from one of them (its amount; nothing when it failed), and
    /// for every transaction one of them sent (a TRC-20 sweep too), the TRX it burned as fee
    /// (`/wallet/gettransactioninfobyid`) and a contract call's `call_value`. Freezes, votes
    /// and TRX sent from inside contracts are not read: what they moved is left unexplained.
    pub(in crate::chain) async fn trx_flows(
        &self,
        addresses: &[Address],
        from: u64,
        to: u64,
    ) -> Result<Vec<Flow>, ChainError> {
        let mine: std::collections::HashSet<&str> = addresses.iter().map(Address::as_str).collect();
        let mut flows = Vec::new();
        let mut start = from;
        while start <= to {
            let end = start.saturating_add(BLOCKS_PER_READ - 1).min(to);
            let body = json!({ "startNum": start, "endNum": end + 1 });
            let raw = self.post("/wallet/getblockbylimitnext", body).await?;
            let blocks = Blocks::deserialize(raw).map_err(|e| ChainError::Rpc {
                chain: self.rest.chain().to_string(),
                what: "/wallet/getblockbylimitnext",
                reason: format!("malformed blocks {start}..={end}: {e}"),
            })?;
            // Tron's block numbers have no holes: fewer blocks than asked is an answer that
            // would hide payments (a node behind, or one with a smaller limit).
            if blocks.block.len() as u64 != end - start + 1 {
                return Err(ChainError::Rpc {
                    chain: self.rest.chain().to_string(),
                    what: "/wallet/getblockbylimitnext",
                    reason: format!(
                        "asked for blocks {start}..={end}, got {}",
                        blocks.block.len()
                    ),
                });
            }
            for b in blocks.block {
                let block = BlockRef {
                    number: b.block_header.raw_data.number,
                    hash: format!("0x{}", b.block_id.to_lowercase()),
                };
                for t in &b.transactions {
                    flows.extend(self.flow_of(&mine, &block, t));
                }
            }
            start = end + 1;
        }
        // Owned ids: the stream's futures borrow nothing but `self` (keeps them Send).
        let sent: Vec<Option<String>> = flows
            .iter()
            .map(|f| {
                mine.contains(f.from.as_str())
                    .then(|| f.key.tx_hash.to_string())
            })
            .collect();
        let fees: Vec<u64> = futures::stream::iter(sent)
            .map(|txid| self.fee_of(txid))
            .buffered(IN_FLIGHT)
            .try_collect()
            .await?;
        for (flow, fee) in flows.iter_mut().zip(fees) {
            flow.fee = U256::from(fee);
        }
        Ok(flows)
    }

    /// The TRX a transaction burned as its fee (none asked for: 0).
    async fn fee_of(&self, txid: Option<String>) -> Result<u64, ChainError> {
        let Some(txid) = txid else {
            return Ok(0);
        };
        let info = self
            .post("/wallet/gettransactioninfobyid", json!({ "value": txid }))
            .await?;
        match Fee::deserialize(info) {
            Ok(Fee { id: Some(_), fee }) => Ok(fee),
            // A node without the transaction's info (history off, a lite node): the fee is
            // unknown, never taken as zero.
            other => Err(ChainError::Rpc {
                chain: self.rest.chain().to_string(),
                what: "/wallet/gettransactioninfobyid",
                reason: format!(
                    "no fee for transaction {txid}: {}",
                    other.map_or_else(|e| e.to_string(), |_| "the node has no info for it".into())
                ),
            }),
        }
    }

    /// A transaction as a TRX flow of one of `mine`, if it is one's.
    fn flow_of(
        &self,
        mine: &std::collections::HashSet<&str>,
        block: &BlockRef,
        t: &ApiTx,
    ) -> Option<Flow> {
        let contract = t.tx.raw_data.as_ref()?.contract.first()?;
        let value = &contract.parameter.as_ref()?.value;
        let party = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .and_then(|s| TronAddress::parse("address", s).ok())
                .map(|a| tron_address(&a).to_string())
        };
        let number = |key: &str| value.get(key).and_then(Value::as_u64).unwrap_or(0);
        let owner = party("owner_address")?;
        let (to, amount) = match contract.kind.as_str() {
            "TransferContract" => (party("to_address")?, number("amount")),
            "TriggerSmartContract" => (party("contract_address")?, number("call_value")),
            other => (other.to_string(), 0),
        };
        if !mine.contains(owner.as_str()) && !mine.contains(to.as_str()) {
            return None;
        }
        let success = t.tx.ret.first().and_then(|r| r.contract_ret.as_deref()) == Some("SUCCESS");
        Some(Flow {
            key: PaymentKey {
                chain: self.rest.chain().to_string(),
                tx_hash: ChainKind::Tron.tx_hash(&t.txid).ok()?,
                log_index: -1,
            },
            from: owner,
            to,
            asset: Asset::Native,
            amount: U256::from(if success { amount } else { 0 }),
            fee: U256::ZERO,
            block: block.clone(),
        })
    }

    async fn post(&self, path: &'static str, body: Value) -> Result<Value, ChainError> {
        self.rest.post(path, &body).await
    }
}

/// The recipient and amount of a TRX transfer; else the lookup's answer: `Reverted` when it
/// failed on chain, `NoTransfer` when it is no payment (the reason says why).
fn transfer_of(tx: &Tx, q: &TransferQuery) -> Result<(crate::domain::Address, U256), Lookup> {
    let Some(contract) = tx.raw_data.as_ref().and_then(|r| r.contract.first()) else {
        return Err(no("the transaction has no contract"));
    };
    if contract.kind != "TransferContract" {
        return Err(no(format!(
            "the transaction is a {}, not a TRX transfer (freezes, votes, TRC-10 transfers \
             and contract calls are never payments)",
            contract.kind
        )));
    }
    let value = contract.parameter.as_ref().map(|p| &p.value);
    let to = value
        .and_then(|v| v.get("to_address"))
        .and_then(Value::as_str)
        .and_then(|s| TronAddress::parse("to_address", s).ok())
        .map(|t| tron_address(&t))
        .ok_or_else(|| no("the transfer has no readable to_address"))?;
    let amount = value
        .and_then(|v| v.get("amount"))
        .and_then(Value::as_u64)
        .ok_or_else(|| no("the transfer has no readable amount"))?;
    if let Some(want) = &q.to {
        if *want != to {
            return Err(no(format!("the transaction pays {to}, not {want}")));
        }
    }
    if amount == 0 {
        return Err(no("the transaction carries no TRX"));
    }
    if q.log_index.is_some_and(|i| i != -1) {
        return Err(no("a native transfer has log index -1"));
    }
    match tx.ret.first().and_then(|r| r.contract_ret.as_deref()) {
        Some("SUCCESS") => Ok((to, U256::from(amount))),
        _ => Err(Lookup::Reverted),
    }
}

/// No payment, and why.
fn no(reason: impl Into<String>) -> Lookup {
    Lookup::NoTransfer(reason.into())
}

fn malformed(what: &str, e: serde_json::Error) -> Lookup {
    Lookup::NoTransfer(format!("malformed {what} from the node's HTTP API: {e}"))
}
