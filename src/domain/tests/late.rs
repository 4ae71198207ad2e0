//! Table tests of the amount rules in the planner, continued: late payments (held, or counted
//! with `late_payments = "accept"`), keys the merchant wrote, and payments gone from the chain.

use super::credit::{credited, partly_paid, seen};
use super::reconcile::{kinds, order, transfer, view};
use crate::domain::*;

fn at(secs: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_800_000_000 + secs).unwrap()
}

/// A transfer `n` of `amount` in a block of time `at(secs)`.
fn timed(n: u8, amount: u64, secs: i64) -> ChainTransfer {
    let mut t = transfer(n, 0, amount, State::Final);
    t.block.number = 100 + u64::from(n);
    t.block_time = Some(at(secs));
    t
}

#[test]
fn a_late_payment_is_credited_and_held_or_accepted() {
    let mut row = order(1, 25, State::Unpaid, None);
    row.expires_at = Some(at(0));
    let late = timed(1, 25, 60);
    let plan = reconcile(&[seen(&late)], &view(vec![row.clone()]));
    assert_eq!(kinds(&plan), ["late_payment"]);
    assert_eq!(plan.findings[0].outcome, Outcome::Decided(Action::Held));
    let tr = &plan.transitions[0];
    assert_eq!((tr.to, tr.attach.is_none()), (State::Unpaid, true));
    let c = tr.credit.as_ref().unwrap();
    assert!(c.held_late);
    assert_eq!(c.paid_after, U256::from(25));

    // On time (at the second it expires): paid.
    let plan = reconcile(&[seen(&timed(1, 25, 0))], &view(vec![row.clone()]));
    assert_eq!(kinds(&plan), ["missing"]);

    // Accepted: counted, flagged, applied.
    let mut ledger = view(vec![row.clone()]);
    ledger.policy.accept_late = true;
    let plan = reconcile(&[seen(&late)], &ledger);
    assert_eq!(kinds(&plan), ["late_payment", "missing"]);
    assert_eq!(plan.findings[0].outcome, Outcome::Transition(0));
    assert_eq!(plan.transitions[0].to, State::Final);

    // An order that expires, and no block time: the payment waits.
    let mut untimed = late.clone();
    untimed.block_time = None;
    let plan = reconcile(&[seen(&untimed)], &view(vec![row]));
    assert_eq!(plan, Plan::default());
}

/// A payment late and short is both problems: `late_payment` and `amount_mismatch`, each
/// held, each detail naming what was paid and what is due; seen again, the same two.
#[test]
fn a_late_and_short_payment_is_held_for_both_problems() {
    let mut row = order(1, 25, State::Unpaid, None);
    row.expires_at = Some(at(0));
    let late = timed(1, 20, 60);
    let plan = reconcile(&[seen(&late)], &view(vec![row.clone()]));
    assert_eq!(kinds(&plan), ["late_payment", "amount_mismatch"]);
    for f in &plan.findings {
        assert_eq!(f.outcome, Outcome::Decided(Action::Held), "{f:?}");
        assert!(f.detail.contains("paid 20 of 25"), "{}", f.detail);
    }
    assert!(plan.findings[1].detail.contains("short 5"));
    assert_eq!(plan.transitions[0].to, State::Unpaid);
    // Late but in full: one problem only.
    let plan = reconcile(&[seen(&timed(1, 25, 60))], &view(vec![row.clone()]));
    assert_eq!(kinds(&plan), ["late_payment"]);
    // Seen again once credited: still both.
    let mut held = row.clone();
    held.credits.push(CreditedPayment {
        block_time: late.block_time,
        ..credited(&late)
    });
    held.amount_paid = Some(U256::from(20));
    let mut ledger = view(vec![]);
    ledger.insert_credited(late.key.clone(), held);
    let plan = reconcile(&[seen(&late)], &ledger);
    assert!(plan.transitions.is_empty());
    assert_eq!(kinds(&plan), ["late_payment", "amount_mismatch"]);
    // On a keyed unpaid row too.
    let mut keyed = order(1, 25, State::Unpaid, Some(&late));
    keyed.expires_at = Some(at(0));
    let plan = reconcile(&[seen(&late)], &view(vec![keyed]));
    assert_eq!(kinds(&plan), ["late_payment", "amount_mismatch"]);
}

#[test]
fn a_late_top_up_never_completes_an_order_held() {
    let early = timed(1, 20, -60);
    let mut row = partly_paid(1, 25, &[&early]);
    row.credits[0].block_time = early.block_time;
    row.expires_at = Some(at(0));
    let plan = reconcile(&[seen(&timed(2, 5, 60))], &view(vec![row.clone()]));
    assert_eq!(plan.transitions[0].to, State::Unpaid);
    assert_eq!(
        plan.transitions[0].credit.as_ref().unwrap().paid_after,
        U256::from(25)
    );
    assert_eq!(kinds(&plan), ["late_payment"]);
    // Seen again once credited: held for being late.
    let mut held = row.clone();
    let top = timed(2, 5, 60);
    held.credits.push(CreditedPayment {
        block_time: top.block_time,
        ..credited(&top)
    });
    held.amount_paid = Some(U256::from(25));
    let mut ledger = view(vec![]);
    ledger.insert_credited(top.key.clone(), held);
    let plan = reconcile(&[seen(&top)], &ledger);
    assert!(plan.transitions.is_empty());
    assert_eq!(kinds(&plan), ["late_payment"]);
}

#[test]
fn a_held_payment_moved_by_a_reorg_is_not_credited_again_by_its_order_ref() {
    let held = transfer(1, 0, 20, State::Final);
    let mut moved = held.clone();
    moved.key.log_index = 3;
    moved.block.hash = format!("0x{}", "ef".repeat(32));
    let mut o = seen(&moved);
    o.order_ref = Some("A-1".into());
    let mut ledger = view(vec![]);
    ledger
        .by_ref
        .insert("A-1".into(), partly_paid(1, 25, &[&held]));
    let plan = reconcile(&[o], &ledger);
    assert!(plan.transitions.is_empty(), "{plan:?}");
    assert_eq!(kinds(&plan), ["reorged"]);
}

/// A key the merchant's own code wrote into `orders` (no payment row yet).
fn merchant_keyed(due: u64, state: State, t: &ChainTransfer) -> LedgerRow {
    let mut row = order(1, due, state, Some(t));
    row.merchant_key = true;
    row.amount_paid = None;
    row
}

#[test]
fn a_merchant_written_key_gets_its_payment_row_from_the_chain() {
    // Written `pending`, final on chain: moved, and credited with the chain's amount.
    let t = transfer(1, 0, 25, State::Final);
    let plan = reconcile(
        &[seen(&t)],
        &view(vec![merchant_keyed(25, State::Pending, &t)]),
    );
    assert_eq!(kinds(&plan), ["lagging"]);
    let tr = &plan.transitions[0];
    assert_eq!((tr.from, tr.to), (State::Pending, State::Final));
    let c = tr.credit.as_ref().unwrap();
    assert!(c.merchant);
    assert_eq!(
        (c.amount, c.state, c.paid_before),
        (U256::from(25), State::Final, None)
    );
    let a = tr.attach.as_ref().unwrap();
    assert_eq!((&a.key, a.amount), (&t.key, U256::from(25)));

    // Written `final` and final on chain: a step that moves nothing, only the payment row.
    let plan = reconcile(
        &[seen(&t)],
        &view(vec![merchant_keyed(25, State::Final, &t)]),
    );
    assert!(plan.findings.is_empty(), "{:?}", plan.findings);
    let tr = &plan.transitions[0];
    assert_eq!((tr.from, tr.to), (State::Final, State::Final));
    assert!(tr.credit.as_ref().unwrap().merchant);

    // Written `final`, pending on chain: refused backwards, and the row still recorded.
    let p = transfer(1, 0, 25, State::Pending);
    let plan = reconcile(
        &[seen(&p)],
        &view(vec![merchant_keyed(25, State::Final, &t)]),
    );
    assert_eq!(plan.refused_backwards.len(), 1);
    let tr = &plan.transitions[0];
    assert_eq!(tr.to, State::Final);
    assert_eq!(tr.credit.as_ref().unwrap().state, State::Pending);

    // Once recorded (`merchant_key` false), the same sighting plans nothing.
    let mut row = merchant_keyed(25, State::Final, &t);
    row.merchant_key = false;
    assert_eq!(reconcile(&[seen(&t)], &view(vec![row])), Plan::default());
}

#[test]
fn a_merchant_written_key_left_unpaid_follows_the_cover_rule() {
    let short = transfer(1, 0, 20, State::Final);
    let plan = reconcile(
        &[seen(&short)],
        &view(vec![merchant_keyed(25, State::Unpaid, &short)]),
    );
    assert_eq!(kinds(&plan), ["amount_mismatch"]);
    assert_eq!(plan.findings[0].outcome, Outcome::Decided(Action::Held));
    let tr = &plan.transitions[0];
    assert_eq!((tr.to, tr.attach.is_none()), (State::Unpaid, true));
    assert_eq!(tr.credit.as_ref().unwrap().paid_after, U256::from(20));

    let full = transfer(1, 0, 25, State::Confirmed);
    let plan = reconcile(
        &[seen(&full)],
        &view(vec![merchant_keyed(25, State::Unpaid, &full)]),
    );
    assert_eq!(plan.transitions[0].to, State::Confirmed);
    assert!(plan.transitions[0].credit.as_ref().unwrap().merchant);
}

#[test]
fn a_late_payment_on_a_keyed_unpaid_row_is_held() {
    let late = timed(1, 25, 60);
    for merchant in [true, false] {
        let mut row = order(1, 25, State::Unpaid, Some(&late));
        row.merchant_key = merchant;
        row.expires_at = Some(at(0));
        let plan = reconcile(&[seen(&late)], &view(vec![row.clone()]));
        assert_eq!(kinds(&plan), ["late_payment"], "merchant key: {merchant}");
        assert_eq!(plan.findings[0].outcome, Outcome::Decided(Action::Held));
        assert!(plan.transitions.iter().all(|t| t.to == State::Unpaid));
        assert_eq!(plan.transitions.len(), usize::from(merchant));
        // Accepted: it counts.
        let mut ledger = view(vec![row]);
        ledger.policy.accept_late = true;
        let plan = reconcile(&[seen(&late)], &ledger);
        assert_eq!(plan.transitions[0].to, State::Final);
        assert_eq!(plan.findings[0].outcome, Outcome::Transition(0));
    }
}

#[test]
fn a_payment_gone_from_the_chain_counts_toward_nothing_until_it_is_back() {
    let first = transfer(1, 0, 20, State::Final);
    let mut row = partly_paid(1, 25, &[&first]);
    row.credits[0].gone = true;
    row.amount_paid = Some(U256::ZERO);
    // A top-up of the rest: short without the gone part, held.
    let mut top = transfer(2, 0, 5, State::Final);
    top.block.number = 101;
    let plan = reconcile(&[seen(&top)], &view(vec![row.clone()]));
    assert_eq!(kinds(&plan), ["amount_mismatch"]);
    let tr = &plan.transitions[0];
    assert_eq!(tr.to, State::Unpaid);
    let c = tr.credit.as_ref().unwrap();
    assert_eq!(
        (c.paid_before, c.paid_after),
        (Some(U256::ZERO), U256::from(5))
    );

    // Back on chain (the sweep cleared the flag): both credited, seen again through either,
    // the order moves, keyed by the later one.
    let mut back = partly_paid(1, 25, &[&first, &top]);
    back.credits[1].block = Some(top.block.clone());
    let mut ledger = view(vec![]);
    ledger.insert_credited(first.key.clone(), back.clone());
    let plan = reconcile(&[seen(&first)], &ledger);
    assert_eq!(kinds(&plan), ["lagging"]);
    let tr = &plan.transitions[0];
    assert_eq!((tr.from, tr.to), (State::Unpaid, State::Final));
    let a = tr.attach.as_ref().unwrap();
    assert_eq!((&a.key, a.amount), (&top.key, U256::from(25)));
    assert!(tr.credit.is_none());

    // Still gone: held again, nothing moves.
    back.credits[0].gone = true;
    let mut ledger = view(vec![]);
    ledger.insert_credited(top.key.clone(), back);
    let plan = reconcile(&[seen(&top)], &ledger);
    assert!(plan.transitions.is_empty());
    assert_eq!(kinds(&plan), ["amount_mismatch"]);
}

#[test]
fn a_top_up_past_the_largest_amount_the_database_keeps_is_a_finding_not_a_credit() {
    // Each payment fits the database (MariaDB's DECIMAL(65,0) here: 99 as its stand-in);
    // their sum does not.
    let first = transfer(1, 0, 90, State::Final);
    let top_up = transfer(2, 0, 10, State::Pending);
    let mut v = view(vec![partly_paid(1, 95, &[&first])]);
    v.policy.max_paid = Some(U256::from(99));
    let plan = reconcile(&[seen(&top_up)], &v);
    assert!(plan.transitions.is_empty(), "{:?}", plan.transitions);
    assert_eq!(kinds(&plan), ["amount_mismatch"]);
    assert!(
        plan.findings[0]
            .detail
            .contains("more than the database keeps (99 base units)"),
        "{}",
        plan.findings[0].detail
    );
    // Where the sum fits, the same top-up completes the order.
    v.policy.max_paid = Some(U256::from(100));
    let plan = reconcile(&[seen(&top_up)], &v);
    assert_eq!(plan.transitions[0].to, State::Pending);
    assert_eq!(
        plan.transitions[0].credit.as_ref().unwrap().paid_after,
        U256::from(100)
    );
}
