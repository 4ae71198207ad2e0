//! The events invariant over a whole seed: one event per transition payrecon applied, every
//! event delivered in the end, and each final order fulfilled exactly once.

use payrecon::domain::State;

use crate::world::World;
use payrecon_testkit::inspect::Inspect;

use super::db;

/// Events (docs/reference.md §6) over the whole seed: every transition payrecon applied has
/// exactly one event of its type and order (and no event lacks its transition); in the end
/// every event is delivered; and each order that ends `final` was fulfilled exactly once, by
/// the merchant's handler when its conditional update won, or by payrecon's event when
/// payrecon's did.
pub async fn effects(w: &World) -> Result<(), String> {
    let refs: Vec<&str> = w.orders.iter().map(|o| o.order_ref.as_str()).collect();
    effects_of(w.store(), &w.merchant, &refs, || w.deliver_events()).await
}

/// `effects` for any world: its ledger, its merchant, its orders, and how it delivers.
pub async fn effects_of<F, Fut>(
    s: &payrecon::store::Store,
    merchant: &crate::merchant::Merchant,
    order_refs: &[&str],
    deliver: F,
) -> Result<(), String>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    // Claims of processes that are gone (a SIGKILLed child, a record cut off by the proxy)
    // expire after `timeout` + 10 s. Safe to expire them at once only because nothing
    // delivers now: every caller has joined its flushes (and child processes) before.
    let expire = "UPDATE payrecon_events SET claimed_by = NULL, claimed_until = NULL \
                  WHERE delivered_at IS NULL";
    payrecon_testkit::on_pool!(s, p => sqlx::query(expire).execute(p).await.map(|_| ()))
        .map_err(|e| format!("database: {e}"))?;
    for _ in 0..20 {
        let c = db(s.event_counts().await)?;
        if c.pending == 0 && c.dead == 0 {
            break;
        }
        if c.dead > 0 {
            let dead = payrecon::store::EventFilter {
                status: Some("dead".into()),
                ..Default::default()
            };
            db(s.replay_events(&dead, jiff::Timestamp::now()).await)?;
        }
        deliver().await;
    }
    let c = db(s.event_counts().await)?;
    if c.pending != 0 || c.dead != 0 {
        return Err(format!("events left undelivered at the end: {c:?}"));
    }
    // One event per transition payrecon applied, and one per payment it credited
    // (docs/reference.md §6), each naming its cause and its cause's order.
    let transitions = db(s.count("payrecon_transitions").await)?;
    let events = db(s.count("payrecon_events").await)?;
    let count = |sql: &'static str| async move {
        payrecon_testkit::on_pool!(s, p => {
            sqlx::query_scalar::<_, i64>(sql).fetch_one(p).await
        })
        .map_err(|e| format!("database: {e}"))
    };
    let payments =
        count("SELECT COUNT(*) FROM payrecon_payments WHERE source IN ('reconcile', 'webhook')")
            .await?;
    let unmatched = count(
        "SELECT COUNT(*) FROM payrecon_events e LEFT JOIN payrecon_transitions t \
         ON t.id = e.transition_id LEFT JOIN payrecon_payments p ON p.id = e.payment_id \
         WHERE CASE WHEN e.transition_id IS NOT NULL THEN t.id IS NULL \
         OR t.order_id <> e.order_id OR e.type <> CONCAT('order.', t.to_state) \
         ELSE p.id IS NULL OR p.order_id <> e.order_id \
         OR e.type <> 'order.payment_received' END",
    )
    .await?;
    if transitions + payments != events || unmatched != 0 {
        return Err(format!(
            "{transitions} transitions, {payments} payments, {events} events, {unmatched} \
             events without their transition or payment"
        ));
    }
    let disorder = merchant.out_of_order();
    if !disorder.is_empty() {
        return Err(format!("events out of order: {disorder:?}"));
    }
    if merchant.bad_signatures() > 0 {
        return Err(format!(
            "{} event(s) with a bad signature",
            merchant.bad_signatures()
        ));
    }
    let fulfilled = merchant.fulfilments();
    let unknown = merchant.commits_unknown();
    let audit = db(s.transitions().await)?;
    for &order_ref in order_refs {
        let snap = db(s.order_by_ref(order_ref).await)?
            .ok_or_else(|| format!("order {order_ref} vanished"))?;
        let by = fulfilled.get(order_ref).cloned().unwrap_or_default();
        let want = usize::from(snap.state == State::Final);
        // The merchant's own update to final committed while its reply was cut: no effect was
        // recorded here (a real handler's fulfilment commits with its update), and payrecon,
        // which found the order final, owed none. Not a lost effect of payrecon's, which
        // would show as an audit row to final without its fulfilment.
        let by_payrecon = audit
            .iter()
            .any(|t| t.order_ref == order_ref && t.to_state == State::Final);
        if by.is_empty() && want == 1 && unknown.contains(order_ref) && !by_payrecon {
            continue;
        }
        if by.len() != want {
            return Err(format!(
                "{order_ref} ends {:?} and was fulfilled {} time(s): {by:?}",
                snap.state,
                by.len()
            ));
        }
    }
    Ok(())
}
