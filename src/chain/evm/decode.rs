//! Pure decoding of receipts and transactions (raw JSON from the node) into `Lookup`s.
//! Only the fields payrecon needs are read, so receipts of chain-specific transaction types
//! decode too; anything malformed becomes `NoTransfer` with the reason, never a panic.

use alloy::primitives::{b256, Address as EvmAddress, Bytes, B256, U256, U64};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::chain::{Lookup, TransferQuery};
use crate::domain::{Address, Asset, BlockRef, ChainHead, ChainTransfer, PaymentKey};

/// `keccak256("Transfer(address,address,uint256)")`.
pub const TRANSFER_TOPIC: B256 =
    b256!("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Receipt {
    status: Option<U64>,
    block_number: Option<U64>,
    block_hash: Option<B256>,
    #[serde(default)]
    logs: Vec<Log>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Log {
    address: EvmAddress,
    #[serde(default)]
    topics: Vec<B256>,
    data: Bytes,
    log_index: Option<U64>,
    /// The block's time (execution-apis #639: geth 1.16+, reth, Erigon, Besu, anvil); absent
    /// or zero on other nodes, whose payments' times are read from the headers.
    block_timestamp: Option<U64>,
}

#[derive(Debug, Deserialize)]
struct Transaction {
    to: Option<EvmAddress>,
    value: U256,
}

/// Where the transaction sits, for every transfer it carries.
struct Place<'a> {
    chain: &'a str,
    head: &'a ChainHead,
    block: BlockRef,
    /// From the receipt's logs, where the node puts it there.
    time: Option<jiff::Timestamp>,
}

/// Resolves one query from the node's receipt (`null` when unknown) and, for native-coin
/// queries, the transaction.
pub(crate) fn resolve(
    chain: &str,
    head: &ChainHead,
    query: &TransferQuery,
    receipt: Option<&RawValue>,
    tx: Option<&RawValue>,
) -> Lookup {
    let Some(receipt) = receipt.filter(|r| !is_null(r)) else {
        return Lookup::NotFound;
    };
    let receipt: Receipt = match serde_json::from_str(receipt.get()) {
        Ok(r) => r,
        Err(e) => return malformed("receipt", e),
    };
    let (Some(number), Some(hash)) = (receipt.block_number, receipt.block_hash) else {
        // A pending receipt (some nodes serve them): not in a block yet.
        return Lookup::NotFound;
    };
    match receipt.status.map(|s| s.to::<u64>()) {
        Some(1) => {}
        Some(0) => return Lookup::Reverted,
        Some(other) => return no_transfer(format!("receipt status is {other}, not 0 or 1")),
        None => return no_transfer("receipt has no status (pre-Byzantium)".into()),
    }
    let Ok(number) = u64::try_from(number) else {
        return no_transfer("block number does not fit 64 bits".into());
    };
    let place = Place {
        chain,
        head,
        block: BlockRef {
            number,
            hash: format!("{hash:#x}"),
        },
        time: receipt
            .logs
            .iter()
            .find_map(|l| block_time(l.block_timestamp)),
    };
    match (&query.asset, query.log_index) {
        (Some(Asset::Native), _) | (None, Some(-1)) => resolve_native(&place, query, tx),
        (Some(Asset::Token(contract)), _) => {
            resolve_token(&place, query, Some(contract), &receipt.logs)
        }
        (None, _) => resolve_token(&place, query, None, &receipt.logs),
    }
}

fn resolve_native(place: &Place, query: &TransferQuery, tx: Option<&RawValue>) -> Lookup {
    let tx = match tx.filter(|t| !is_null(t)) {
        None => return no_transfer("the node has the receipt but not the transaction".into()),
        Some(v) => match serde_json::from_str::<Transaction>(v.get()) {
            Ok(t) => t,
            Err(e) => return malformed("transaction", e),
        },
    };
    let Some(to) = tx.to else {
        return no_transfer("the transaction creates a contract".into());
    };
    let to = domain_address(to);
    if let Some(want) = &query.to {
        if *want != to {
            return no_transfer(format!("the transaction pays {to}, not {want}"));
        }
    }
    if tx.value.is_zero() {
        return no_transfer("the transaction carries no native value".into());
    }
    if query.log_index.is_some_and(|i| i != -1) {
        return no_transfer("a native transfer has log index -1".into());
    }
    Lookup::Found(vec![transfer(
        place,
        query,
        -1,
        to,
        Asset::Native,
        tx.value,
    )])
}

/// Transfer logs of `contract` (or of any contract, when the record named none).
fn resolve_token(
    place: &Place,
    query: &TransferQuery,
    contract: Option<&Address>,
    logs: &[Log],
) -> Lookup {
    let want_contract = match wanted_contract(contract) {
        Ok(w) => w,
        Err(no) => return no,
    };
    let contract = contract.map_or_else(|| "any token".to_string(), |c| c.to_string());
    let mut scan = Scan::default();
    for log in logs {
        if want_contract.is_some_and(|w| log.address != w)
            || log.topics.first() != Some(&TRANSFER_TOPIC)
        {
            continue;
        }
        read_log(&mut scan, place, query, &contract, log);
    }
    if !scan.found.is_empty() {
        scan.found.sort_by_key(|t| t.key.log_index);
        return Lookup::Found(scan.found);
    }
    let to = query
        .to
        .as_ref()
        .map_or_else(|| "anyone".to_string(), |a| a.to_string());
    let at = query
        .log_index
        .map_or_else(String::new, |i| format!(" at log index {i}"));
    no_transfer(match (scan.problem, scan.erc721) {
        (Some(p), _) => p,
        (None, true) => format!("receipt has only an ERC-721 transfer from {contract} (4 topics)"),
        (None, false) => format!("no Transfer from {contract} to {to}{at} in the receipt"),
    })
}

/// The contract whose logs count (`None`: any), or no transfer: the named one is not an
/// address.
fn wanted_contract(contract: Option<&Address>) -> Result<Option<EvmAddress>, Lookup> {
    match contract.map(|c| c.as_str().parse::<EvmAddress>()) {
        Some(Ok(a)) => Ok(Some(a)),
        Some(Err(_)) => Err(no_transfer(format!(
            "token contract {} is not an address",
            contract.map(|c| c.to_string()).unwrap_or_default()
        ))),
        None => Ok(None),
    }
}

/// What the Transfer logs of a receipt gave a token query.
#[derive(Default)]
struct Scan {
    found: Vec<ChainTransfer>,
    erc721: bool,
    problem: Option<String>,
}

/// Reads one Transfer log of the wanted contract: the transfer, an ERC-721 one, or a problem.
fn read_log(scan: &mut Scan, place: &Place, query: &TransferQuery, contract: &str, log: &Log) {
    match log.topics.len() {
        3 => {}
        4 => {
            scan.erc721 = true;
            return;
        }
        n => {
            scan.problem = Some(format!("a Transfer log from {contract} has {n} topics"));
            return;
        }
    }
    let word = log.topics[2];
    if word[..12].iter().any(|b| *b != 0) {
        scan.problem = Some(format!(
            "a Transfer log from {contract} has a malformed recipient topic"
        ));
        return;
    }
    let to = domain_address(EvmAddress::from_slice(&word[12..]));
    if query.to.as_ref().is_some_and(|want| *want != to) {
        return;
    }
    let Some(index) = log.log_index.and_then(|i| i64::try_from(i).ok()) else {
        scan.problem = Some(format!(
            "a Transfer log from {contract} has no usable logIndex"
        ));
        return;
    };
    if query.log_index.is_some_and(|want| want != index) {
        return;
    }
    if log.data.len() != 32 {
        scan.problem = Some(format!(
            "the Transfer log at index {index} has {} bytes of data, not 32",
            log.data.len()
        ));
        return;
    }
    let amount = U256::from_be_slice(&log.data);
    let asset = Asset::Token(domain_address(log.address));
    scan.found
        .push(transfer(place, query, index, to, asset, amount));
}

fn transfer(
    place: &Place,
    q: &TransferQuery,
    log_index: i64,
    to: Address,
    asset: Asset,
    amount: U256,
) -> ChainTransfer {
    ChainTransfer {
        key: PaymentKey {
            chain: place.chain.to_string(),
            tx_hash: q.tx_hash.clone(),
            log_index,
        },
        to,
        asset,
        amount,
        block: place.block.clone(),
        state: place.head.state_of(place.block.number),
        block_time: place.time,
    }
}

/// A log's `blockTimestamp` as a time: `None` where the node sends none, zero or one that is
/// no time.
pub(in crate::chain) fn block_time(t: Option<U64>) -> Option<jiff::Timestamp> {
    let seconds = i64::try_from(t?.to::<u64>()).ok().filter(|s| *s > 0)?;
    jiff::Timestamp::from_second(seconds).ok()
}

pub(in crate::chain) fn domain_address(a: EvmAddress) -> Address {
    Address::parse(&format!("0x{}", hex::encode(a.as_slice())))
        .expect("20 bytes always make an address")
}

/// A JSON `null` result (an unknown hash).
fn is_null(raw: &RawValue) -> bool {
    raw.get().trim() == "null"
}

fn malformed(what: &str, e: serde_json::Error) -> Lookup {
    no_transfer(format!("malformed {what} from the node: {e}"))
}

fn no_transfer(reason: String) -> Lookup {
    Lookup::NoTransfer(reason)
}
