//! Where a swept payment is after a reorg: same block, re-included, gone.

use super::*;
use crate::domain::{Address, Asset, State, TxHash, U256};

const TO: &str = "0x1111111111111111111111111111111111111111";
const OTHER: &str = "0x2222222222222222222222222222222222222222";
const TOKEN: &str = "0xdac17f958d2ee523a2206206994597c13d831ec7";

fn block(n: u64, h: &str) -> BlockRef {
    BlockRef {
        number: n,
        hash: format!("0x{}", h.repeat(32)),
    }
}

fn transfer(li: i64, to: &str, amount: u64, b: BlockRef) -> ChainTransfer {
    ChainTransfer {
        key: PaymentKey {
            chain: "ethereum".into(),
            tx_hash: TxHash::parse(&format!("0x{}", "ab".repeat(32))).unwrap(),
            log_index: li,
        },
        to: Address::parse(to).unwrap(),
        asset: Asset::parse(TOKEN).unwrap(),
        amount: U256::from(amount),
        block: b,
        state: State::Pending,
        block_time: None,
    }
}

fn row(t: &ChainTransfer, b: Option<BlockRef>) -> LedgerRow {
    LedgerRow {
        id: 1,
        order_ref: "A-1".into(),
        chain: "ethereum".into(),
        pay_to: Address::parse(TO).unwrap(),
        asset: Asset::parse(TOKEN).unwrap(),
        amount_due: t.amount,
        key: Some(t.key.clone()),
        amount_paid: Some(t.amount),
        block: b,
        state: State::Confirmed,
        credits: Vec::new(),
        expires_at: None,
        merchant_key: false,
    }
}

#[test]
fn same_block_is_same() {
    let t = transfer(3, TO, 10, block(100, "aa"));
    let r = row(&t, Some(t.block.clone()));
    let got = place(&r, &Receipt::Transfers(vec![t.clone()]), &HashSet::new());
    assert_eq!(got, Placement::Same(t));
}

#[test]
fn reincluded_at_another_log_index_is_moved_to_the_matching_transfer() {
    let old = transfer(3, TO, 10, block(100, "aa"));
    let r = row(&old, Some(old.block.clone()));
    let b = block(102, "bb");
    let stranger = transfer(3, OTHER, 10, b.clone());
    let wrong_amount = transfer(4, TO, 11, b.clone());
    let ours = transfer(5, TO, 10, b.clone());
    let receipt = Receipt::Transfers(vec![stranger, wrong_amount, ours.clone()]);
    match place(&r, &receipt, &HashSet::new()) {
        Placement::Moved { from, to } => {
            assert_eq!(from, old.block);
            assert_eq!(to, ours);
            let d = moved_detail(&old.key, &from, &to);
            assert!(d.contains("block 100") && d.contains("block 102"), "{d}");
            assert!(
                d.contains("log index 3") && d.contains("log index 5"),
                "{d}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_matching_transfer_held_by_another_row_is_not_taken() {
    let old = transfer(3, TO, 10, block(100, "aa"));
    let r = row(&old, Some(old.block.clone()));
    let ours = transfer(5, TO, 10, block(102, "bb"));
    let taken: HashSet<_> = [ours.key.clone()].into();
    let got = place(&r, &Receipt::Transfers(vec![ours]), &taken);
    assert!(matches!(got, Placement::Gone(_)), "{got:?}");
}

#[test]
fn gone_and_unrecorded() {
    let t = transfer(3, TO, 10, block(100, "aa"));
    let r = row(&t, Some(t.block.clone()));
    let gone = place(&r, &Receipt::Gone("no receipt".into()), &HashSet::new());
    assert_eq!(gone, Placement::Gone("no receipt".into()));
    // No recorded block: the transfer at the key, if it is the same payment, is not a reorg.
    let r = row(&t, None);
    let got = place(&r, &Receipt::Transfers(vec![t.clone()]), &HashSet::new());
    assert_eq!(got, Placement::Unrecorded(t.clone()));
    // ... but a transfer to someone else at that key is not this payment.
    let stranger = transfer(3, OTHER, 10, block(100, "aa"));
    let got = place(&r, &Receipt::Transfers(vec![stranger]), &HashSet::new());
    assert!(matches!(got, Placement::Gone(_)), "{got:?}");
}

#[test]
fn provider_path_never_attaches_a_moved_held_payment_to_another_unpaid_order() {
    use crate::domain::{reconcile, ChainVerdict, LedgerView, Observation};
    let old = transfer(3, TO, 10, block(100, "aa"));
    let held = row(&old, Some(old.block.clone()));
    let mut waiting = row(&old, None);
    (waiting.id, waiting.order_ref, waiting.key) = (2, "A-2".into(), None);
    (waiting.amount_paid, waiting.state) = (None, State::Unpaid);
    let mut view = LedgerView::default();
    view.insert_keyed(held);
    view.insert_unpaid(waiting);
    let moved = transfer(5, TO, 10, block(102, "bb"));
    let obs = Observation {
        provider: "cg".into(),
        chain: "ethereum".into(),
        tx_hash: moved.key.tx_hash.clone(),
        notification_id: Some("n1".into()),
        failed: false,
        order_ref: None,
        infer_failed: false,
        record_time: None,
        verdict: ChainVerdict::Transfer(moved),
    };
    let plan = reconcile(&[obs], &view);
    assert!(plan.transitions.is_empty(), "{plan:?}");
    let kinds: Vec<_> = plan.findings.iter().map(|f| f.kind.as_str()).collect();
    assert_eq!(kinds, ["reorged"]);
    assert_eq!(plan.findings[0].order_ref.as_deref(), Some("A-1"));
    assert!(
        plan.findings[0].detail.contains("chain sweep"),
        "{:?}",
        plan.findings[0]
    );
}
