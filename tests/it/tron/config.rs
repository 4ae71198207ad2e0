//! Tron's configuration and start check: the chain id against the node, `check`'s line for
//! it, and the errors that name their keys.

use payrecon::app::App;
use payrecon::config::Config;
use payrecon_testkit::sandbox::chaingateway::{BlockShape, FakeChaingateway};
use payrecon_testkit::tron::FakeTron;

use super::{config, HEAD, SOLID_LAG, USDT};
use crate::reconcile::KEY;

/// The start check on Tron: the node's chain id (mainnet's 0x2b6653dc) against `chain_id`; a
/// config for Nile refuses to start against a mainnet node, naming the chain. `check` reports
/// the Tron node like an EVM one.
#[tokio::test]
async fn the_chain_id_is_checked_at_start_and_check_reports_the_node() {
    let (_dir, db) = crate::support::sqlite_url();
    let node = FakeTron::start(HEAD, SOLID_LAG).await;
    let (cg, cg_url) = FakeChaingateway::start(KEY).await;
    // Chaingateway answers tron's block number as an object.
    cg.set_block_number("tron", HEAD, BlockShape::Object);
    let text = config(&db, &cg_url, &node);
    let ok = Config::from_toml(&text, std::iter::empty()).unwrap();
    // `check` only reads: the ledger must exist (the start creates it).
    App::start(ok.clone())
        .await
        .expect("mainnet id against a mainnet node");
    let (lines, all_ok) = App::check_config(ok.clone()).await.expect("check");
    let chain_line = lines.iter().find(|l| l.contains("chain tron")).cloned();
    assert!(all_ok, "{lines:?}");
    let chain_line = chain_line.unwrap_or_else(|| panic!("no chain line: {lines:?}"));
    assert!(chain_line.contains("728126428"), "{chain_line}");

    let nile = text.replace("chain_id = 728126428", "chain_id = 3448148188");
    let nile = Config::from_toml(&nile, std::iter::empty()).unwrap();
    let Err(e) = App::start(nile).await else {
        panic!("a Nile config started against a mainnet node");
    };
    assert!(
        e.0.contains("chain tron") && e.0.contains("728126428"),
        "{}",
        e.0
    );
}

/// Config: `safe` is refused on Tron, `api_url` is required, a bad base58 asset key is an
/// error naming the key, and Tron keys on an EVM chain are refused.
#[test]
fn tron_config_errors_name_their_keys() {
    let base = |chain: &str, asset: &str| {
        format!(
            "[database]\nurl = \"sqlite://x.db\"\n\n[chains.tron]\n{chain}\n\n\
             [assets.\"tron:{asset}\"]\nsymbol = \"USDT\"\ndecimals = 6\n"
        )
    };
    let good = "kind = \"tron\"\nrpc_url = \"https://api.trongrid.io/jsonrpc\"\napi_url = \"https://api.trongrid.io\"";
    let cases = [
        (
            base(&format!("{good}\nfinality = \"safe\""), USDT),
            "chains.tron.finality",
        ),
        (
            base(
                "kind = \"tron\"\nrpc_url = \"https://x.example/jsonrpc\"",
                USDT,
            ),
            "chains.tron.api_url",
        ),
        (
            base(good, "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u"),
            "assets.\"tron:TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u\"",
        ),
        (
            base(&format!("{good}\nlog_range = 10000"), USDT),
            "chains.tron.log_range",
        ),
        (
            base(
                "rpc_url = \"https://x.example\"\napi_url = \"https://y.example\"",
                "0xdac17f958d2ee523a2206206994597c13d831ec7",
            ),
            "chains.tron.api_url",
        ),
        (
            base("kind = \"cardano\"\nrpc_url = \"https://x.example\"", USDT),
            "chains.tron.kind",
        ),
    ];
    for (text, key) in cases {
        let e = Config::from_toml(&text, std::iter::empty())
            .err()
            .unwrap_or_else(|| panic!("accepted:\n{text}"));
        assert!(e.to_string().contains(key), "{key}: {e}");
    }
    // The asset key in its 41… spelling loads (converted to base58).
    Config::from_toml(
        &base(good, "41a614f803b6fd780986a42c78ec9c7f77e6ded13c"),
        std::iter::empty(),
    )
    .expect("a 41… asset key");
}
