use super::*;

fn u(n: u64) -> U256 {
    U256::from(n)
}

#[test]
fn deltas_add_subtract_and_spell_a_sign() {
    assert_eq!(Delta::between(u(5), u(8)).to_string(), "-3");
    assert_eq!(Delta::between(u(8), u(5)).to_string(), "3");
    assert_eq!(Delta::between(u(8), u(8)).to_string(), "0");
    let minus3 = Delta::parse("-3").unwrap();
    assert_eq!(
        minus3
            .checked_add(Delta::positive(u(10)))
            .unwrap()
            .to_string(),
        "7"
    );
    assert_eq!(minus3.checked_add(minus3).unwrap().to_string(), "-6");
    assert_eq!(
        Delta::parse("-0").unwrap(),
        Delta::default(),
        "no negative zero"
    );
    assert_eq!(Delta::parse("1.5"), None);
    assert_eq!(Delta::parse("--1"), None);
    assert_eq!(
        Delta::positive(U256::MAX).checked_add(Delta::positive(u(1))),
        None
    );
}

#[test]
fn a_transfer_is_an_inflow_a_sweep_or_an_outflow() {
    let t = vec!["0xtreasury".to_string()];
    assert_eq!(classify("0xa", "0xb", "0xa", &t), Some(FlowKind::Inflow));
    assert_eq!(
        classify("0xa", "0xa", "0xtreasury", &t),
        Some(FlowKind::Sweep)
    );
    assert_eq!(
        classify("0xa", "0xa", "0xthief", &t),
        Some(FlowKind::Outflow)
    );
    assert_eq!(classify("0xa", "0xa", "0xa", &t), None, "to itself");
    assert_eq!(classify("0xa", "0xb", "0xc", &t), None, "not its transfer");
}

#[test]
fn a_check_explains_or_carries_the_difference() {
    let open = Checkpoint {
        expected: Delta::positive(u(100)),
    };
    // 100 held, 50 paid in, 30 swept: 120 there, nothing unexplained.
    let v = settle(open, u(50), u(30), u(120)).unwrap();
    assert_eq!(
        (v.expected.to_string(), v.difference.to_string()),
        ("120".into(), "0".into())
    );
    // 20 more left than the flows show: −20 unexplained.
    let v = settle(open, u(50), u(30), u(100)).unwrap();
    assert_eq!(v.difference.to_string(), "-20");
    // Carried: the next check with nothing new still shows it.
    let next = Checkpoint {
        expected: v.expected,
    };
    assert_eq!(
        settle(next, u(0), u(0), u(100))
            .unwrap()
            .difference
            .to_string(),
        "-20"
    );
    // An outflow larger than what was expected: expected goes negative, never a panic.
    let v = settle(open, u(0), u(130), u(0)).unwrap();
    assert_eq!(
        (v.expected.to_string(), v.difference.to_string()),
        ("-30".into(), "30".into())
    );
    assert_eq!(settle(open, U256::MAX, u(0), u(0)), None);
}
