//! Chain kinds (docs/reference.md §2, `[chains.<name>]`): what a configured chain is, and so
//! how its addresses, transaction ids and assets are spelled. Every value from outside is
//! parsed by its chain's kind into the one canonical form payrecon compares, stores and
//! reports: EVM `0x` + lowercase hex, Tron base58check addresses (`T…`) and bare lowercase hex
//! transaction ids.

use super::bitcoin::{self, BtcNetwork};
use super::model::{Address, Asset, InputError, TxHash};
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
}

impl ChainKind {
    /// `evm` | `tron` | `bitcoin` (mainnet; the table's `network` says otherwise).
    pub fn parse(s: &str) -> Result<ChainKind, InputError> {
        match s.trim() {
            "evm" => Ok(ChainKind::Evm),
            "tron" => Ok(ChainKind::Tron),
            "bitcoin" => Ok(ChainKind::Bitcoin(BtcNetwork::Mainnet)),
            other => Err(InputError::new(
                "kind",
                format!("must be \"evm\", \"tron\" or \"bitcoin\", not {other:?}"),
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ChainKind::Evm => "evm",
            ChainKind::Tron => "tron",
            ChainKind::Bitcoin(_) => "bitcoin",
        }
    }

    /// Decimals of the native coin when `[assets]` does not say: ETH-like 18, TRX 6 (sun),
    /// BTC 8 (satoshis).
    pub fn native_decimals(self) -> u8 {
        match self {
            ChainKind::Evm => 18,
            ChainKind::Tron => 6,
            ChainKind::Bitcoin(_) => 8,
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
        }
    }

    /// A transaction id in any spelling this kind accepts, in its canonical form.
    pub fn tx_hash(self, s: &str) -> Result<TxHash, InputError> {
        match self {
            ChainKind::Evm => TxHash::parse(s),
            ChainKind::Tron | ChainKind::Bitcoin(_) => parse_txid(s)
                .map(TxHash::from_canonical)
                .map_err(|e| InputError::new("tx_hash", e.reason)),
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
        let bare = !h.as_str().starts_with("0x");
        bare == (self != ChainKind::Evm)
    }

    /// The kind whose canonical form `s` is in (a ledger value, written by payrecon or by
    /// the merchant's handler): `T…` is Tron's, `0x…` an EVM address, 64 bare hex digits a
    /// Tron transaction id.
    fn of_canonical(s: &str) -> ChainKind {
        let s = s.trim();
        if s.starts_with('T') || (s.len() == 64 && !s.starts_with("0x")) {
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
mod tests {
    use super::*;

    const USDT_TRON: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
    const TXID: &str = "c8ad4b4ff2a8a9ea1c0f0e6fe6fd5c0ee4b4f8e0c9d27df2ea5ee56e1e1f4b0a";

    #[test]
    fn each_kind_reads_its_spellings_into_one_form() {
        let k = ChainKind::Tron;
        for s in [
            USDT_TRON,
            "41a614f803b6fd780986a42c78ec9c7f77e6ded13c",
            "0xa614f803b6fd780986a42c78ec9c7f77e6ded13c",
        ] {
            assert_eq!(k.address("to", s).unwrap().as_str(), USDT_TRON, "{s}");
            assert_eq!(
                k.asset(s).unwrap(),
                Asset::Token(k.address("to", s).unwrap())
            );
        }
        assert_eq!(k.tx_hash(&format!("0x{TXID}")).unwrap().as_str(), TXID);
        assert_eq!(k.asset("NATIVE").unwrap(), Asset::Native);
        let evm = ChainKind::Evm;
        let hex = "0xA614F803B6FD780986A42C78EC9C7F77E6DED13C";
        assert_eq!(evm.address("to", hex).unwrap().as_str(), hex.to_lowercase());
        assert!(evm.address("to", USDT_TRON).is_err());
        assert!(evm.tx_hash(TXID).is_err(), "an EVM hash needs its 0x");
        assert_eq!(
            k.address("to", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u")
                .unwrap_err()
                .field,
            "to"
        );
    }

    #[test]
    fn ledger_values_are_read_in_the_form_they_are_in() {
        assert_eq!(ledger_address(USDT_TRON).unwrap().as_str(), USDT_TRON);
        assert_eq!(
            as_tron(&ledger_address(USDT_TRON).unwrap())
                .unwrap()
                .as_str(),
            USDT_TRON
        );
        let evm = "0xa614f803b6fd780986a42c78ec9c7f77e6ded13c";
        assert_eq!(ledger_address(evm).unwrap().as_str(), evm);
        assert!(as_tron(&ledger_address(evm).unwrap()).is_none());
        assert_eq!(ledger_tx_hash(TXID).unwrap().as_str(), TXID);
        let evm_hash = format!("0x{TXID}");
        assert_eq!(ledger_tx_hash(&evm_hash).unwrap().as_str(), evm_hash);
        assert_eq!(ledger_asset(USDT_TRON).unwrap().to_string(), USDT_TRON);
        assert_eq!(ledger_asset("native").unwrap(), Asset::Native);
        assert!(ledger_address("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u").is_err());
        assert!(ledger_tx_hash("xyz").is_err());
    }

    #[test]
    fn kinds_parse_by_name() {
        assert_eq!(ChainKind::parse("tron").unwrap(), ChainKind::Tron);
        assert_eq!(ChainKind::parse(" evm ").unwrap(), ChainKind::Evm);
        assert_eq!(
            ChainKind::parse("bitcoin").unwrap(),
            ChainKind::Bitcoin(BtcNetwork::Mainnet)
        );
        let e = ChainKind::parse("solana").unwrap_err();
        assert!(
            e.reason.contains("not \"solana\"") && e.reason.contains("\"bitcoin\""),
            "{e}"
        );
        assert_eq!(ChainKind::default().as_str(), "evm");
    }
}
