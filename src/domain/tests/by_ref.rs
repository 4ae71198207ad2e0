//! Table tests of records matched by `order_ref`: payments attributed to an order, and
//! status-only records (docs/configuration.md, "The generic provider"), with inferred failed
//! notifications.

use crate::domain::*;

const TO: &str = "0x1111111111111111111111111111111111111111";
const OTHER: &str = "0x2222222222222222222222222222222222222222";
const TOKEN: &str = "0xdac17f958d2ee523a2206206994597c13d831ec7";

fn transfer(n: u8, amount: u64, state: State) -> ChainTransfer {
    ChainTransfer {
        key: PaymentKey {
            chain: "ethereum".into(),
            tx_hash: TxHash::parse(&format!("0x{}", format!("{n:02x}").repeat(32))).unwrap(),
            log_index: 3,
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

fn order(id: i64, pay_to: &str, state: State) -> LedgerRow {
    LedgerRow {
        id,
        order_ref: format!("A-{id}"),
        chain: "ethereum".into(),
        pay_to: Address::parse(pay_to).unwrap(),
        asset: Asset::parse(TOKEN).unwrap(),
        amount_due: U256::from(25u64),
        key: None,
        amount_paid: None,
        block: None,
        state,
        credits: Vec::new(),
        expires_at: None,
        merchant_key: false,
    }
}

fn view(rows: Vec<LedgerRow>) -> LedgerView {
    let mut v = LedgerView::default();
    for r in rows {
        if r.state == State::Unpaid {
            v.insert_unpaid(r.clone());
        }
        v.by_ref.insert(r.order_ref.clone(), r);
    }
    v
}

fn obs(t: &ChainTransfer, order_ref: Option<&str>, infer_failed: bool) -> Observation {
    Observation {
        provider: "qvard".into(),
        chain: "ethereum".into(),
        tx_hash: t.key.tx_hash.clone(),
        notification_id: order_ref.map(String::from),
        failed: false,
        order_ref: order_ref.map(String::from),
        infer_failed,
        record_time: None,
        verdict: ChainVerdict::Transfer(t.clone()),
    }
}

fn claim(order_ref: &str, state: State, failed: bool) -> Claim {
    Claim {
        provider: "qvard".into(),
        chain: "ethereum".into(),
        order_ref: order_ref.into(),
        state,
        notification_id: Some(format!("evt-{order_ref}")),
        failed,
        infer_failed: false,
        record_time: None,
    }
}

fn kinds(plan: &Plan) -> Vec<&'static str> {
    plan.findings.iter().map(|f| f.kind.as_str()).collect()
}

#[test]
fn a_named_order_takes_the_payment_before_an_older_one_at_the_same_address() {
    let t = transfer(1, 25, State::Final);
    let plan = reconcile(
        &[obs(&t, Some("A-2"), false)],
        &view(vec![
            order(1, TO, State::Unpaid),
            order(2, TO, State::Unpaid),
        ]),
    );
    assert_eq!(kinds(&plan), ["missing"]);
    assert_eq!(plan.transitions[0].order_id, 2);
    assert_eq!(plan.transitions[0].attach.as_ref().unwrap().key, t.key);
}

#[test]
fn a_named_order_at_another_address_is_not_credited() {
    let t = transfer(1, 25, State::Final);
    // Only order 1 (another deposit address) is named; nothing waits at TO.
    let plan = reconcile(
        &[obs(&t, Some("A-1"), false)],
        &view(vec![order(1, OTHER, State::Unpaid)]),
    );
    assert!(plan.transitions.is_empty());
    assert_eq!(kinds(&plan), ["unknown_payment"]);
}

#[test]
fn an_order_advanced_by_status_gets_its_key_without_a_transition() {
    let t = transfer(1, 25, State::Confirmed);
    let plan = reconcile(
        &[obs(&t, Some("A-1"), false)],
        &view(vec![order(1, TO, State::Final)]),
    );
    assert!(plan.findings.is_empty(), "{:?}", plan.findings);
    let tr = &plan.transitions[0];
    assert_eq!((tr.from, tr.to), (State::Final, State::Final));
    assert_eq!(tr.attach.as_ref().unwrap().key, t.key);
    // And moves forward when the chain is ahead of the provider's status.
    let plan = reconcile(
        &[obs(&transfer(1, 25, State::Final), Some("A-1"), false)],
        &view(vec![order(1, TO, State::Pending)]),
    );
    assert_eq!(kinds(&plan), ["lagging"]);
    assert_eq!(plan.transitions[0].to, State::Final);
}

#[test]
fn a_record_that_moves_the_ledger_infers_an_undelivered_notification() {
    let t = transfer(1, 25, State::Final);
    let plan = reconcile(
        &[obs(&t, Some("A-1"), true)],
        &view(vec![order(1, TO, State::Unpaid)]),
    );
    assert_eq!(kinds(&plan), ["missing", "failed_notification"]);
    assert_eq!(plan.resends.len(), 1);
    assert_eq!(plan.resends[0].notification_id, "A-1");
    assert_eq!(plan.findings[1].outcome, Outcome::Resend(0));
    // Nothing moved: nothing inferred.
    let mut held = order(1, TO, State::Final);
    held.key = Some(t.key.clone());
    held.block = Some(t.block.clone());
    let mut v = LedgerView::default();
    v.insert_keyed(held);
    let plan = reconcile(&[obs(&t, Some("A-1"), true)], &v);
    assert!(plan.findings.is_empty() && plan.resends.is_empty());
}

#[test]
fn claims_apply_the_provider_status_forward_only() {
    let v = view(vec![
        order(1, TO, State::Unpaid),
        order(2, TO, State::Pending),
        order(3, TO, State::Final),
    ]);
    let plan = reconcile_claims(
        &[
            claim("A-1", State::Final, false),
            claim("A-2", State::Final, false),
            claim("A-3", State::Pending, false),
            claim("A-9", State::Final, false),
            claim("A-1", State::Confirmed, false),
        ],
        &v,
    );
    assert_eq!(kinds(&plan), ["missing", "lagging", "unknown_payment"]);
    let moves: Vec<_> = plan
        .transitions
        .iter()
        .map(|t| (t.order_id, t.from, t.to, t.attach.is_some()))
        .collect();
    assert_eq!(
        moves,
        [
            (1, State::Unpaid, State::Final, false),
            (2, State::Pending, State::Final, false)
        ]
    );
    assert_eq!(plan.refused_backwards.len(), 1);
    assert_eq!(plan.refused_backwards[0].order_ref, "A-3");
}

#[test]
fn a_failed_claim_is_resent_and_applied() {
    let plan = reconcile_claims(
        &[claim("A-1", State::Confirmed, true)],
        &view(vec![order(1, TO, State::Unpaid)]),
    );
    assert_eq!(kinds(&plan), ["failed_notification", "missing"]);
    assert_eq!(plan.resends[0].notification_id, "evt-A-1");
    assert_eq!(plan.transitions[0].to, State::Confirmed);
}

#[test]
fn appended_plans_keep_their_outcomes_pointing_at_their_own_entries() {
    let t = transfer(1, 25, State::Final);
    let mut plan = reconcile(
        &[obs(&t, Some("A-1"), true)],
        &view(vec![order(1, TO, State::Unpaid)]),
    );
    plan.append(reconcile_claims(
        &[claim("A-2", State::Final, true)],
        &view(vec![order(2, TO, State::Unpaid)]),
    ));
    assert_eq!(plan.transitions.len(), 2);
    assert_eq!(plan.resends.len(), 2);
    let last = plan.findings.last().unwrap();
    assert_eq!(last.outcome, Outcome::Transition(1));
    let failed: Vec<_> = plan
        .findings
        .iter()
        .filter(|f| f.kind == GapKind::FailedNotification)
        .map(|f| f.outcome)
        .collect();
    assert_eq!(failed, [Outcome::Resend(0), Outcome::Resend(1)]);
}

#[test]
fn attaching_a_key_infers_no_undelivered_notification() {
    // The order is already final (its webhook arrived): the list's record only attaches the key.
    let t = transfer(1, 25, State::Final);
    let plan = reconcile(
        &[obs(&t, Some("A-1"), true)],
        &view(vec![order(1, TO, State::Final)]),
    );
    assert_eq!(plan.transitions.len(), 1);
    assert!(plan.findings.is_empty(), "{:?}", plan.findings);
    assert!(plan.resends.is_empty());
}
