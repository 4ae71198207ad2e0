use super::*;

#[test]
fn every_spec_metric_is_exported_at_zero_from_the_start() {
    let m = Metrics::new(
        &[("cg".into(), vec!["ethereum".into()])],
        &["ethereum".into()],
    );
    let text = m.encode();
    for name in [
        "payrecon_runs_total{provider=\"cg\",outcome=\"ok\"} 0",
        "payrecon_run_duration_seconds_count{provider=\"cg\"} 0",
        "payrecon_last_success_timestamp_seconds{provider=\"cg\"} 0",
        "payrecon_payments_checked_total{provider=\"cg\",chain=\"ethereum\"} 0",
        "payrecon_gaps_total{provider=\"cg\",chain=\"ethereum\",kind=\"failed_notification\"} 0",
        "payrecon_gaps_total{provider=\"chain\",chain=\"ethereum\",kind=\"reorged\"} 0",
        "payrecon_gap_ratio{provider=\"cg\"} 0",
        "payrecon_transitions_applied_total{provider=\"cg\",from=\"unpaid\",to=\"final\"} 0",
        "payrecon_transitions_refused_total{provider=\"cg\",reason=\"backwards\"} 0",
        "payrecon_resends_total{provider=\"cg\",outcome=\"requested\"} 0",
        "payrecon_provider_requests_total{provider=\"cg\",status=\"5xx\"} 0",
        "payrecon_records_rejected_total{provider=\"cg\"} 0",
        "payrecon_chain_head_block{chain=\"ethereum\"} 0",
        "payrecon_reorged_open{chain=\"ethereum\"} 0",
        "payrecon_balances_checked_total{chain=\"ethereum\"} 0",
        "payrecon_balance_mismatched_addresses{chain=\"ethereum\"} 0",
        "payrecon_last_balance_check_timestamp_seconds{chain=\"ethereum\"} 0",
        "payrecon_orders_held{reason=\"underpaid\"} 0",
        "payrecon_orders_held{reason=\"late\"} 0",
        "payrecon_database_retries_total 0",
    ] {
        assert!(text.contains(name), "missing {name} in\n{text}");
    }
    assert!(!text.contains("payrecon_webhooks_total{"), "{text}");
    m.init_webhooks(&["qvard".into()]);
    let text = m.encode();
    for name in [
        "payrecon_webhooks_total{provider=\"qvard\",outcome=\"accepted\"} 0",
        "payrecon_webhooks_total{provider=\"qvard\",outcome=\"too_large\"} 0",
        "payrecon_webhooks_total{provider=\"unknown\",outcome=\"unknown_provider\"} 0",
    ] {
        assert!(text.contains(name), "missing {name} in\n{text}");
    }
}
