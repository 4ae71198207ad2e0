//! Table tests of the diff: every gap kind, orderings, backwards refusals.

use crate::domain::*;

pub(super) const TO: &str = "0x1111111111111111111111111111111111111111";
const TOKEN: &str = "0xdac17f958d2ee523a2206206994597c13d831ec7";

pub(super) fn hash(n: u8) -> TxHash {
    TxHash::parse(&format!("0x{}", format!("{n:02x}").repeat(32))).unwrap()
}

pub(super) fn transfer(n: u8, log_index: i64, amount: u64, state: State) -> ChainTransfer {
    ChainTransfer {
        key: PaymentKey {
            chain: "ethereum".into(),
            tx_hash: hash(n),
            log_index,
        },
        to: Address::parse(TO).unwrap(),
        asset: Asset::parse(TOKEN).unwrap(),
        amount: U256::from(amount),
        block: BlockRef {
            number: 100,
            hash: format!("0x{}", "cd".repeat(32)),
        },
        state,
        block_time: None,
    }
}

pub(super) fn obs(verdict: ChainVerdict, failed: bool) -> Observation {
    let tx_hash = match &verdict {
        ChainVerdict::Transfer(t) => t.key.tx_hash.clone(),
        _ => hash(0xee),
    };
    Observation {
        provider: "cg".into(),
        chain: "ethereum".into(),
        tx_hash,
        notification_id: Some("n1".into()),
        failed,
        order_ref: None,
        infer_failed: false,
        record_time: None,
        verdict,
    }
}

pub(super) fn order(id: i64, due: u64, state: State, key: Option<&ChainTransfer>) -> LedgerRow {
    LedgerRow {
        id,
        order_ref: format!("A-{id}"),
        chain: "ethereum".into(),
        pay_to: Address::parse(TO).unwrap(),
        asset: Asset::parse(TOKEN).unwrap(),
        amount_due: U256::from(due),
        key: key.map(|t| t.key.clone()),
        amount_paid: key.map(|t| t.amount),
        block: key.map(|t| t.block.clone()),
        state,
        credits: Vec::new(),
        expires_at: None,
        merchant_key: false,
    }
}

pub(super) fn view(rows: Vec<LedgerRow>) -> LedgerView {
    let mut v = LedgerView::default();
    for r in rows {
        if r.key.is_some() {
            v.insert_keyed(r);
        } else if r.state == State::Unpaid {
            v.insert_unpaid(r);
        }
    }
    v
}

pub(super) fn kinds(plan: &Plan) -> Vec<&'static str> {
    plan.findings.iter().map(|f| f.kind.as_str()).collect()
}

#[test]
fn missing_payment_is_attached_to_the_unpaid_order() {
    let t = transfer(1, 7, 25, State::Final);
    let plan = reconcile(
        &[obs(ChainVerdict::Transfer(t.clone()), false)],
        &view(vec![order(1, 25, State::Unpaid, None)]),
    );
    assert_eq!(kinds(&plan), ["missing"]);
    assert_eq!(plan.transitions.len(), 1);
    let tr = &plan.transitions[0];
    assert_eq!(
        (tr.from, tr.to, tr.order_id),
        (State::Unpaid, State::Final, 1)
    );
    assert_eq!(tr.attach.as_ref().unwrap().key, t.key);
}

#[test]
fn lagging_payment_moves_forward_only() {
    let t = transfer(1, 7, 25, State::Confirmed);
    let plan = reconcile(
        &[obs(ChainVerdict::Transfer(t.clone()), false)],
        &view(vec![order(1, 25, State::Pending, Some(&t))]),
    );
    assert_eq!(kinds(&plan), ["lagging"]);
    assert_eq!(
        (plan.transitions[0].from, plan.transitions[0].to),
        (State::Pending, State::Confirmed)
    );
    assert!(plan.transitions[0].attach.is_none());
}

#[test]
fn observed_state_behind_the_ledger_is_refused_not_a_gap() {
    let t = transfer(1, 7, 25, State::Pending);
    let plan = reconcile(
        &[obs(ChainVerdict::Transfer(t.clone()), false)],
        &view(vec![order(1, 25, State::Final, Some(&t))]),
    );
    assert!(plan.findings.is_empty());
    assert!(plan.transitions.is_empty());
    assert_eq!(plan.refused_backwards.len(), 1);
}

#[test]
fn equal_state_is_nothing_to_do() {
    let t = transfer(1, 7, 25, State::Final);
    let plan = reconcile(
        &[obs(ChainVerdict::Transfer(t.clone()), false)],
        &view(vec![order(1, 25, State::Final, Some(&t))]),
    );
    assert_eq!(plan, Plan::default());
}

#[test]
fn an_overpayment_advances_and_an_underpayment_is_held() {
    let t = transfer(1, 7, 30, State::Confirmed);
    let plan = reconcile(
        &[obs(ChainVerdict::Transfer(t), false)],
        &view(vec![order(1, 25, State::Unpaid, None)]),
    );
    assert_eq!(kinds(&plan), ["missing", "amount_mismatch"]);
    assert_eq!(plan.findings[1].detail, "overpaid: paid 30 of 25, excess 5");
    assert_eq!(plan.findings[1].outcome, Outcome::Transition(0));
    assert_eq!(plan.transitions[0].to, State::Confirmed);
    assert_eq!(
        plan.transitions[0].attach.as_ref().unwrap().amount,
        U256::from(30)
    );

    let t = transfer(1, 7, 20, State::Final);
    let plan = reconcile(
        &[obs(ChainVerdict::Transfer(t.clone()), false)],
        &view(vec![order(1, 25, State::Unpaid, None)]),
    );
    assert_eq!(kinds(&plan), ["amount_mismatch"]);
    assert_eq!(plan.findings[0].outcome, Outcome::Decided(Action::Held));
    assert_eq!(
        plan.findings[0].detail,
        "underpaid: paid 20 of 25, short 5; held until covered"
    );
    let tr = &plan.transitions[0];
    assert_eq!(
        (tr.from, tr.to, tr.attach.is_none()),
        (State::Unpaid, State::Unpaid, true)
    );
    let credit = tr.credit.as_ref().unwrap();
    assert_eq!(
        (credit.key.clone(), credit.paid_before, credit.paid_after),
        (t.key, None, U256::from(20))
    );
}

#[test]
fn stray_reverted_and_absent_payments_credit_nothing() {
    let stray = transfer(1, 7, 25, State::Final);
    for verdict in [
        ChainVerdict::Transfer(stray),
        ChainVerdict::Reverted,
        ChainVerdict::NotFound,
        ChainVerdict::NoTransfer("only an ERC-721 transfer".into()),
    ] {
        // the only unpaid order waits at another address
        let mut other = order(1, 25, State::Unpaid, None);
        other.pay_to = Address::parse("0x2222222222222222222222222222222222222222").unwrap();
        let plan = reconcile(&[obs(verdict.clone(), false)], &view(vec![other]));
        assert_eq!(kinds(&plan), ["unknown_payment"], "{verdict:?}");
        assert!(plan.transitions.is_empty());
    }
}

#[test]
fn exact_amount_is_preferred_then_the_oldest_and_no_order_gets_two_payments() {
    let a = transfer(1, 3, 30, State::Pending);
    let b = transfer(1, 4, 25, State::Pending);
    let c = transfer(2, 0, 99, State::Pending);
    let ledger = view(vec![
        order(1, 25, State::Unpaid, None),
        order(2, 30, State::Unpaid, None),
    ]);
    let plan = reconcile(
        &[
            obs(ChainVerdict::Transfer(a), false),
            obs(ChainVerdict::Transfer(b), false),
            obs(ChainVerdict::Transfer(c), false),
        ],
        &ledger,
    );
    let attached: Vec<(i64, i64)> = plan
        .transitions
        .iter()
        .map(|t| (t.order_id, t.attach.as_ref().unwrap().key.log_index))
        .collect();
    assert_eq!(attached, [(2, 3), (1, 4)]);
    assert_eq!(kinds(&plan), ["missing", "missing", "unknown_payment"]);
}

#[test]
fn a_payment_seen_twice_in_a_batch_is_planned_once() {
    let t = transfer(1, 7, 25, State::Final);
    let ledger = view(vec![
        order(1, 25, State::Unpaid, None),
        order(2, 25, State::Unpaid, None),
    ]);
    let o = obs(ChainVerdict::Transfer(t), false);
    let plan = reconcile(&[o.clone(), o], &ledger);
    assert_eq!(plan.transitions.len(), 1);
}

#[test]
fn failed_notification_requests_a_resend_and_still_applies() {
    let t = transfer(1, 7, 25, State::Confirmed);
    let plan = reconcile(
        &[obs(ChainVerdict::Transfer(t), true)],
        &view(vec![order(1, 25, State::Unpaid, None)]),
    );
    assert_eq!(kinds(&plan), ["failed_notification", "missing"]);
    assert_eq!(
        plan.resends,
        [ResendRequest {
            chain: "ethereum".into(),
            notification_id: "n1".into(),
            record_time: None,
        }]
    );
    assert_eq!(plan.findings[0].outcome, Outcome::Resend(0));
    assert_eq!(plan.findings[0].order_ref.as_deref(), Some("A-1"));
    assert_eq!(plan.transitions.len(), 1);
}

#[test]
fn a_held_payment_whose_transaction_is_gone_or_reverts_is_reorged_not_unknown() {
    // The ledger holds a payment of tx 0xee.. (the hash `obs` gives non-transfer verdicts).
    let mut held = transfer(0xee, 5, 25, State::Pending);
    held.key.tx_hash = hash(0xee);
    for verdict in [ChainVerdict::NotFound, ChainVerdict::Reverted] {
        let row = order(1, 25, State::Pending, Some(&held));
        let plan = reconcile(&[obs(verdict.clone(), false)], &view(vec![row]));
        assert_eq!(kinds(&plan), ["reorged"], "{verdict:?}");
        let f = &plan.findings[0];
        assert_eq!(f.order_ref.as_deref(), Some("A-1"));
        assert_eq!(
            (f.log_index, f.local_state),
            (Some(5), Some(State::Pending))
        );
        assert!(plan.transitions.is_empty() && plan.refused_backwards.is_empty());
    }
    // A receipt that still exists but pays someone else is not about the held payment.
    let row = order(1, 25, State::Pending, Some(&held));
    let verdict = ChainVerdict::NoTransfer("no matching transfer".into());
    let plan = reconcile(&[obs(verdict, false)], &view(vec![row]));
    assert_eq!(kinds(&plan), ["unknown_payment"]);
}

#[test]
fn a_held_payment_seen_in_another_block_is_reorged_and_not_moved() {
    let seen = transfer(1, 7, 25, State::Confirmed);
    let mut recorded = seen.clone();
    recorded.block.hash = format!("0x{}", "ab".repeat(32));
    let row = order(1, 25, State::Pending, Some(&recorded));
    let plan = reconcile(
        &[obs(ChainVerdict::Transfer(seen.clone()), false)],
        &view(vec![row]),
    );
    assert_eq!(kinds(&plan), ["reorged"]);
    assert!(plan.transitions.is_empty());
    assert_eq!(plan.findings[0].observed_state, Some(State::Confirmed));
    // A row whose handler never recorded a block hash is not a reorg.
    let mut unrecorded = seen.clone();
    unrecorded.block.hash = String::new();
    let row = order(1, 25, State::Pending, Some(&unrecorded));
    let plan = reconcile(
        &[obs(ChainVerdict::Transfer(seen), false)],
        &view(vec![row]),
    );
    assert_eq!(kinds(&plan), ["lagging"]);
}
