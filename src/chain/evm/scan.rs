//! The deposit scan: ERC-20 `Transfer` logs to the deposit addresses of unpaid orders,
//! read with `eth_getLogs` over the blocks of a run's window. It finds payments no provider
//! reported (Qvard never lists underpaid ones). Native-coin payments emit no log and are not
//! found this way.

use alloy::primitives::{Address as EvmAddress, Bytes, B256, U64};
use serde::Deserialize;
use serde_json::{json, Value};

use super::decode::{block_time, domain_address, TRANSFER_TOPIC};
use crate::chain::ChainError;
use crate::domain::{Address, Asset, BlockRef, ChainHead, ChainTransfer, PaymentKey, TxHash, U256};

/// Addresses (tokens, recipients) per `eth_getLogs` filter.
pub const MAX_FILTER_ADDRESSES: usize = 100;

#[derive(Debug, Deserialize)]
struct BlockTime {
    timestamp: U64,
}

/// A log as `eth_getLogs` answers it (the deposit scan's and the balance check's).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(in crate::chain) struct RawLog {
    pub(in crate::chain) address: EvmAddress,
    #[serde(default)]
    pub(in crate::chain) topics: Vec<B256>,
    pub(in crate::chain) data: Bytes,
    pub(in crate::chain) block_number: Option<U64>,
    pub(in crate::chain) block_hash: Option<B256>,
    pub(in crate::chain) transaction_hash: Option<B256>,
    pub(in crate::chain) log_index: Option<U64>,
    /// The block's time, where the node sends it (`decode::block_time`).
    pub(in crate::chain) block_timestamp: Option<U64>,
    #[serde(default)]
    pub(in crate::chain) removed: bool,
}

impl super::EvmClient {
    /// The first block whose timestamp is at or after `since` (binary search over block
    /// timestamps, about log2(head) requests); `head + 1` when there is none.
    pub async fn first_block_since(
        &self,
        since: jiff::Timestamp,
        head: u64,
    ) -> Result<u64, ChainError> {
        let want = u64::try_from(since.as_second()).unwrap_or(0);
        if self.block_time(head).await? < want {
            return Ok(head + 1);
        }
        let (mut lo, mut hi) = (0u64, head);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.block_time(mid).await? < want {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// The time of each of `blocks` (JSON-RPC batches of `batch_size`, `BATCHES_IN_FLIGHT` at
    /// once, as receipts); a block the node does not return is absent.
    pub async fn block_times(
        &self,
        blocks: &[u64],
    ) -> Result<std::collections::HashMap<u64, jiff::Timestamp>, ChainError> {
        use futures::{StreamExt as _, TryStreamExt as _};
        // Owned chunks: the stream's futures borrow nothing but `self` (keeps them Send).
        let chunks: Vec<Vec<u64>> = blocks
            .chunks(self.settings.batch_size.max(1))
            .map(<[u64]>::to_vec)
            .collect();
        let got: Vec<Vec<(u64, jiff::Timestamp)>> = futures::stream::iter(chunks)
            .map(|chunk| self.block_times_batch(chunk))
            .buffered(super::BATCHES_IN_FLIGHT)
            .try_collect()
            .await?;
        Ok(got.into_iter().flatten().collect())
    }

    async fn block_times_batch(
        &self,
        chunk: Vec<u64>,
    ) -> Result<Vec<(u64, jiff::Timestamp)>, ChainError> {
        let calls: Vec<(&'static str, Value)> = chunk
            .iter()
            .map(|n| ("eth_getBlockByNumber", json!([format!("{n:#x}"), false])))
            .collect();
        let values = self.rpc.batch("block times", &calls).await?;
        let mut out = Vec::with_capacity(chunk.len());
        for (n, raw) in chunk.into_iter().zip(values) {
            let b: Option<BlockTime> = serde_json::from_str(raw.get()).ok().flatten();
            let t = b.and_then(|b| {
                let secs = i64::try_from(b.timestamp.to::<u64>()).ok()?;
                jiff::Timestamp::from_second(secs).ok()
            });
            if let Some(t) = t {
                out.push((n, t));
            }
        }
        Ok(out)
    }

    async fn block_time(&self, n: u64) -> Result<u64, ChainError> {
        let b: Option<BlockTime> = self
            .rpc
            .call(
                "block timestamp",
                "eth_getBlockByNumber",
                (format!("{n:#x}"), false),
            )
            .await?;
        Ok(b.map_or(0, |b| b.timestamp.to()))
    }

    /// Three-topic `Transfer` logs emitted by any of `tokens` to any of `recipients`, in
    /// blocks `from..=head`, in requests of `log_range` blocks; each a transfer whose state
    /// follows from `head`. Malformed or removed logs are skipped.
    #[tracing::instrument(skip_all, fields(chain = %self.settings.name, tokens = tokens.len(), recipients = recipients.len()))]
    pub async fn transfers_to(
        &self,
        head: &ChainHead,
        tokens: &[Address],
        recipients: &[Address],
        from: u64,
    ) -> Result<Vec<ChainTransfer>, ChainError> {
        let mut out = Vec::new();
        if tokens.is_empty() || recipients.is_empty() || from > head.number {
            return Ok(out);
        }
        let range = self.settings.log_range.max(1);
        let topics: Vec<String> = recipients
            .iter()
            .map(|a| format!("0x000000000000000000000000{}", &a.as_str()[2..]))
            .collect();
        let addresses: Vec<&str> = tokens.iter().map(Address::as_str).collect();
        let mut start = from;
        while start <= head.number {
            let end = start.saturating_add(range - 1).min(head.number);
            let filter = json!({
                "fromBlock": format!("{start:#x}"),
                "toBlock": format!("{end:#x}"),
                "address": addresses,
                "topics": [format!("{TRANSFER_TOPIC:#x}"), Value::Null, topics],
            });
            let logs: Vec<Value> = self.rpc.call("logs", "eth_getLogs", (filter,)).await?;
            out.extend(logs.into_iter().filter_map(|l| self.transfer(head, l)));
            start = end + 1;
        }
        out.sort_by(|a, b| {
            (a.block.number, a.key.log_index).cmp(&(b.block.number, b.key.log_index))
        });
        out.dedup_by(|a, b| a.key == b.key);
        Ok(out)
    }

    fn transfer(&self, head: &ChainHead, raw: Value) -> Option<ChainTransfer> {
        let log = RawLog::deserialize(raw).ok()?;
        if log.removed || log.topics.len() != 3 || log.topics[0] != TRANSFER_TOPIC {
            return None;
        }
        let word = log.topics[2];
        if word[..12].iter().any(|b| *b != 0) || log.data.len() != 32 {
            return None;
        }
        let number: u64 = log.block_number?.to();
        let tx_hash = TxHash::parse(&format!("{:#x}", log.transaction_hash?)).ok()?;
        Some(ChainTransfer {
            key: PaymentKey {
                chain: self.settings.name.clone(),
                tx_hash,
                log_index: i64::try_from(log.log_index?.to::<u64>()).ok()?,
            },
            to: domain_address(EvmAddress::from_slice(&word[12..])),
            asset: Asset::Token(domain_address(log.address)),
            amount: U256::from_be_slice(&log.data),
            block: BlockRef {
                number,
                hash: format!("{:#x}", log.block_hash?),
            },
            state: head.state_of(number),
            block_time: block_time(log.block_timestamp),
        })
    }
}
