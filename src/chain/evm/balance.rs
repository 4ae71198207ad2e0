//! What the balance check reads from an EVM node (docs/operations.md, "Balances"): balances at
//! a block, in JSON-RPC batches (`eth_getBalance` for the native coin, `balanceOf` by
//! `eth_call` for a token); token `Transfer` logs into and out of the deposit addresses; and,
//! for the native coin, which emits no log, the blocks where the address sent a transaction
//! (bisection over its nonce) and where its balance changed between them (bisection over the
//! balance, about log2 of the blocks per change), and the top-level transactions of those
//! blocks.

use alloy::primitives::{Address as EvmAddress, B256};
use serde::Deserialize;
use serde_json::{json, Value};

use super::decode::{domain_address, TRANSFER_TOPIC};
use super::scan::RawLog;
use crate::chain::ChainError;
use crate::domain::{Address, Asset, BlockRef, Flow, PaymentKey, TxHash, U256};

/// `balanceOf(address)`'s selector.
const BALANCE_OF: &str = "70a08231";

/// A 20-byte address as a 32-byte word, hex, without `0x`.
fn word(a: &Address) -> String {
    format!("000000000000000000000000{}", &a.as_str()[2..])
}

/// A quantity or a 32-byte word in hex (`0x…`), as a U256.
fn hex_u256(v: &str) -> Option<U256> {
    let digits = v.strip_prefix("0x")?;
    if digits.is_empty() {
        return Some(U256::ZERO);
    }
    U256::from_str_radix(digits, 16).ok()
}

/// One balance read per holding at `tag`: `eth_getBalance`, or `balanceOf` by `eth_call`.
fn balance_calls(chunk: &[(Address, Asset)], tag: &str) -> Vec<(&'static str, Value)> {
    chunk
        .iter()
        .map(|(address, asset)| match asset {
            Asset::Native => ("eth_getBalance", json!([address.as_str(), tag])),
            Asset::Token(token) => (
                "eth_call",
                json!([{"to": token.as_str(),
                        "data": format!("0x{BALANCE_OF}{}", word(address))}, tag]),
            ),
        })
        .collect()
}

#[derive(Debug, Deserialize)]
struct RawBlock {
    hash: B256,
    #[serde(default)]
    transactions: Vec<RawTx>,
}

#[derive(Debug, Deserialize)]
struct RawTx {
    hash: B256,
    from: EvmAddress,
    to: Option<EvmAddress>,
    value: alloy::primitives::U256,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawReceipt {
    gas_used: alloy::primitives::U256,
    effective_gas_price: Option<alloy::primitives::U256>,
}

impl super::EvmClient {
    fn failed(&self, what: &'static str, reason: String) -> ChainError {
        ChainError::Rpc {
            chain: self.settings.name.clone(),
            what,
            reason,
        }
    }

    /// The balance of each `(address, asset)` at `block`, in batches of `rpc_batch_size`. A
    /// node that cannot answer at that block (a pruned one) fails the read, naming the block.
    pub async fn balances_at(
        &self,
        block: u64,
        holdings: &[(Address, Asset)],
    ) -> Result<Vec<U256>, ChainError> {
        let tag = format!("{block:#x}");
        let mut out = Vec::with_capacity(holdings.len());
        for chunk in holdings.chunks(self.settings.batch_size.max(1)) {
            let calls = balance_calls(chunk, &tag);
            let replies = self.rpc.batch("balances", &calls).await.map_err(|e| {
                // The node's own words, without a second "chain …: balances:" before them.
                let e = match e {
                    ChainError::Rpc { reason, .. } => reason,
                    other => other.to_string(),
                };
                self.failed(
                    "balances",
                    format!("cannot read balances at block {block} (the check needs the state of past blocks: an archive node, or one that keeps the blocks since the last check): {e}"),
                )
            })?;
            for ((address, asset), raw) in chunk.iter().zip(replies) {
                out.push(self.quantity(raw.get(), address, asset, &block.to_string())?);
            }
        }
        Ok(out)
    }

    /// The balance of each `(address, asset)` at the node's head, for a node that answers
    /// only at `latest` (java-tron): each batch of `rpc_batch_size` is bracketed by
    /// `eth_blockNumber`, and read again (up to three times) when a block came between the
    /// two, so each balance comes with the block it was read at.
    pub async fn balances_at_head(
        &self,
        holdings: &[(Address, Asset)],
    ) -> Result<Vec<(u64, U256)>, ChainError> {
        const ATTEMPTS: usize = 3;
        let mut out = Vec::with_capacity(holdings.len());
        // Room in each batch for the two `eth_blockNumber` around it.
        let size = self.settings.batch_size.saturating_sub(2).max(1);
        for chunk in holdings.chunks(size) {
            let mut calls = vec![("eth_blockNumber", json!([]))];
            calls.extend(balance_calls(chunk, "latest"));
            calls.push(("eth_blockNumber", json!([])));
            let mut read = None;
            for _ in 0..ATTEMPTS {
                let replies = self.rpc.batch("balances", &calls).await?;
                let number = |raw: &serde_json::value::RawValue| {
                    let text: String = serde_json::from_str(raw.get()).unwrap_or_default();
                    hex_u256(&text).and_then(|n| u64::try_from(n).ok())
                };
                let (first, last) = (number(&replies[0]), number(&replies[replies.len() - 1]));
                let head = first.ok_or_else(|| {
                    self.failed(
                        "balances",
                        format!("eth_blockNumber is not a number: {}", replies[0].get()),
                    )
                })?;
                if first == last {
                    read = Some((head, replies));
                    break;
                }
            }
            let Some((head, replies)) = read else {
                return Err(self.failed(
                    "balances",
                    format!("the head moved during every one of {ATTEMPTS} balance reads"),
                ));
            };
            for ((address, asset), raw) in chunk.iter().zip(&replies[1..]) {
                out.push((head, self.quantity(raw.get(), address, asset, "latest")?));
            }
        }
        Ok(out)
    }

    fn quantity(
        &self,
        raw: &str,
        address: &Address,
        asset: &Asset,
        at: &str,
    ) -> Result<U256, ChainError> {
        let text: String = serde_json::from_str(raw).unwrap_or_default();
        hex_u256(&text).ok_or_else(|| {
            self.failed(
                "balances",
                format!("the balance of {address} ({asset}) at block {at} is not a number: {raw}"),
            )
        })
    }

    /// `Transfer` logs of `tokens` from or to any of `addresses` in blocks `from..=to`: two
    /// filters (sender, recipient) per `log_range` blocks and 100 addresses. Removed or
    /// malformed logs are skipped.
    pub async fn token_flows(
        &self,
        tokens: &[Address],
        addresses: &[Address],
        from: u64,
        to: u64,
    ) -> Result<Vec<Flow>, ChainError> {
        let mut out = Vec::new();
        if tokens.is_empty() || addresses.is_empty() || from > to {
            return Ok(out);
        }
        let range = self.settings.log_range.max(1);
        let contracts: Vec<&str> = tokens.iter().map(Address::as_str).collect();
        for chunk in addresses.chunks(crate::chain::MAX_FILTER_ADDRESSES) {
            let words: Vec<String> = chunk.iter().map(|a| format!("0x{}", word(a))).collect();
            let mut start = from;
            while start <= to {
                let end = start.saturating_add(range - 1).min(to);
                for topics in [
                    json!([format!("{TRANSFER_TOPIC:#x}"), words, Value::Null]),
                    json!([format!("{TRANSFER_TOPIC:#x}"), Value::Null, words]),
                ] {
                    let filter = json!({
                        "fromBlock": format!("{start:#x}"),
                        "toBlock": format!("{end:#x}"),
                        "address": contracts,
                        "topics": topics,
                    });
                    let logs: Vec<Value> = self.rpc.call("logs", "eth_getLogs", (filter,)).await?;
                    out.extend(logs.into_iter().filter_map(|l| self.flow_of_log(l)));
                }
                start = end + 1;
            }
        }
        out.sort_by(|a, b| {
            (a.block.number, a.key.log_index).cmp(&(b.block.number, b.key.log_index))
        });
        out.dedup_by(|a, b| a.key == b.key);
        Ok(out)
    }

    fn flow_of_log(&self, raw: Value) -> Option<Flow> {
        let log = RawLog::deserialize(raw).ok()?;
        if log.removed || log.topics.len() != 3 || log.topics[0] != TRANSFER_TOPIC {
            return None;
        }
        let party = |w: &B256| {
            (w[..12].iter().all(|b| *b == 0))
                .then(|| domain_address(EvmAddress::from_slice(&w[12..])))
        };
        if log.data.len() != 32 {
            return None;
        }
        Some(Flow {
            key: PaymentKey {
                chain: self.settings.name.clone(),
                tx_hash: TxHash::parse(&format!("{:#x}", log.transaction_hash?)).ok()?,
                log_index: i64::try_from(log.log_index?.to::<u64>()).ok()?,
            },
            from: party(&log.topics[1])?.to_string(),
            to: party(&log.topics[2])?.to_string(),
            asset: Asset::Token(domain_address(log.address)),
            amount: U256::from_be_slice(&log.data),
            fee: U256::ZERO,
            block: BlockRef {
                number: log.block_number?.to(),
                hash: format!("{:#x}", log.block_hash?),
            },
        })
    }

    /// The blocks in `(lo, hi]` where `address`'s native balance changed, found by bisection
    /// from the balances at `lo` and `hi`: each `(block, before, after)`. About log2(hi − lo)
    /// balance reads per change; a change undone within a range (in and out alike between
    /// two reads) is not seen, and its block's transactions are then not read.
    pub async fn native_changes(
        &self,
        address: &Address,
        lo: (u64, U256),
        hi: (u64, U256),
    ) -> Result<Vec<(u64, U256, U256)>, ChainError> {
        let mut out = Vec::new();
        let mut todo = vec![(lo, hi)];
        let holding = [(address.clone(), Asset::Native)];
        while let Some(((a, va), (b, vb))) = todo.pop() {
            if va == vb || b <= a {
                continue;
            }
            if b == a + 1 {
                out.push((b, va, vb));
                continue;
            }
            let mid = a + (b - a) / 2;
            let vm = self.balances_at(mid, &holding).await?[0];
            todo.push(((mid, vm), (b, vb)));
            todo.push(((a, va), (mid, vm)));
        }
        out.sort_by_key(|c| c.0);
        Ok(out)
    }

    /// The nonce (transactions sent) of each `(block, address)`, in batches of
    /// `rpc_batch_size`; a node without the state of that block fails the read by name.
    pub async fn nonces_at(&self, reads: &[(u64, Address)]) -> Result<Vec<u64>, ChainError> {
        let mut out = Vec::with_capacity(reads.len());
        for chunk in reads.chunks(self.settings.batch_size.max(1)) {
            let calls: Vec<(&'static str, Value)> = chunk
                .iter()
                .map(|(b, a)| {
                    (
                        "eth_getTransactionCount",
                        json!([a.as_str(), format!("{b:#x}")]),
                    )
                })
                .collect();
            let replies = self.rpc.batch("nonces", &calls).await.map_err(|e| {
                let blocks: Vec<u64> = chunk.iter().map(|r| r.0).collect();
                self.failed(
                    "nonces",
                    format!("cannot read nonces at blocks {blocks:?} (the check needs the state of past blocks): {e}"),
                )
            })?;
            for ((block, address), raw) in chunk.iter().zip(replies) {
                let n = self.quantity(raw.get(), address, &Asset::Native, &block.to_string())?;
                out.push(u64::try_from(n).map_err(|_| {
                    self.failed("nonces", format!("the nonce of {address} is out of range"))
                })?);
            }
        }
        Ok(out)
    }

    /// The blocks in `(lo, hi]` where `address` sent transactions (its nonce grew), found by
    /// bisection from its nonces at `lo` and `hi`: about log2(hi − lo) reads per block. A
    /// nonce only grows, so none is missed: a payment in and a drain out between two checks,
    /// which leave the balance where it was, are found by the drain's block.
    pub async fn nonce_changes(
        &self,
        address: &Address,
        lo: (u64, u64),
        hi: (u64, u64),
    ) -> Result<Vec<u64>, ChainError> {
        let mut out = Vec::new();
        let mut todo = vec![(lo, hi)];
        while let Some(((a, na), (b, nb))) = todo.pop() {
            if na == nb || b <= a {
                continue;
            }
            if b == a + 1 {
                out.push(b);
                continue;
            }
            let mid = a + (b - a) / 2;
            let nm = self.nonces_at(&[(mid, address.clone())]).await?[0];
            todo.push(((mid, nm), (b, nb)));
            todo.push(((a, na), (mid, nm)));
        }
        out.sort_unstable();
        Ok(out)
    }

    /// The top-level native transfers into and out of `address` in `block` (the transaction's
    /// `value`; for one it sent, the fee it paid too, from the receipt; one it sent to itself
    /// or that created a contract is there for its fee). Transfers made inside
    /// a contract call have no transaction of their own and are not among them.
    pub async fn native_flows(
        &self,
        address: &Address,
        block: u64,
    ) -> Result<Vec<Flow>, ChainError> {
        let raw: Option<RawBlock> = self
            .rpc
            .call(
                "block",
                "eth_getBlockByNumber",
                (format!("{block:#x}"), true),
            )
            .await?;
        let raw = raw.ok_or_else(|| self.failed("block", format!("block {block} is not known")))?;
        let mine: Vec<&RawTx> = raw
            .transactions
            .iter()
            .filter(|t| {
                let to = t.to.map(domain_address);
                domain_address(t.from) == *address || to.as_ref() == Some(address)
            })
            .collect();
        let sent: Vec<(&'static str, Value)> = mine
            .iter()
            .filter(|t| domain_address(t.from) == *address)
            .map(|t| {
                (
                    "eth_getTransactionReceipt",
                    json!([format!("{:#x}", t.hash)]),
                )
            })
            .collect();
        let mut fees = std::collections::HashMap::new();
        if !sent.is_empty() {
            let receipts = self.rpc.batch("receipts", &sent).await?;
            for ((_, params), r) in sent.iter().zip(receipts) {
                let r: RawReceipt = serde_json::from_str(r.get())
                    .map_err(|e| self.failed("receipts", format!("block {block}: {e}")))?;
                let fee = r
                    .gas_used
                    .saturating_mul(r.effective_gas_price.unwrap_or_default());
                fees.insert(params[0].as_str().unwrap_or_default().to_string(), fee);
            }
        }
        let hash = format!("{:#x}", raw.hash);
        Ok(mine
            .into_iter()
            .filter_map(|t| {
                let tx = format!("{:#x}", t.hash);
                Some(Flow {
                    key: PaymentKey {
                        chain: self.settings.name.clone(),
                        tx_hash: TxHash::parse(&tx).ok()?,
                        log_index: -1,
                    },
                    from: domain_address(t.from).to_string(),
                    // A contract creation has no recipient: only its value and fee leave.
                    to: t
                        .to
                        .map(domain_address)
                        .map(|a| a.to_string())
                        .unwrap_or_default(),
                    asset: Asset::Native,
                    amount: U256::from_limbs(t.value.into_limbs()),
                    fee: fees
                        .get(&tx)
                        .map(|f| U256::from_limbs(f.into_limbs()))
                        .unwrap_or_default(),
                    block: BlockRef {
                        number: block,
                        hash: hash.clone(),
                    },
                })
            })
            .collect())
    }
}
