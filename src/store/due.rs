//! The due rule of the outbox (events.rs): an event is due when it is pending (neither
//! delivered nor dead), its `next_attempt_at` has come, no live claim holds it, and no
//! earlier event of its order is undelivered. Written once for every backend's claim.

/// Pending: neither delivered nor dead (alias `e`).
pub(super) const PENDING: &str = "e.delivered_at IS NULL AND e.dead_at IS NULL";

/// Pending, not claimed by a live claim, and first undelivered of its order: due once its
/// `next_attempt_at` comes.
pub(super) fn waiting_sql(now: &str) -> String {
    format!(
        "{PENDING} AND (e.claimed_until IS NULL OR e.claimed_until < {now}) \
         AND NOT EXISTS (SELECT 1 FROM payrecon_events p WHERE p.order_id = e.order_id \
         AND p.seq < e.seq AND p.delivered_at IS NULL)"
    )
}

/// `WHERE` of the due rule, binding `now` as parameter `now`.
pub(crate) fn due_sql(now: &str) -> String {
    format!("e.next_attempt_at <= {now} AND {}", waiting_sql(now))
}
