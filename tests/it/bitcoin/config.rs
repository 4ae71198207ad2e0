//! A Bitcoin chain's configuration: the keys it needs and the ones it refuses, each error
//! naming its key, and records of another network rejected.

use payrecon::config::Config;

/// Config: `esplora_url` required, the EVM and Tron keys refused, only depth finality, the
/// network named; an address of another network in a record is rejected.
#[test]
fn bitcoin_config_errors_name_their_keys() {
    let table = |keys: &str| {
        format!(
            "[database]\nurl = \"sqlite://x.db\"\n\n[chains.bitcoin]\nkind = \"bitcoin\"\n{keys}\n"
        )
    };
    let esplora = "esplora_url = \"https://blockstream.info/api\"";
    let cases = [
        (table(""), "chains.bitcoin.esplora_url"),
        (
            table(&format!("{esplora}\nrpc_url = \"https://x.example\"")),
            "chains.bitcoin.rpc_url",
        ),
        (
            table(&format!("{esplora}\nchain_id = 1")),
            "chains.bitcoin.chain_id",
        ),
        (
            table(&format!("{esplora}\nfinality = \"finalized\"")),
            "chains.bitcoin.finality",
        ),
        (
            table(&format!("{esplora}\nnetwork = \"liquid\"")),
            "chains.bitcoin.network",
        ),
        (
            table("esplora_url = \"ftp://x.example\""),
            "chains.bitcoin.esplora_url",
        ),
    ];
    for (text, key) in cases {
        let e = Config::from_toml(&text, std::iter::empty())
            .err()
            .unwrap_or_else(|| panic!("accepted:\n{text}"));
        assert!(e.to_string().contains(key), "{key}: {e}");
    }
    let ok = Config::from_toml(
        &table(&format!("{esplora}\nnetwork = \"signet\"")),
        std::iter::empty(),
    )
    .expect("a signet chain");
    let c = ok.chain("bitcoin").unwrap();
    assert_eq!(
        c.kind,
        payrecon::domain::ChainKind::Bitcoin(payrecon::domain::BtcNetwork::Testnet)
    );
    let e = Config::from_toml(
        "[database]\nurl = \"sqlite://x.db\"\n\n[chains.ethereum]\nrpc_url = \"https://x.example\"\nnetwork = \"mainnet\"\n",
        std::iter::empty(),
    )
    .err()
    .expect("network on an EVM chain");
    assert!(e.to_string().contains("chains.ethereum.network"), "{e}");
}
