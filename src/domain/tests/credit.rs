//! Table tests of the amount rules (docs/configuration.md, "Amounts") in the planner: held
//! short payments, top-ups, payments split across one plan, the order a payment goes to,
//! tolerance, and credited payments seen again.

use super::reconcile::{kinds, obs, order, transfer, view};
use crate::domain::*;

pub(super) fn seen(t: &ChainTransfer) -> Observation {
    obs(ChainVerdict::Transfer(t.clone()), false)
}

pub(super) fn credited(t: &ChainTransfer) -> CreditedPayment {
    CreditedPayment {
        key: t.key.clone(),
        amount: t.amount,
        state: t.state,
        block: Some(t.block.clone()),
        block_time: None,
        gone: false,
    }
}

/// An unpaid order (id, due) holding these payments already (no key: short).
pub(super) fn partly_paid(id: i64, due: u64, parts: &[&ChainTransfer]) -> LedgerRow {
    let mut row = order(id, due, State::Unpaid, None);
    row.credits = parts.iter().map(|t| credited(t)).collect();
    let paid: u64 = parts.iter().map(|t| t.amount.to::<u64>()).sum();
    row.amount_paid = Some(U256::from(paid));
    row
}

#[test]
fn a_top_up_completes_a_partly_paid_order() {
    let first = transfer(1, 0, 20, State::Final);
    let top_up = transfer(2, 0, 5, State::Pending);
    let plan = reconcile(&[seen(&top_up)], &view(vec![partly_paid(1, 25, &[&first])]));
    assert_eq!(kinds(&plan), ["missing"]);
    let tr = &plan.transitions[0];
    assert_eq!((tr.from, tr.to), (State::Unpaid, State::Pending));
    let a = tr.attach.as_ref().unwrap();
    // Both in block 100: the top-up (log index 0 of tx 2) sorts with the first by index, so
    // the cover is completed by whichever comes later; here the top-up.
    assert_eq!(
        (a.amount, a.key.clone()),
        (U256::from(25), top_up.key.clone())
    );
    let c = tr.credit.as_ref().unwrap();
    assert_eq!(
        (c.paid_before, c.paid_after),
        (Some(U256::from(20)), U256::from(25))
    );
}

#[test]
fn two_payments_in_one_plan_cover_an_order_together() {
    let a = transfer(1, 0, 60, State::Final);
    let mut b = transfer(2, 0, 40, State::Confirmed);
    b.block.number = 120;
    let plan = reconcile(
        &[seen(&a), seen(&b)],
        &view(vec![order(1, 100, State::Unpaid, None)]),
    );
    // The first part is credited short, but the plan covers the order: no `held` finding.
    assert_eq!(kinds(&plan), ["missing"]);
    let steps: Vec<(State, State, Option<U256>, U256)> = plan
        .transitions
        .iter()
        .map(|t| {
            let c = t.credit.as_ref().unwrap();
            (t.from, t.to, c.paid_before, c.paid_after)
        })
        .collect();
    assert_eq!(
        steps,
        [
            (State::Unpaid, State::Unpaid, None, U256::from(60)),
            (
                State::Unpaid,
                State::Confirmed,
                Some(U256::from(60)),
                U256::from(100)
            ),
        ]
    );
    assert_eq!(plan.transitions[1].attach.as_ref().unwrap().key, b.key);
}

#[test]
fn the_later_block_bounds_the_state_whichever_is_credited_first() {
    // The part in the deeper block arrives second: the cover names the shallower one.
    let mut late = transfer(1, 0, 40, State::Pending);
    late.block.number = 190;
    let early = transfer(2, 0, 60, State::Final);
    let plan = reconcile(&[seen(&early)], &view(vec![partly_paid(1, 100, &[&late])]));
    let tr = &plan.transitions[0];
    assert_eq!(tr.to, State::Pending);
    assert_eq!(tr.attach.as_ref().unwrap().key, late.key);
    assert_eq!(tr.credit.as_ref().unwrap().key, early.key);
}

#[test]
fn a_payment_goes_to_the_order_it_completes_then_a_partly_paid_one_then_the_oldest() {
    let earlier = transfer(9, 0, 10, State::Final);
    // Orders 1 (oldest, untouched), 2 (partly paid 10 of 50), 3 (due 35, untouched).
    let rows = || {
        vec![
            order(1, 40, State::Unpaid, None),
            partly_paid(2, 50, &[&earlier]),
            order(3, 35, State::Unpaid, None),
        ]
    };
    let cases = [(40, 2), (35, 3), (7, 2), (50, 2)];
    for (amount, want) in cases {
        let t = transfer(1, 0, amount, State::Final);
        let plan = reconcile(&[seen(&t)], &view(rows()));
        assert_eq!(plan.transitions[0].order_id, want, "a payment of {amount}");
    }
    // With no partly paid order, the oldest.
    let t = transfer(1, 0, 7, State::Final);
    let plan = reconcile(
        &[seen(&t)],
        &view(vec![
            order(1, 40, State::Unpaid, None),
            order(3, 35, State::Unpaid, None),
        ]),
    );
    assert_eq!(plan.transitions[0].order_id, 1);
}

#[test]
fn tolerance_decides_at_its_edge() {
    let mut ledger = view(vec![order(1, 1_000, State::Unpaid, None)]);
    ledger.policy.tolerance = Tolerance::Share(50); // 0.5 % of 1,000 = 5
    for (amount, to, detail) in [
        (
            995,
            State::Final,
            "underpaid within tolerance: paid 995 of 1000, short 5",
        ),
        (
            994,
            State::Unpaid,
            "underpaid: paid 994 of 1000, short 6; held until covered",
        ),
    ] {
        let t = transfer(1, 0, amount, State::Final);
        let plan = reconcile(&[seen(&t)], &ledger);
        assert_eq!(plan.transitions[0].to, to, "{amount}");
        let f = plan
            .findings
            .iter()
            .find(|f| f.kind == GapKind::AmountMismatch)
            .unwrap();
        assert_eq!(f.detail, detail);
    }
    // A per-asset tolerance wins over the global one.
    let asset = ledger.unpaid.values().next().unwrap()[0].asset.clone();
    ledger
        .policy
        .per_asset
        .insert(format!("ethereum:{asset}"), Tolerance::None);
    let plan = reconcile(&[seen(&transfer(1, 0, 995, State::Final))], &ledger);
    assert_eq!(plan.transitions[0].to, State::Unpaid);
}

#[test]
fn a_credited_payment_seen_again_is_not_credited_twice() {
    let part = transfer(1, 0, 20, State::Final);
    let mut ledger = view(vec![]);
    ledger.insert_credited(part.key.clone(), partly_paid(1, 25, &[&part]));
    let plan = reconcile(&[seen(&part)], &ledger);
    assert!(plan.transitions.is_empty());
    assert_eq!(kinds(&plan), ["amount_mismatch"]);
    assert_eq!(plan.findings[0].outcome, Outcome::Decided(Action::Held));

    // Part of a paid order (not the payment its key names): nothing to do.
    let (a, b) = (
        transfer(1, 0, 60, State::Final),
        transfer(2, 0, 40, State::Pending),
    );
    let mut row = order(1, 100, State::Pending, Some(&b));
    row.amount_paid = Some(U256::from(100));
    let mut ledger = view(vec![row.clone()]);
    ledger.insert_credited(a.key.clone(), row);
    let plan = reconcile(&[seen(&a)], &ledger);
    assert_eq!(plan, Plan::default());
}

#[test]
fn a_short_payment_on_a_merchant_keyed_row_is_held_not_applied() {
    let t = transfer(1, 0, 20, State::Final);
    let row = order(1, 25, State::Unpaid, Some(&t));
    let plan = reconcile(&[seen(&t)], &view(vec![row]));
    assert!(plan.transitions.is_empty());
    assert_eq!(kinds(&plan), ["amount_mismatch"]);
}

#[test]
fn sums_past_u256_are_a_finding_not_a_panic() {
    let mut huge = transfer(1, 0, 0, State::Final);
    huge.amount = U256::MAX - U256::from(1);
    let mut row = order(1, 0, State::Unpaid, None);
    row.amount_due = U256::MAX;
    row.amount_paid = Some(huge.amount);
    row.credits = vec![credited(&huge)];
    let mut more = transfer(2, 0, 2, State::Final);
    more.block.number = 101;
    let plan = reconcile(&[seen(&more)], &view(vec![row]));
    assert!(plan.transitions.is_empty());
    assert_eq!(kinds(&plan), ["amount_mismatch"]);
    assert!(
        plan.findings[0].detail.contains("2^256"),
        "{}",
        plan.findings[0].detail
    );
}

#[test]
fn a_held_payment_re_included_elsewhere_is_reorged_not_credited_again() {
    let held = transfer(1, 0, 20, State::Final);
    let mut moved = held.clone();
    moved.key.log_index = 3;
    moved.block.hash = format!("0x{}", "ef".repeat(32));
    let plan = reconcile(&[seen(&moved)], &view(vec![partly_paid(1, 25, &[&held])]));
    assert!(plan.transitions.is_empty());
    assert_eq!(kinds(&plan), ["reorged"]);
    // Another transfer of the same transaction in the same block is a second payment.
    let mut second = held.clone();
    second.key.log_index = 3;
    second.amount = U256::from(5);
    let plan = reconcile(&[seen(&second)], &view(vec![partly_paid(1, 25, &[&held])]));
    assert_eq!(plan.transitions[0].to, State::Final);
}
