//! Bitcoin through an Esplora REST API (docs/configuration.md, "Bitcoin": esplora, electrs,
//! mempool.space's `/api`): a payment is a transaction output, keyed `(chain, txid, vout)`, in
//! satoshis. `GET /tx/:txid` says where the transaction is (`status.confirmed`, `block_height`,
//! `block_hash`) and what it pays (`vout[n].scriptpubkey_address`, `value`);
//! `GET /block/:hash/status` whether that block is still in the best chain;
//! `GET /blocks/tip/height` the head. A transaction only in the mempool is not yet a payment;
//! finality is depth only. The deposit scan reads each address's history
//! (`GET /address/:address/txs`, then `/txs/chain/:last_seen_txid`, newest first) until a page
//! is empty or passes the run's window by block time. Plain serde types over the project's HTTP
//! client: the Bitcoin client crates pull a C build of secp256k1 that payrecon does not need.

pub(super) mod balance;
mod check;

use std::collections::{HashMap, HashSet};

use futures::{StreamExt, TryStreamExt};
use serde::Deserialize;

use super::rest::{Body, Rest};
use super::rpc::Limiter;
use super::{ChainError, ChainSettings, Lookup, Preflight, TransferQuery};
use crate::domain::{Address, Asset, BlockRef, ChainHead, ChainTransfer, PaymentKey, U256};

/// Transactions (or addresses) looked up at once.
const IN_FLIGHT: usize = 4;

/// Pages of one address's history read in one run at most (25 transactions a page on
/// Esplora: 25,000 transactions in the window).
const MAX_PAGES: usize = 1_000;

/// How far a block's timestamp may lag the blocks before it (consensus allows a block time
/// down to the median of the previous 11): the scan reads this much past the window's start.
pub const TIME_SKEW: u64 = 2 * 60 * 60;

pub struct BitcoinClient {
    settings: ChainSettings,
    pub(super) rest: Rest,
}

#[derive(Debug, Deserialize)]
pub(super) struct Tx {
    /// Present in every answer; read from the address history (a `/tx/:txid` answer is
    /// already known by its id).
    #[serde(default)]
    pub txid: String,
    /// The outputs each input spends (`prevout`; none for a coinbase): the balance check
    /// reads what a deposit address spent.
    #[serde(default)]
    pub vin: Vec<Input>,
    #[serde(default)]
    pub vout: Vec<Output>,
    pub status: Status,
}

#[derive(Debug, Deserialize)]
pub(super) struct Input {
    pub prevout: Option<Output>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Output {
    pub scriptpubkey_address: Option<String>,
    pub value: u64,
}

#[derive(Debug, Deserialize)]
pub(super) struct Status {
    pub confirmed: bool,
    pub block_height: Option<u64>,
    pub block_hash: Option<String>,
    /// The block's timestamp (seconds); the deposit scan's window is by block time.
    pub block_time: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct BlockStatus {
    in_best_chain: bool,
}

impl BitcoinClient {
    /// Builds the Esplora client; sends nothing yet.
    pub fn new(settings: ChainSettings) -> Result<BitcoinClient, ChainError> {
        let what = "esplora_url (an Esplora API)";
        let rest = Rest::new(
            &settings,
            settings.api_url.as_deref(),
            what,
            Limiter::of(&settings),
        )?;
        Ok(BitcoinClient { settings, rest })
    }

    pub fn settings(&self) -> &ChainSettings {
        &self.settings
    }

    /// The tip height (`GET /blocks/tip/height`, a plain number).
    async fn tip(&self) -> Result<u64, ChainError> {
        let fail = |reason: String| ChainError::Rpc {
            chain: self.settings.name.clone(),
            what: "/blocks/tip/height",
            reason,
        };
        match self
            .rest
            .get("/blocks/tip/height", "/blocks/tip/height")
            .await?
        {
            Some(Body::Json(v)) => v.as_u64().ok_or_else(|| fail(format!("not a height: {v}"))),
            Some(Body::Text(t)) => t
                .trim()
                .parse()
                .map_err(|_| fail(format!("not a height: {t:.40}"))),
            None => Err(fail("HTTP 404".into())),
        }
    }

    /// Head and the final block by depth (Bitcoin has no finality tag).
    pub async fn head(&self) -> Result<ChainHead, ChainError> {
        let number = self.tip().await?;
        Ok(ChainHead {
            number,
            final_block: number.saturating_sub(self.settings.final_depth.max(1) - 1),
            confirmations: self.settings.confirmations,
        })
    }

    /// Bitcoin has no chain id: the check is that the API answers with a tip.
    pub async fn preflight(&self) -> Result<Preflight, ChainError> {
        Ok(Preflight::head_only(self.head().await?))
    }

    /// One answer per query, in order: the outputs of each transaction paying the query's
    /// address (all of them, by output index; `log_index` narrows to one). Each distinct
    /// transaction is fetched once, and each distinct block's status once.
    pub async fn lookup(
        &self,
        head: &ChainHead,
        queries: &[TransferQuery],
    ) -> Result<Vec<Lookup>, ChainError> {
        let mut txids: Vec<String> = queries
            .iter()
            .filter(|q| !matches!(q.asset, Some(Asset::Token(_))))
            .map(|q| q.tx_hash.as_str().to_string())
            .collect();
        txids.sort();
        txids.dedup();
        // Owned inputs: the stream's futures borrow nothing but `self` (keeps them Send).
        let fetched: HashMap<String, Result<Tx, Lookup>> = futures::stream::iter(txids)
            .map(|id| async move { self.fetch(&id).await.map(|t| (id, t)) })
            .buffered(IN_FLIGHT)
            .try_collect()
            .await?;
        let mut blocks: Vec<String> = fetched
            .values()
            .filter_map(|t| t.as_ref().ok()?.status.block_hash.clone())
            .collect();
        blocks.sort();
        blocks.dedup();
        let best: HashMap<String, bool> = futures::stream::iter(blocks)
            .map(|h| async move { self.in_best_chain(&h).await.map(|b| (h, b)) })
            .buffered(IN_FLIGHT)
            .try_collect()
            .await?;
        Ok(queries
            .iter()
            .map(|q| self.resolve(head, q, &fetched, &best))
            .collect())
    }

    /// `GET /tx/:txid`: the transaction, or the answer when there is none to read.
    async fn fetch(&self, txid: &str) -> Result<Result<Tx, Lookup>, ChainError> {
        let path = format!("/tx/{txid}");
        Ok(match self.rest.get("/tx/:txid", &path).await? {
            None => Err(Lookup::NotFound),
            Some(Body::Text(t)) => Err(malformed("transaction", &format!("{t:.60}"))),
            Some(Body::Json(v)) => {
                Tx::deserialize(v).map_err(|e| malformed("transaction", &e.to_string()))
            }
        })
    }

    fn resolve(
        &self,
        head: &ChainHead,
        q: &TransferQuery,
        fetched: &HashMap<String, Result<Tx, Lookup>>,
        best: &HashMap<String, bool>,
    ) -> Lookup {
        if matches!(q.asset, Some(Asset::Token(_))) {
            return Lookup::NoTransfer("Bitcoin has no tokens".into());
        }
        let tx = match fetched.get(q.tx_hash.as_str()) {
            Some(Ok(tx)) => tx,
            Some(Err(answer)) => return answer.clone(),
            None => return Lookup::NotFound,
        };
        // In the mempool only, or in a block no longer in the best chain: not (or no longer)
        // a payment; seen again next run.
        let (true, Some(height), Some(hash)) = (
            tx.status.confirmed,
            tx.status.block_height,
            &tx.status.block_hash,
        ) else {
            return Lookup::NotFound;
        };
        if !best.get(hash).copied().unwrap_or(false) {
            return Lookup::NotFound;
        }
        let out = self.outputs(head, q, tx, height, hash);
        if out.is_empty() {
            let to =
                q.to.as_ref()
                    .map_or_else(|| "the address".to_string(), Address::to_string);
            return Lookup::NoTransfer(format!("no output of the transaction pays {to}"));
        }
        Lookup::Found(out)
    }

    /// The outputs of `tx` (in block `height`/`hash`) that the query accepts: paying `q.to`
    /// (any address when `None`), at `q.log_index` when set, of a value above zero.
    fn outputs(
        &self,
        head: &ChainHead,
        q: &TransferQuery,
        tx: &Tx,
        height: u64,
        hash: &str,
    ) -> Vec<ChainTransfer> {
        let kind = self.settings.kind;
        let mut out = Vec::new();
        for (vout, o) in tx.vout.iter().enumerate() {
            let Some(to) = o
                .scriptpubkey_address
                .as_deref()
                .and_then(|a| kind.address("address", a).ok())
            else {
                continue; // OP_RETURN, bare script, or another network's spelling
            };
            let index = vout as i64;
            if q.to.as_ref().is_some_and(|want| *want != to)
                || q.log_index.is_some_and(|want| want != index)
                || o.value == 0
            {
                continue;
            }
            let block = BlockRef {
                number: height,
                hash: hash.to_lowercase(),
            };
            let mut t = transfer(&self.settings.name, head, q, index, to, o.value, block);
            t.block_time = tx
                .status
                .block_time
                .and_then(|s| i64::try_from(s).ok())
                .and_then(|s| jiff::Timestamp::from_second(s).ok());
            out.push(t);
        }
        out
    }

    /// The deposit scan (docs/configuration.md, "Bitcoin"): every output paying one of
    /// `recipients` in a confirmed transaction whose block time is at or after `since`, at or
    /// below the head. Each address's history is read newest first and stops at the first page
    /// that reaches past the window, so the cost follows the window, not the address's history.
    pub async fn payments_to(
        &self,
        head: &ChainHead,
        recipients: &[Address],
        since: jiff::Timestamp,
    ) -> Result<Vec<ChainTransfer>, ChainError> {
        let since = u64::try_from(since.as_second()).unwrap_or(0);
        let per: Vec<Vec<ChainTransfer>> = futures::stream::iter(recipients.to_vec())
            .map(|to| async move { self.address_payments(head, &to, since).await })
            .buffered(IN_FLIGHT)
            .try_collect()
            .await?;
        Ok(per.into_iter().flatten().collect())
    }

    /// One address's payments in the window: its confirmed history down to the first page
    /// that reaches past the window (with `TIME_SKEW` to spare: block times are not
    /// monotonic), the outputs paying it.
    async fn address_payments(
        &self,
        head: &ChainHead,
        to: &Address,
        since: u64,
    ) -> Result<Vec<ChainTransfer>, ChainError> {
        let past = |t: &Tx| {
            t.status
                .block_time
                .is_some_and(|t| t.saturating_add(TIME_SKEW) < since)
        };
        let mut out = Vec::new();
        for tx in self.history(to, past).await? {
            out.extend(self.outputs_to(head, &tx, to, since)?);
        }
        Ok(out)
    }

    /// An address's confirmed history, newest first, page by page until a page is empty or
    /// its oldest entry is `past` what the caller needs. A history that repeats itself or runs
    /// past `MAX_PAGES` is an error, never an endless loop.
    pub(super) async fn history(
        &self,
        to: &Address,
        past: impl Fn(&Tx) -> bool,
    ) -> Result<Vec<Tx>, ChainError> {
        let what = "/address/:address/txs";
        let fail = |reason: String| ChainError::Rpc {
            chain: self.settings.name.clone(),
            what,
            reason,
        };
        let mut out = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        let mut path = format!("/address/{to}/txs");
        for _ in 0..MAX_PAGES {
            let page: Vec<Tx> = match self.rest.get(what, &path).await? {
                // Esplora answers `[]` for an address it has never seen: a 404 is another
                // server (a wrong esplora_url).
                None => {
                    return Err(fail(format!(
                        "HTTP 404 for the history of {to} (is esplora_url an Esplora API?)"
                    )))
                }
                Some(Body::Json(v)) => Vec::<Tx>::deserialize(v)
                    .map_err(|e| fail(format!("malformed history for {to}: {e}")))?,
                Some(Body::Text(t)) => {
                    return Err(fail(format!("malformed history for {to}: {t:.60}")))
                }
            };
            let confirmed: Vec<Tx> = page.into_iter().filter(|t| t.status.confirmed).collect();
            let Some(oldest) = confirmed.last() else {
                return Ok(out);
            };
            let (passed, last) = (past(oldest), oldest.txid.to_lowercase());
            let mut new = 0;
            for tx in confirmed {
                if seen.insert(tx.txid.to_lowercase()) {
                    new += 1;
                    out.push(tx);
                }
            }
            if passed {
                return Ok(out);
            }
            if new == 0 || self.settings.kind.tx_hash(&last).is_err() {
                return Err(fail(format!(
                    "the history of {to} does not page on from {last:.64}"
                )));
            }
            path = format!("/address/{to}/txs/chain/{last}");
        }
        Err(fail(format!(
            "the history of {to} in the window is longer than {MAX_PAGES} pages"
        )))
    }

    /// The outputs of a confirmed history entry that pay `to`, when its block is in the
    /// window and at or below the head.
    fn outputs_to(
        &self,
        head: &ChainHead,
        tx: &Tx,
        to: &Address,
        since: u64,
    ) -> Result<Vec<ChainTransfer>, ChainError> {
        let (Some(height), Some(hash)) = (tx.status.block_height, &tx.status.block_hash) else {
            return Ok(Vec::new());
        };
        if height > head.number || tx.status.block_time.is_some_and(|t| t < since) {
            return Ok(Vec::new());
        }
        let kind = self.settings.kind;
        let txid = kind.tx_hash(&tx.txid).map_err(|e| ChainError::Rpc {
            chain: self.settings.name.clone(),
            what: "/address/:address/txs",
            reason: format!("malformed txid in the history of {to}: {e}"),
        })?;
        let q = TransferQuery {
            tx_hash: txid,
            asset: Some(Asset::Native),
            to: Some(to.clone()),
            log_index: None,
        };
        Ok(self.outputs(head, &q, tx, height, hash))
    }

    /// `GET /block/:hash/status`: whether the block is still in the best chain.
    async fn in_best_chain(&self, hash: &str) -> Result<bool, ChainError> {
        let path = format!("/block/{hash}/status");
        Ok(match self.rest.get("/block/:hash/status", &path).await? {
            Some(Body::Json(v)) => BlockStatus::deserialize(v).is_ok_and(|s| s.in_best_chain),
            _ => false,
        })
    }
}

fn transfer(
    chain: &str,
    head: &ChainHead,
    q: &TransferQuery,
    vout: i64,
    to: Address,
    sats: u64,
    block: BlockRef,
) -> ChainTransfer {
    ChainTransfer {
        key: PaymentKey {
            chain: chain.to_string(),
            tx_hash: q.tx_hash.clone(),
            log_index: vout,
        },
        to,
        asset: Asset::Native,
        amount: U256::from(sats),
        state: head.state_of(block.number),
        block,
        block_time: None,
    }
}

fn malformed(what: &str, why: &str) -> Lookup {
    Lookup::NoTransfer(format!("malformed {what} from Esplora: {why}"))
}
