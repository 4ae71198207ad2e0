//! /healthz, /readyz, /metrics; a scheduled run.

mod metrics;
mod readyz;
mod schedule;

/// Every label value is a bounded enum or a configured name: never a hash or an address.
fn assert_bounded_labels(text: &str) {
    let allowed = [
        "sandbox",
        "chain",
        // The run's own steps (the webhook inbox, the exceptions): docs/reference.md §4.
        "run",
        // The balance check (docs/operations.md, "Balances"), a run of its own.
        "balances",
        "tron",
        "bitcoin",
        "ethereum",
        "ok",
        "failed",
        "missing",
        "lagging",
        "failed_notification",
        "amount_mismatch",
        "unknown_payment",
        "reorged",
        "late_payment",
        "unexpected_outflow",
        "balance_mismatch",
        "unpaid",
        "pending",
        "confirmed",
        "final",
        "backwards",
        "duplicate",
        "requested",
        "skipped",
        "2xx",
        "4xx",
        "5xx",
        "error",
        // payrecon_webhooks_total: outcomes, and "unknown" for a provider not configured.
        "unknown",
        "accepted",
        "bad_signature",
        "bad_request",
        "too_large",
        "unknown_provider",
        // payrecon_events_total (docs/reference.md §5).
        "delivered",
        "dead",
        // payrecon_orders_held (docs/reference.md §5).
        "underpaid",
        "late",
    ];
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        assert!(
            !line.contains("0x"),
            "a hash or address in /metrics: {line}"
        );
        let Some((_, rest)) = line.split_once('{') else {
            continue;
        };
        let labels = rest.split_once('}').unwrap().0;
        for kv in labels.split(',') {
            let (k, v) = kv.split_once('=').unwrap();
            let v = v.trim_matches('"');
            if k == "le" {
                continue;
            }
            assert!(
                allowed.contains(&v),
                "unexpected label value {k}={v:?} in {line}"
            );
        }
    }
}
