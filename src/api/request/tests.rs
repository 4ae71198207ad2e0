use super::*;
use crate::domain::ChainKind;

fn catalog() -> Catalog {
    Catalog::new([("ethereum".to_string(), ChainKind::Evm)])
}

fn pointers(r: Result<ExpectedOrder, Vec<FieldProblem>>) -> Vec<String> {
    r.unwrap_err()
        .into_iter()
        .map(|p| p.pointer.or(p.parameter).unwrap_or_default())
        .collect()
}

#[test]
fn a_body_is_read_strictly_and_every_problem_named() {
    let c = catalog();
    let ok = br#"{"order_ref":"A-1","chain":"ethereum","pay_to":"0x52908400098527886E0F7030069857D2E4169EE7","asset":"native","amount_due":"25000000","expires_at":null}"#;
    let o = order(ok, &c).unwrap();
    assert_eq!(
        o.pay_to.as_str(),
        "0x52908400098527886e0f7030069857d2e4169ee7"
    );
    assert_eq!(pointers(order(b"{", &c)), ["#"]);
    assert_eq!(pointers(order(b"[]", &c)), ["#"]);
    let bad = br#"{"order_ref":1,"chain":"ethereum","pay_to":true,"amount_due":25,"x/y z":0}"#;
    assert_eq!(
        pointers(order(bad, &c)),
        [
            "#/x~1y%20z",
            "#/order_ref",
            "#/pay_to",
            "#/asset",
            "#/amount_due"
        ]
    );
    let domain =
        br#"{"order_ref":"A","chain":"ethereum","pay_to":"0x1","asset":"native","amount_due":"0"}"#;
    assert_eq!(pointers(order(domain, &c)), ["#/pay_to", "#/amount_due"]);
    // An unknown field and a wrong type stop none of the other checks.
    let both = br#"{"order_ref":"","chain":"ethereum","pay_to":"0xZZ","asset":"native","amount_due":5,"surprise":true}"#;
    assert_eq!(
        pointers(order(both, &c)),
        ["#/surprise", "#/amount_due", "#/order_ref", "#/pay_to"]
    );
}

/// `reference` (docs/api.md, "POST /v1/orders"): a Solana order's, base58 of 32 bytes; named in
/// the 422 when it is not one, or on another chain's order, or not a string.
#[test]
fn a_reference_is_read_for_solana_orders_and_named_when_bad() {
    let c = Catalog::new([
        ("ethereum".to_string(), ChainKind::Evm),
        ("solana".to_string(), ChainKind::Solana),
    ]);
    let sol = |reference: &str| {
        format!(
            r#"{{"order_ref":"S-1","chain":"solana","pay_to":"3YQcK46Mvbvit2QTSrPEiqLQewXY9eXhTk74w9ruNRZ5","asset":"native","amount_due":"5","reference":{reference}}}"#
        )
    };
    let ok = order(
        sol("\"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA\"").as_bytes(),
        &c,
    )
    .unwrap();
    assert_eq!(
        ok.reference.as_deref(),
        Some("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
    );
    assert_eq!(order(sol("null").as_bytes(), &c).unwrap().reference, None);
    assert_eq!(
        pointers(order(sol("\"abc\"").as_bytes(), &c)),
        ["#/reference"]
    );
    assert_eq!(pointers(order(sol("7").as_bytes(), &c)), ["#/reference"]);
    let evm = br#"{"order_ref":"A","chain":"ethereum","pay_to":"0x52908400098527886e0f7030069857d2e4169ee7","asset":"native","amount_due":"5","reference":"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"}"#;
    assert_eq!(pointers(order(evm, &c)), ["#/reference"]);
}

#[test]
fn queries_and_cursors_round_trip_or_are_named() {
    let q = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let c = encode_cursor("2026-12-01T10:00:00.000Z", 42);
    let p = page(&q(&[("state", "final"), ("limit", "5"), ("cursor", &c)])).unwrap();
    assert_eq!(p.after, Some(("2026-12-01T10:00:00.000Z".into(), 42)));
    assert_eq!((p.state.as_deref(), p.limit), (Some("final"), 5));
    let e = page(&q(&[
        ("limit", "0"),
        ("cursor", "zz"),
        ("state", "paid"),
        ("x", "1"),
    ]))
    .unwrap_err();
    let names: Vec<_> = e.iter().filter_map(|p| p.parameter.as_deref()).collect();
    assert_eq!(names, ["cursor", "limit", "state", "x"]);
    assert_eq!(page(&q(&[])).unwrap().limit, DEFAULT_LIMIT);
}

/// The fuzz target's property (`fuzz/fuzz_targets/api_order.rs`) over every truncation and
/// single-byte change of valid and invalid bodies: never a panic, a refusal names fields
/// by pointer, an accepted order reads the same when written back.
#[test]
fn mutated_bodies_never_panic_and_accepted_ones_round_trip() {
    let c = catalog();
    let seeds: [&[u8]; 3] = [
            br#"{"order_ref":"A-1001","chain":"ethereum","pay_to":"0x52908400098527886E0F7030069857D2E4169EE7","asset":"native","amount_due":"25000000","expires_at":"2026-12-01T10:15:00Z"}"#,
            br#"{"order_ref":"","chain":"solana","pay_to":1,"amount_due":25,"x/y":[],"expires_at":"soon"}"#,
            br#"{"order_ref":"M","chain":"ethereum","pay_to":"0x52908400098527886e0f7030069857d2e4169ee7","asset":"native","amount_due":"115792089237316195423570985008687907853269984665640564039457584007913129639935"}"#,
        ];
    let mut accepted = 0;
    let mut tried = 0;
    for seed in seeds {
        let mut inputs: Vec<Vec<u8>> = (0..seed.len()).map(|i| seed[..i].to_vec()).collect();
        for i in 0..seed.len() {
            for b in [b'"', b'0', b'A', b'{', b',', b'\\', 0xff, b' '] {
                let mut v = seed.to_vec();
                v[i] = b;
                inputs.push(v);
            }
            let mut v = seed.to_vec();
            v.remove(i);
            inputs.push(v);
        }
        for input in inputs {
            tried += 1;
            match order(&input, &c) {
                Err(problems) => {
                    assert!(!problems.is_empty());
                    assert!(problems
                        .iter()
                        .all(|p| p.pointer.as_deref().is_some_and(|x| x.starts_with('#'))));
                }
                Ok(o) => {
                    accepted += 1;
                    let back = serde_json::json!({
                        "order_ref": o.order_ref, "chain": o.chain,
                        "pay_to": o.pay_to.as_str(), "asset": o.asset.as_str(),
                        "amount_due": o.amount_due.to_string(),
                        "expires_at": o.expires_at.map(|t| t.to_string()),
                    });
                    assert_eq!(order(back.to_string().as_bytes(), &c).unwrap(), o);
                }
            }
        }
    }
    assert!(
        tried > 3_000 && accepted > 10,
        "{tried} tried, {accepted} accepted"
    );
}
