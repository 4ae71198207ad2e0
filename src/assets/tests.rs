use super::*;

fn assets() -> Assets {
    let mut m = HashMap::new();
    m.insert("ethereum:native".to_string(), (String::new(), 18));
    m.insert(
        "ethereum:0x00000000000000000000000000000000000000aa".to_string(),
        ("TST".to_string(), 6),
    );
    m.insert("tron:native".to_string(), ("TRX".to_string(), 6));
    Assets(m)
}

#[test]
fn amounts_read_in_tokens_where_the_decimals_are_known() {
    let a = assets();
    assert_eq!(
        a.tokens("ethereum", "native", "15000000000000000")
            .as_deref(),
        Some("0.015 ETH")
    );
    assert_eq!(
        a.tokens("tron", "native", "2500000").as_deref(),
        Some("2.5 TRX")
    );
    assert_eq!(
        a.get("ethereum", "0x00000000000000000000000000000000000000AA")
            .map(|x| x.1),
        Some(6)
    );
    assert_eq!(
        a.amount(
            "ethereum",
            Some("0x00000000000000000000000000000000000000aa"),
            "20000000"
        ),
        "20 TST"
    );
    assert_eq!(
        a.amount(
            "ethereum",
            Some("0x00000000000000000000000000000000000000bb"),
            "7"
        ),
        "7 base units"
    );
    assert_eq!(a.amount("ethereum", None, "7"), "7 base units");
    assert_eq!(
        a.detail(
            "ethereum",
            Some("0x00000000000000000000000000000000000000aa"),
            "underpaid: paid 20000000 of 25000000, short 5000000; held until covered"
        ),
        "underpaid: paid 20 TST of 25 TST, short 5 TST; held until covered"
    );
    // Blocks, dates and log indexes stay numbers.
    let late = "late: paid 20000000 in a block of 2023-11-14T22:13:20Z, after the order \
                    expired; paid 20000000 of 25000000 in all; at log index 3 of block 1200";
    assert_eq!(
        a.detail(
            "ethereum",
            Some("0x00000000000000000000000000000000000000aa"),
            late
        ),
        "late: paid 20 TST in a block of 2023-11-14T22:13:20Z, after the order expired; \
             paid 20 TST of 25 TST in all; at log index 3 of block 1200"
    );
    assert_eq!(
        a.detail(
            "ethereum",
            Some("0x00000000000000000000000000000000000000bb"),
            "paid 5 of 6"
        ),
        "paid 5 of 6"
    );
    // The balance check's details, a difference below zero with its sign.
    let tst = Some("0x00000000000000000000000000000000000000aa");
    let held = "x: deposit address 0x01 holds 120000000 at block 12; the ledger and the \
                transfers read explain 140000000, leaving -20000000 unexplained";
    assert_eq!(
        a.detail("ethereum", tst, held),
        "x: deposit address 0x01 holds 120 TST at block 12; the ledger and the transfers \
         read explain 140 TST, leaving -20 TST unexplained"
    );
    assert_eq!(
        a.detail(
            "ethereum",
            tst,
            "x: sent 1500000 from deposit address 0x01 to 0x02 in block 7"
        ),
        "x: sent 1.5 TST from deposit address 0x01 to 0x02 in block 7"
    );
}
