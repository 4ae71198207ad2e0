//! Tron (docs/configuration.md, "Tron"). TRC-20 transfers, the head and the final (solidified)
//! block come from java-tron's Ethereum-compatible JSON-RPC through the EVM client, with Tron's
//! spellings converted at this boundary: base58check addresses in, `0x` hex to the node,
//! base58check back out; transaction ids travel as Tron writes them (64 hex digits, no `0x`).
//! TRX transfers come from the HTTP API (`api.rs`), because JSON-RPC's `value` is also set
//! for freezes, votes and contract calls.

pub(super) mod api;
mod check;

use super::{ChainError, ChainSettings, EvmClient, Lookup, Preflight, TransferQuery};
use crate::domain::{
    as_tron, tron_address, Address, Asset, ChainHead, ChainKind, ChainTransfer, Flow, TronAddress,
    U256,
};
use api::TronApi;

pub struct TronClient {
    evm: EvmClient,
    api: TronApi,
}

impl TronClient {
    /// Builds the JSON-RPC and HTTP API clients; sends nothing yet.
    pub fn new(settings: ChainSettings) -> Result<TronClient, ChainError> {
        let evm = EvmClient::new(settings)?;
        // One request budget for both interfaces (TronGrid counts them together).
        let api = TronApi::new(evm.settings(), evm.rpc.limiter())?;
        Ok(TronClient { evm, api })
    }

    pub fn settings(&self) -> &ChainSettings {
        self.evm.settings()
    }

    pub fn failovers(&self) -> u64 {
        self.evm.failovers()
    }

    /// The JSON-RPC client (head, block times).
    pub(super) fn evm(&self) -> &EvmClient {
        &self.evm
    }

    pub async fn chain_id(&self) -> Result<u64, ChainError> {
        self.evm.chain_id().await
    }

    /// `finalized` is java-tron's solidified block (JSON-RPC, 4.8.0 and later).
    pub async fn head(&self) -> Result<ChainHead, ChainError> {
        self.evm.head().await
    }

    pub async fn preflight(&self) -> Result<Preflight, ChainError> {
        self.evm.preflight().await
    }

    /// TRC-20 queries through JSON-RPC receipts, TRX ones through the HTTP API; one answer
    /// per query, in order.
    pub async fn lookup(
        &self,
        head: &ChainHead,
        queries: &[TransferQuery],
    ) -> Result<Vec<Lookup>, ChainError> {
        let native = |q: &TransferQuery| {
            q.asset == Some(Asset::Native) || (q.asset.is_none() && q.log_index == Some(-1))
        };
        let mut out: Vec<Option<Lookup>> = vec![None; queries.len()];
        let mut tokens = Vec::new();
        let mut token_at = Vec::new();
        for (i, q) in queries.iter().enumerate() {
            if native(q) {
                continue;
            }
            match to_evm_query(q) {
                Ok(evm) => {
                    tokens.push(evm);
                    token_at.push(i);
                }
                Err(no) => out[i] = Some(no),
            }
        }
        if !tokens.is_empty() {
            let found = self.evm.lookup(head, &tokens).await?;
            for ((i, lookup), evm_query) in token_at.into_iter().zip(found).zip(&tokens) {
                out[i] = Some(from_evm_lookup(lookup, &queries[i], evm_query));
            }
        }
        let natives: Vec<usize> = (0..queries.len())
            .filter(|i| native(&queries[*i]))
            .collect();
        let owned = natives.iter().map(|i| queries[*i].clone()).collect();
        let answers = self.api.trx_transfers(head, owned).await?;
        for (i, lookup) in natives.into_iter().zip(answers) {
            out[i] = Some(lookup);
        }
        Ok(out
            .into_iter()
            .map(|l| l.unwrap_or(Lookup::NotFound))
            .collect())
    }

    /// The deposit scan: `eth_getLogs` with the addresses in hex, the transfers back in
    /// Tron's spellings.
    pub async fn transfers_to(
        &self,
        head: &ChainHead,
        tokens: &[Address],
        recipients: &[Address],
        from: u64,
    ) -> Result<Vec<ChainTransfer>, ChainError> {
        let hex = |a: &[Address]| -> Vec<Address> { a.iter().filter_map(evm_address).collect() };
        let found = self
            .evm
            .transfers_to(head, &hex(tokens), &hex(recipients), from)
            .await?;
        Ok(found.into_iter().filter_map(from_evm_transfer).collect())
    }
}

/// The balance check's reads (docs/operations.md, "Balances", on Tron). java-tron answers
/// `eth_getBalance` and `eth_call` only at `latest`: balances come with the block they were
/// read at, and the check takes the flows above its final block back off them.
impl TronClient {
    /// Each `(address, asset)`'s balance at the head, with the block it was read at.
    pub async fn balances_at_head(
        &self,
        holdings: &[(Address, Asset)],
    ) -> Result<Vec<(u64, U256)>, ChainError> {
        let mut hex = Vec::with_capacity(holdings.len());
        for (a, asset) in holdings {
            let asset = match asset {
                Asset::Native => Asset::Native,
                Asset::Token(t) => Asset::Token(self.hex(t)?),
            };
            hex.push((self.hex(a)?, asset));
        }
        self.evm.balances_at_head(&hex).await
    }

    /// TRC-20 `Transfer` logs of `tokens` from or to `addresses` in blocks `from..=to`, in
    /// Tron's spellings.
    pub async fn token_flows(
        &self,
        tokens: &[Address],
        addresses: &[Address],
        from: u64,
        to: u64,
    ) -> Result<Vec<Flow>, ChainError> {
        let hex = |list: &[Address]| {
            list.iter()
                .map(|a| self.hex(a))
                .collect::<Result<Vec<_>, _>>()
        };
        let found = self
            .evm
            .token_flows(&hex(tokens)?, &hex(addresses)?, from, to)
            .await?;
        Ok(found
            .into_iter()
            .filter_map(|mut f| {
                let party = |p: &str| Some(tron_form(&Address::parse(p).ok()?)?.to_string());
                f.from = party(&f.from)?;
                f.to = party(&f.to)?;
                if let Asset::Token(t) = &f.asset {
                    f.asset = Asset::Token(tron_form(t)?);
                }
                f.key.tx_hash = ChainKind::Tron.tx_hash(f.key.tx_hash.as_str()).ok()?;
                Some(f)
            })
            .collect())
    }

    /// The TRX that moved into and out of `addresses` in blocks `from..=to` (HTTP API).
    pub async fn trx_flows(
        &self,
        addresses: &[Address],
        from: u64,
        to: u64,
    ) -> Result<Vec<Flow>, ChainError> {
        self.api.trx_flows(addresses, from, to).await
    }

    fn hex(&self, a: &Address) -> Result<Address, ChainError> {
        evm_address(a).ok_or_else(|| ChainError::Rpc {
            chain: self.settings().name.clone(),
            what: "balances",
            reason: format!("{a} is not a Tron address"),
        })
    }
}

/// A Tron address as the JSON-RPC node spells it (`0x` + 20 bytes).
fn evm_address(a: &Address) -> Option<Address> {
    as_tron(a).and_then(|t| Address::parse(&t.evm_hex()).ok())
}

/// A node's `0x` address in Tron's base58check form.
fn tron_form(a: &Address) -> Option<Address> {
    TronAddress::parse("address", a.as_str())
        .ok()
        .map(|t| tron_address(&t))
}

/// `q` in the EVM form the node's JSON-RPC answers, or no transfer: an address in it is not
/// a Tron address.
fn to_evm_query(q: &TransferQuery) -> Result<TransferQuery, Lookup> {
    let asset = match &q.asset {
        Some(Asset::Token(t)) => {
            Some(Asset::Token(evm_address(t).ok_or_else(|| {
                Lookup::NoTransfer(format!("token {t} is not a Tron address"))
            })?))
        }
        other => other.clone(),
    };
    let to = match &q.to {
        Some(a) => Some(
            evm_address(a)
                .ok_or_else(|| Lookup::NoTransfer(format!("{a} is not a Tron address")))?,
        ),
        None => None,
    };
    Ok(TransferQuery {
        tx_hash: q.tx_hash.clone(),
        asset,
        to,
        log_index: q.log_index,
    })
}

/// The EVM client's answer in Tron's spellings (a reason names addresses in base58).
fn from_evm_lookup(lookup: Lookup, q: &TransferQuery, evm: &TransferQuery) -> Lookup {
    match lookup {
        Lookup::Found(ts) => Lookup::Found(ts.into_iter().filter_map(from_evm_transfer).collect()),
        Lookup::NoTransfer(mut why) => {
            let pairs = [
                (evm.to.as_ref(), q.to.as_ref()),
                (token(&evm.asset), token(&q.asset)),
            ];
            for (hex, tron) in pairs {
                if let (Some(h), Some(t)) = (hex, tron) {
                    why = why.replace(h.as_str(), t.as_str());
                }
            }
            Lookup::NoTransfer(why)
        }
        other => other,
    }
}

fn token(a: &Option<Asset>) -> Option<&Address> {
    match a {
        Some(Asset::Token(t)) => Some(t),
        _ => None,
    }
}

/// A transfer the EVM client decoded, in Tron's spellings: base58 recipient and token, the
/// transaction id without `0x`.
fn from_evm_transfer(mut t: ChainTransfer) -> Option<ChainTransfer> {
    t.to = tron_form(&t.to)?;
    if let Asset::Token(a) = &t.asset {
        t.asset = Asset::Token(tron_form(a)?);
    }
    t.key.tx_hash = ChainKind::Tron.tx_hash(t.key.tx_hash.as_str()).ok()?;
    Some(t)
}
