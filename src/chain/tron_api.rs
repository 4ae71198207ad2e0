//! java-tron's HTTP API, for TRX transfers (docs/configuration.md, "Tron"):
//! `/wallet/gettransactionbyid` says what the transaction is
//! (`raw_data.contract[0].type == "TransferContract"`, `to_address`, `amount` in sun,
//! `ret[0].contractRet`), `/wallet/gettransactioninfobyid` which block holds it,
//! `/wallet/getblockbynum` that block's id. A freeze, a vote, a TRC-10 transfer or a contract
//! call with a value is never a payment. Requests are retried like JSON-RPC ones (connection
//! errors, timeouts, 5xx, 429) and carry `TRON-PRO-API-KEY` when configured.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use serde::Deserialize;
use serde_json::{json, Value};

use super::rest::Rest;
use super::rpc::Limiter;
use super::{ChainError, ChainSettings, Lookup, TransferQuery};
use crate::domain::{
    tron_address, Asset, BlockRef, ChainHead, ChainTransfer, PaymentKey, TronAddress, U256,
};

/// Transactions looked up at once.
const IN_FLIGHT: usize = 4;

pub(super) struct TronApi {
    rest: Rest,
}

#[derive(Debug, Deserialize)]
struct Tx {
    #[serde(default)]
    ret: Vec<Ret>,
    raw_data: Option<RawData>,
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
    pub(super) fn new(
        settings: &ChainSettings,
        limiter: Option<Arc<Limiter>>,
    ) -> Result<TronApi, ChainError> {
        let what = "api_url (java-tron's HTTP API)";
        let rest = Rest::new(settings, settings.api_url.as_deref(), what, limiter)?;
        Ok(TronApi { rest })
    }

    /// One answer per native query, in order.
    pub(super) async fn trx_transfers(
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
