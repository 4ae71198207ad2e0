//! `payrecon balances` as a child process: the last check of each deposit address as text
//! (amounts in tokens, signed) and JSON (base units as strings), `--mismatched`, and an
//! unknown `--chain` refused as usage.

use payrecon::domain::{Delta, U256};
use payrecon::store::BalanceRow;

use super::harness::{payrecon, World};

fn row(address: &str, balance: U256, difference: Delta) -> BalanceRow {
    BalanceRow {
        chain: "ethereum".into(),
        address: address.into(),
        asset: "native".into(),
        opening_block: 3,
        opening_balance: U256::ZERO,
        checked_block: 70,
        balance,
        expected: Delta::positive(U256::from(10u64).pow(U256::from(18u8))),
        difference,
        checked_at: "2026-12-01T03:30:00Z".parse().unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balances_lists_the_last_checks_as_text_and_json() {
    let w = World::sqlite().await;
    let config = w.config("");
    let out = payrecon(&config, &["balances"]).await;
    out.assert_code(0);
    assert!(
        out.stdout.contains("no balance checks yet"),
        "{}",
        out.stdout
    );

    let half = U256::from(5u64) * U256::from(10u64).pow(U256::from(17u8));
    let missing = Delta::parse(&format!("-{half}")).unwrap();
    w.store
        .save_balances(&[
            row("0x00000000000000000000000000000000000000a1", half, missing),
            row(
                "0x00000000000000000000000000000000000000a2",
                U256::from(10u64).pow(U256::from(18u8)),
                Delta::default(),
            ),
        ])
        .await
        .unwrap();

    let out = payrecon(&config, &["balances"]).await;
    out.assert_code(0);
    out.assert_no_panic();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    assert!(
        lines[0].contains("0x00000000000000000000000000000000000000a1"),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("difference -0.5 ETH"), "{}", lines[0]);
    assert!(lines[1].contains("difference 0 ETH"), "{}", lines[1]);

    let out = payrecon(&config, &["balances", "--mismatched", "--format", "json"]).await;
    out.assert_code(0);
    let rows = out.json();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["difference"], format!("-{half}"));
    assert_eq!(
        rows[0]["balance"],
        half.to_string(),
        "base units, as a string"
    );
    assert_eq!(rows[0]["checked_block"], 70);

    let out = payrecon(&config, &["balances", "--chain", "nowhere"]).await;
    out.assert_code(2);
    assert!(out.stderr.contains("--chain \"nowhere\""), "{}", out.stderr);
}
