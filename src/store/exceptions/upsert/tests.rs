use super::{exception_findings, problem_of};
use crate::store::FindingRow;

fn f(kind: &str, action: &str, detail: &str, order: Option<&str>, tx: Option<&str>) -> FindingRow {
    FindingRow {
        provider: "cg".into(),
        kind: kind.into(),
        chain: "ethereum".into(),
        tx_hash: tx.map(String::from),
        log_index: tx.map(|_| 3),
        order_ref: order.map(String::from),
        local_state: None,
        observed_state: None,
        action: action.into(),
        detail: detail.into(),
        amount: None,
        asset: None,
        address: None,
    }
}

type Case = (FindingRow, Option<&'static str>);

/// Findings about an order: one exception per order and kind, none for what payrecon settled.
fn order_cases() -> Vec<Case> {
    vec![
        (
            f(
                "amount_mismatch",
                "held",
                "underpaid: paid 1 of 2",
                Some("A"),
                Some("0xa"),
            ),
            Some("order:A:amount_mismatch"),
        ),
        (
            f(
                "amount_mismatch",
                "applied",
                "overpaid: paid 3 of 2",
                Some("A"),
                Some("0xb"),
            ),
            Some("order:A:amount_mismatch"),
        ),
        (
            f(
                "amount_mismatch",
                "applied",
                "underpaid within tolerance: paid",
                Some("A"),
                Some("0xa"),
            ),
            None,
        ),
        (
            f("late_payment", "held", "late: paid", Some("B"), Some("0xc")),
            Some("order:B:late_payment"),
        ),
        (
            f(
                "late_payment",
                "applied",
                "late: paid",
                Some("B"),
                Some("0xc"),
            ),
            None,
        ),
    ]
}

/// Findings about a payment, and kinds payrecon fixes itself.
fn other_cases() -> Vec<Case> {
    vec![
        (
            f("unknown_payment", "none", "no order", None, Some("0xd")),
            Some("payment:ethereum:0xd:3"),
        ),
        (
            f("unknown_payment", "none", "no such order", Some("Z"), None),
            None,
        ),
        (
            FindingRow {
                log_index: None,
                ..f("unknown_payment", "none", "reverted", None, Some("0xd"))
            },
            None,
        ),
        (
            f("reorged", "none", "gone", Some("C"), Some("0xe")),
            Some("reorged:ethereum:0xe:C"),
        ),
        (f("missing", "applied", "", Some("D"), Some("0xf")), None),
        (f("lagging", "applied", "", Some("D"), Some("0xf")), None),
        (
            f(
                "failed_notification",
                "resend_requested",
                "",
                Some("D"),
                Some("0xf"),
            ),
            None,
        ),
        (
            f("unexpected_outflow", "none", "drained", None, Some("0xa1")),
            Some("outflow:ethereum:0xa1:3"),
        ),
        (
            FindingRow {
                address: Some("0xdeposit".into()),
                asset: Some("native".into()),
                ..f("balance_mismatch", "none", "short", None, None)
            },
            Some("balance:ethereum:0xdeposit:native"),
        ),
        (
            f("balance_mismatch", "none", "no address", None, None),
            None,
        ),
    ]
}

#[test]
fn one_problem_per_order_or_payment_and_none_for_what_payrecon_settles() {
    let (orders, others) = (order_cases(), other_cases());
    for (finding, want) in orders.iter().chain(&others) {
        assert_eq!(problem_of(finding).as_deref(), *want, "{finding:?}");
    }
    // Two findings of one problem in a batch: one row, naming the latest payment.
    let batch = [
        orders[0].0.clone(),
        orders[1].0.clone(),
        others[0].0.clone(),
    ];
    let got = exception_findings(&batch);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].1.tx_hash.as_deref(), Some("0xb"));
}
