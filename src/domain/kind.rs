//! Chain kinds (docs/reference.md §2, `[chains.<name>]`): what a configured chain is, and so
//! how its addresses, transaction ids and assets are spelled. Every value from outside is
//! parsed by its chain's kind into the one canonical form payrecon compares, stores and
//! reports: EVM `0x` + lowercase hex, Tron base58check addresses (`T…`) and bare lowercase hex
//! transaction ids, Bitcoin addresses and txids, Solana base58 keys and signatures
//! (docs/configuration.md, "Solana").

use super::bitcoin::{self, BtcNetwork};
use super::model::{Address, Asset, InputError, TxHash};
use super::solana::{parse_solana_signature, SolanaKey};
use super::tron::{parse_txid, TronAddress};

/// `[chains.<name>] kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ChainKind {
    /// Ethereum and every EVM chain (the default).
    #[default]
    Evm,
    /// Tron: TRC-20 over java-tron's JSON-RPC, TRX over its HTTP API.
    Tron,
    /// Bitcoin on a network (docs/configuration.md, "Bitcoin"): outputs read from an Esplora
    /// API.
    Bitcoin(BtcNetwork),
    /// Solana (docs/configuration.md, "Solana"): SOL and SPL tokens over the cluster's
    /// JSON-RPC, states from its commitment levels.
    Solana,
}

impl ChainKind {
    /// `evm` | `tron` | `bitcoin` (mainnet; the table's `network` says otherwise) | `solana`.
    pub fn parse(s: &str) -> Result<ChainKind, InputError> {
        match s.trim() {
            "evm" => Ok(ChainKind::Evm),
            "tron" => Ok(ChainKind::Tron),
            "bitcoin" => Ok(ChainKind::Bitcoin(BtcNetwork::Mainnet)),
            "solana" => Ok(ChainKind::Solana),
            other => Err(InputError::new(
                "kind",
                format!("must be \"evm\", \"tron\", \"bitcoin\" or \"solana\", not {other:?}"),
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ChainKind::Evm => "evm",
            ChainKind::Tron => "tron",
            ChainKind::Bitcoin(_) => "bitcoin",
            ChainKind::Solana => "solana",
        }
    }

    /// The native coin's symbol when `[assets]` does not say: TRX, BTC, SOL; none for an EVM
    /// chain (ETH, POL, BNB … : the chain's name does not tell).
    pub fn native_symbol(self) -> &'static str {
        match self {
            ChainKind::Evm => "",
            ChainKind::Tron => "TRX",
            ChainKind::Bitcoin(_) => "BTC",
            ChainKind::Solana => "SOL",
        }
    }

    /// Decimals of the native coin when `[assets]` does not say: ETH-like 18, TRX 6 (sun),
    /// BTC 8 (satoshis), SOL 9 (lamports).
    pub fn native_decimals(self) -> u8 {
        match self {
            ChainKind::Evm => 18,
            ChainKind::Tron => 6,
            ChainKind::Bitcoin(_) => 8,
            ChainKind::Solana => 9,
        }
    }

    /// An address in any spelling this kind accepts, in its canonical form.
    pub fn address(self, field: &'static str, s: &str) -> Result<Address, InputError> {
        match self {
            ChainKind::Evm => Address::parse(s).map_err(|e| InputError::new(field, e.reason)),
            ChainKind::Tron => TronAddress::parse(field, s).map(|t| tron_address(&t)),
            ChainKind::Bitcoin(n) => {
                bitcoin::parse_address(field, s, n).map(Address::from_canonical)
            }
            ChainKind::Solana => {
                SolanaKey::parse(field, s).map(|k| Address::from_canonical(k.to_string()))
            }
        }
    }

    /// A transaction id in any spelling this kind accepts, in its canonical form.
    pub fn tx_hash(self, s: &str) -> Result<TxHash, InputError> {
        match self {
            ChainKind::Evm => TxHash::parse(s),
            ChainKind::Tron | ChainKind::Bitcoin(_) => parse_txid(s)
                .map(TxHash::from_canonical)
                .map_err(|e| InputError::new("tx_hash", e.reason)),
            ChainKind::Solana => parse_solana_signature(s).map(TxHash::from_canonical),
        }
    }

    /// `native` or a token contract in any spelling this kind accepts.
    pub fn asset(self, s: &str) -> Result<Asset, InputError> {
        if s.trim().eq_ignore_ascii_case("native") {
            return Ok(Asset::Native);
        }
        if let ChainKind::Bitcoin(_) = self {
            return Err(InputError::new(
                "asset",
                "Bitcoin has only \"native\" (no tokens)",
            ));
        }
        self.address("asset", s).map(Asset::Token)
    }

    /// Whether a payment key's transaction id is in this kind's form (a ledger row of another
    /// kind's spelling is not looked up on this chain).
    pub fn owns_tx_hash(self, h: &TxHash) -> bool {
        match self {
            ChainKind::Evm => h.as_str().starts_with("0x"),
            ChainKind::Tron | ChainKind::Bitcoin(_) => {
                !h.as_str().starts_with("0x") && parse_txid(h.as_str()).is_ok()
            }
            ChainKind::Solana => parse_solana_signature(h.as_str()).is_ok(),
        }
    }

    /// The kind whose canonical form `s` is in (a ledger value, written by payrecon or by
    /// the merchant's handler): `T…` is Tron's, `0x…` an EVM address, 64 bare hex digits a
    /// Tron transaction id, base58 of 32 or 64 bytes a Solana key or signature (after Tron's
    /// addresses and Bitcoin's bech32 ones, which a 32-byte key could also spell).
    fn of_canonical(s: &str) -> ChainKind {
        let s = s.trim();
        let tron = s.starts_with('T') && TronAddress::parse("address", s).is_ok();
        if tron || (s.len() == 64 && !s.starts_with("0x")) {
            ChainKind::Tron
        } else if !bitcoin::looks_like_bech32(s)
            && (SolanaKey::parse("address", s).is_ok() || parse_solana_signature(s).is_ok())
        {
            ChainKind::Solana
        } else if s.starts_with('T') {
            ChainKind::Tron
        } else if bitcoin::looks_like_address(s) {
            ChainKind::Bitcoin(BtcNetwork::Mainnet)
        } else {
            ChainKind::Evm
        }
    }
}

/// The canonical address of a Tron address (its base58check form).
pub fn tron_address(t: &TronAddress) -> Address {
    Address::from_canonical(t.as_str().to_string())
}

/// The Tron address an address holds, when it is one.
pub fn as_tron(a: &Address) -> Option<TronAddress> {
    a.as_str()
        .starts_with('T')
        .then(|| TronAddress::parse("address", a.as_str()).ok())
        .flatten()
}

/// A ledger row's values, read in whichever kind's canonical form they are in: the store
/// does not know the chains' kinds, and a value of the other kind simply never matches what
/// the chain reports.
pub fn ledger_address(s: &str) -> Result<Address, InputError> {
    match ChainKind::of_canonical(s) {
        // Any network's prefixes: the store does not know the chain's either.
        ChainKind::Bitcoin(_) => bitcoin::parse_address_any(s).map(Address::from_canonical),
        kind => kind.address("pay_to", s),
    }
}

/// See `ledger_address`.
pub fn ledger_tx_hash(s: &str) -> Result<TxHash, InputError> {
    ChainKind::of_canonical(s).tx_hash(s)
}

/// See `ledger_address`.
pub fn ledger_asset(s: &str) -> Result<Asset, InputError> {
    ChainKind::of_canonical(s).asset(s)
}

#[cfg(test)]
mod tests;
