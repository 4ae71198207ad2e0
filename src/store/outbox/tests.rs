use super::*;
use crate::store::Source;

#[test]
fn the_body_names_the_transition_and_the_payment() {
    let order = EventOrder {
        order_ref: "A-1".into(),
        chain: "ethereum".into(),
        tx_hash: Some(format!("0x{}", "ab".repeat(32))),
        log_index: Some(7),
        block_number: Some(123),
        block_hash: Some(String::new()),
        asset: "native".into(),
        amount_due_text: "25000000".into(),
        amount_paid_text: Some("25000000".into()),
    };
    let ctx = ApplyContext {
        source: Source::Reconcile,
        provider: "cg".into(),
        run_id: String::new(),
        events: true,
        retries: Default::default(),
    };
    let e = new_event(
        17,
        3,
        State::Unpaid,
        State::Final,
        &order,
        &ctx,
        "2026-12-01T10:00:00.000Z",
    );
    assert!(e.id.starts_with("evt_") && e.id.len() == 36, "{}", e.id);
    assert_eq!(e.kind, "order.final");
    let v: serde_json::Value = serde_json::from_str(&e.body).unwrap();
    assert_eq!(v["type"], "order.final");
    assert_eq!(v["timestamp"], "2026-12-01T10:00:00.000Z");
    let d = &v["data"];
    assert_eq!(d["order_ref"], "A-1");
    assert_eq!(d["order_id"], 17);
    assert_eq!(d["from_state"], "unpaid");
    assert_eq!(d["to_state"], "final");
    assert_eq!(d["log_index"], 7);
    assert_eq!(d["amount_paid"], "25000000");
    assert!(d["block_hash"].is_null(), "an empty hash is null");
    assert!(d["run_id"].is_null(), "no run: null");
    assert_eq!(d["source"], "reconcile");
    assert_eq!(d["provider"], "cg");
}
