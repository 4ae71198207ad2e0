use super::*;
use State::*;

fn c(amount: u64, state: State, block: u64) -> Credit {
    Credit {
        amount: U256::from(amount),
        state,
        block,
        index: 0,
    }
}

fn u(n: u64) -> U256 {
    U256::from(n)
}

#[test]
fn tolerances_parse_as_units_or_a_share() {
    let ok = [
        ("0", Tolerance::None),
        ("0%", Tolerance::None),
        ("0.00%", Tolerance::None),
        ("10000", Tolerance::Units(u(10_000))),
        ("0.5%", Tolerance::Share(50)),
        ("0.05%", Tolerance::Share(5)),
        ("1%", Tolerance::Share(100)),
        ("10%", Tolerance::Share(1_000)),
        ("10.00%", Tolerance::Share(1_000)),
    ];
    for (text, want) in ok {
        assert_eq!(Tolerance::parse(text), Ok(want), "{text}");
    }
    let bad = [
        ("", "whole number"),
        ("-1", "whole number"),
        ("1.5", "whole number"),
        ("1e3", "whole number"),
        (" 5", "whole number"),
        ("10.01%", "more than 10%"),
        ("11%", "more than 10%"),
        ("99999999999%", "more than 10%"),
        ("0.125%", "two decimals"),
        ("%", "not a percentage"),
        ("-1%", "not a percentage"),
        ("1.%", "not a percentage"),
        (".5%", "not a percentage"),
        ("5 %", "not a percentage"),
        (&"9".repeat(79), "256 bits"),
    ];
    for (text, why) in bad {
        let e = Tolerance::parse(text).expect_err(text);
        assert_eq!(e.field, "underpaid_tolerance");
        assert!(e.reason.contains(why), "{text}: {e}");
    }
}

#[test]
fn a_share_rounds_down_and_never_exceeds_the_amount() {
    assert_eq!(Tolerance::Share(50).of(u(25_000_000)), u(125_000));
    assert_eq!(Tolerance::Share(50).of(u(199)), u(0)); // 0.995 rounds down
    assert_eq!(Tolerance::Share(1_000).of(u(10_001)), u(1_000));
    assert_eq!(Tolerance::Units(u(10)).of(u(4)), u(4));
    assert_eq!(Tolerance::Units(u(10)).due(u(4)), u(0));
    assert_eq!(Tolerance::None.due(u(25)), u(25));
    // Near 2^256: no overflow, and exactly a tenth (rounded down).
    assert_eq!(Tolerance::Share(1_000).of(U256::MAX), U256::MAX / u(10));
    for t in ["0", "7", "0.5%", "10%"] {
        let tol = Tolerance::parse(t).unwrap();
        assert_eq!(Tolerance::parse(&tol.to_string()), Ok(tol), "{t}");
    }
}

/// A case: its name, amount due, tolerance, credits, then the state and completing index.
type Case = (
    &'static str,
    u64,
    Tolerance,
    Vec<Credit>,
    State,
    Option<usize>,
);

#[test]
fn the_cover_rule_for_one_payment_by_table() {
    let none = Tolerance::None;
    let cases: Vec<Case> = vec![
        ("nothing paid", 25, none, vec![], Unpaid, None),
        ("exact", 25, none, vec![c(25, Final, 10)], Final, Some(0)),
        ("short", 25, none, vec![c(20, Final, 10)], Unpaid, None),
        (
            "over",
            25,
            none,
            vec![c(30, Confirmed, 10)],
            Confirmed,
            Some(0),
        ),
        (
            "one short of exact",
            25,
            none,
            vec![c(24, Final, 10)],
            Unpaid,
            None,
        ),
        (
            "within tolerance",
            25,
            Tolerance::Units(u(5)),
            vec![c(20, Pending, 10)],
            Pending,
            Some(0),
        ),
        (
            "at the edge of tolerance",
            25,
            Tolerance::Units(u(5)),
            vec![c(20, Final, 10)],
            Final,
            Some(0),
        ),
        (
            "just past the edge",
            25,
            Tolerance::Units(u(5)),
            vec![c(19, Final, 10)],
            Unpaid,
            None,
        ),
        (
            "share edge: 0.5% of 1000 is 5",
            1000,
            Tolerance::Share(50),
            vec![c(995, Final, 1)],
            Final,
            Some(0),
        ),
        (
            "share past the edge",
            1000,
            Tolerance::Share(50),
            vec![c(994, Final, 1)],
            Unpaid,
            None,
        ),
    ];
    check(cases);
}

#[test]
fn the_cover_rule_for_split_payments_by_table() {
    let none = Tolerance::None;
    let cases: Vec<Case> = vec![
        (
            "split, both final",
            100,
            none,
            vec![c(60, Final, 10), c(40, Final, 20)],
            Final,
            Some(1),
        ),
        (
            "split across states: the later part bounds the state",
            100,
            none,
            vec![c(60, Final, 10), c(40, Pending, 90)],
            Pending,
            Some(1),
        ),
        (
            "split, credited out of chain order",
            100,
            none,
            vec![c(40, Pending, 90), c(60, Final, 10)],
            Pending,
            Some(0),
        ),
        (
            "a top-up that leaves it short",
            100,
            none,
            vec![c(60, Final, 10), c(30, Pending, 90)],
            Unpaid,
            None,
        ),
        (
            "an overpayment after the cover is not the completing one",
            100,
            none,
            vec![c(100, Final, 10), c(5, Pending, 90)],
            Final,
            Some(0),
        ),
        (
            "a payment reorged out (not credited) leaves the rest short",
            100,
            none,
            vec![c(60, Final, 10)],
            Unpaid,
            None,
        ),
        (
            "three parts, the final ones alone cover a tolerance",
            100,
            Tolerance::Share(1_000),
            vec![c(50, Final, 1), c(40, Final, 2), c(10, Pending, 3)],
            Final,
            Some(1),
        ),
        ("due zero needs a payment", 0, none, vec![], Unpaid, None),
        (
            "due zero, any payment",
            0,
            none,
            vec![c(0, Pending, 5)],
            Pending,
            Some(0),
        ),
    ];
    check(cases);
}

/// Each case's state, completing index and paid sum.
fn check(cases: Vec<Case>) {
    for (name, due, tol, credits, state, completing) in cases {
        let got = cover(u(due), tol, &credits).unwrap();
        assert_eq!((got.state, got.completing), (state, completing), "{name}");
        let paid: u64 = credits.iter().map(|c| c.amount.to::<u64>()).sum();
        assert_eq!(got.paid, u(paid), "{name}");
    }
}

#[test]
fn shortfall_and_excess() {
    let got = cover(u(25_000_000), Tolerance::None, &[c(20_000_000, Final, 1)]).unwrap();
    assert_eq!(got.shortfall(u(25_000_000)), u(5_000_000));
    assert_eq!(got.excess(u(25_000_000)), u(0));
    let got = cover(u(25), Tolerance::None, &[c(20, Final, 1), c(10, Final, 2)]).unwrap();
    assert_eq!((got.shortfall(u(25)), got.excess(u(25))), (u(0), u(5)));
}

#[test]
fn huge_amounts_near_u256() {
    let max = Credit {
        amount: U256::MAX,
        state: Final,
        block: 1,
        index: 0,
    };
    let got = cover(U256::MAX, Tolerance::None, &[max]).unwrap();
    assert_eq!((got.state, got.paid), (Final, U256::MAX));
    let one = c(1, Final, 2);
    assert_eq!(
        cover(U256::MAX, Tolerance::None, &[max, one]),
        Err(SumOverflow)
    );
    let half = Credit {
        amount: U256::MAX / u(2) + u(1),
        ..max
    };
    let got = cover(
        U256::MAX,
        Tolerance::None,
        &[half, Credit { block: 2, ..half }],
    );
    assert_eq!(got, Err(SumOverflow));
    let got = cover(
        U256::MAX,
        Tolerance::Share(1),
        &[
            half,
            Credit {
                amount: half.amount - u(1),
                block: 2,
                ..half
            },
        ],
    )
    .unwrap();
    assert_eq!(
        (got.state, got.paid, got.completing),
        (Final, U256::MAX, Some(1))
    );
}
