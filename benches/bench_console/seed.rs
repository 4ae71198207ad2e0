//! The console benchmark's ledger, seeded by SQL: orders (nine in ten paid, each with its
//! payment and transition), exceptions, events, findings, runs and deposit addresses.

use super::{order_of_exception, Args, B, KINDS, TOKEN};

/// The statements that seed the ledger (orders `C-<i>`, ids 1..=orders in a new database).
pub(super) fn seed_sql(b: B, a: &Args) -> Vec<(&'static str, String)> {
    let (n, x) = (a.orders, a.exceptions);
    let paid = "i % 10 <> 0";
    let orders = format!(
        "INSERT INTO orders (order_ref, chain, pay_to, asset, amount_due, tx_hash, log_index, \
         amount_paid, block_number, block_hash, state, state_changed_at, created_at, \
         payrecon_updated_at) \
         SELECT 'C-' || i, 'ethereum', {addr}, '{TOKEN}', {due}, \
         CASE WHEN {paid} THEN {tx} END, CASE WHEN {paid} THEN 0 END, \
         CASE WHEN {paid} THEN {due} WHEN i % 100 = 0 THEN {half} END, \
         CASE WHEN {paid} THEN 1000 + i / 10 END, \
         CASE WHEN {paid} THEN {block} END, CASE WHEN {paid} THEN 'final' ELSE 'unpaid' END, \
         CASE WHEN {paid} THEN {changed} END, {created}, {changed} FROM {series}",
        addr = b.hex("i", 40),
        due = b.amount("1000000 + i % 1000"),
        half = b.amount("500000"),
        tx = b.hex("i", 64),
        block = b.hex("1000 + i / 10", 64),
        changed = b.ago(&format!("({n} - i) * 2")),
        created = b.ago(&format!("({n} - i) * 2 + 60")),
        series = b.series(n),
    );
    let payments = "INSERT INTO payrecon_payments (order_id, chain, tx_hash, log_index, amount, \
         block_number, block_hash, block_time, state, source, provider, run_id, created_at, \
         state_changed_at) SELECT id, chain, tx_hash, log_index, amount_paid, block_number, \
         block_hash, state_changed_at, 'final', 'reconcile', 'cg', 'bench', state_changed_at, \
         state_changed_at FROM orders WHERE tx_hash IS NOT NULL"
        .to_string();
    // Orders held: one in 100 unpaid orders has half its amount paid.
    let held = format!(
        "INSERT INTO payrecon_payments (order_id, chain, tx_hash, log_index, amount, \
         block_number, block_hash, block_time, state, source, provider, run_id, created_at, \
         state_changed_at) SELECT id, chain, {tx}, 0, amount_paid, 1000, {tx}, created_at, \
         'final', 'reconcile', 'cg', 'bench', created_at, created_at FROM orders \
         WHERE state = 'unpaid' AND amount_paid IS NOT NULL",
        tx = b.hex(&format!("{} + id", 3 * n), 64),
    );
    let transitions = "INSERT INTO payrecon_transitions (order_id, from_state, to_state, source, \
         provider, run_id, created_at) SELECT id, 'unpaid', 'final', 'reconcile', 'cg', 'bench', \
         state_changed_at FROM orders WHERE tx_hash IS NOT NULL"
        .to_string();
    let body = "'{\"type\":\"order.final\",\"data\":{\"order_ref\":\"C-0\",\"state\":\"final\",\
                \"chain\":\"ethereum\",\"amount\":\"1000000\",\"tx_hash\":\"0x00000000000000000000\
                00000000000000000000000000000000000000000000\",\"log_index\":0}}'";
    let events = |cause: &str, table: &str, limit: u64| {
        let (tid, pid) = match cause {
            "t" => ("c.id", "NULL"),
            _ => ("NULL", "c.id"),
        };
        format!(
            "INSERT INTO payrecon_events (id, transition_id, payment_id, order_id, type, body, \
             created_at, attempts, next_attempt_at, delivered_at, dead_at, last_status, \
             last_error) SELECT 'msg_{cause}' || c.id, {tid}, {pid}, c.order_id, 'order.final', \
             {body}, c.created_at, CASE WHEN c.id % 500 = 0 THEN 12 ELSE 1 END, c.created_at, \
             CASE WHEN c.id % 500 = 0 OR c.id % 1000 = 1 THEN NULL ELSE c.created_at END, \
             CASE WHEN c.id % 500 = 0 THEN c.created_at END, \
             CASE WHEN c.id % 500 = 0 THEN 503 ELSE 200 END, \
             CASE WHEN c.id % 500 = 0 THEN 'HTTP 503' END \
             FROM {table} c ORDER BY c.id LIMIT {limit}"
        )
    };
    let by_transition = a.events.min(n - n / 10);
    let exceptions = format!(
        "INSERT INTO payrecon_exceptions (kind, order_id, chain, tx_hash, log_index, amount, \
         detail, status, first_seen_at, last_seen_at, seen_count, resolved_at, resolved_by, \
         resolution, note, problem, last_run_id) \
         SELECT {KINDS}, CASE WHEN i % 4 = 2 THEN NULL ELSE {oid} END, 'ethereum', \
         CASE WHEN i % 4 = 2 THEN {stray} ELSE {tx} END, 0, '999000', 'seeded', \
         CASE WHEN i % 5 = 0 THEN 'open' ELSE 'resolved' END, {seen}, {seen}, 1, \
         CASE WHEN i % 5 = 0 THEN NULL ELSE {seen} END, \
         CASE WHEN i % 5 = 0 THEN NULL ELSE 'bench' END, \
         CASE WHEN i % 5 = 0 THEN NULL ELSE 'dismissed' END, \
         CASE WHEN i % 5 = 0 THEN NULL ELSE 'seeded' END, 'bench:' || i, 'bench' FROM {series}",
        oid = order_of_exception(n, x, "i"),
        stray = b.hex(&format!("{n} + i"), 64),
        tx = b.hex(&order_of_exception(n, x, "i"), 64),
        seen = b.ago(&format!("({x} - i) * 20")),
        series = b.series(x),
    );
    let findings = format!(
        "INSERT INTO payrecon_findings (run_id, provider, kind, chain, tx_hash, log_index, \
         order_ref, local_state, observed_state, action, detail, created_at) \
         SELECT 'run-' || (i / 6), 'cg', CASE i % 3 WHEN 0 THEN 'missing' \
         WHEN 1 THEN 'failed_notification' ELSE {KINDS} END, 'ethereum', {tx}, 0, 'C-' || i, \
         'unpaid', 'final', 'applied', '', {at} FROM {series}",
        tx = b.hex("i", 64),
        at = b.ago(&format!("i * {}", 30 * 86_400 / a.findings.max(1))),
        series = b.series(a.findings),
    );
    let runs = format!(
        "INSERT INTO payrecon_runs (id, \"trigger\", started_at, finished_at, \"since\", \
         \"until\", status, checked, gaps, applied, resends_requested, error, providers) \
         SELECT 'run-' || i, 'schedule', {start}, {end}, {since}, {end}, \
         CASE WHEN i % 100 = 0 THEN 'failed' ELSE 'ok' END, 120, i % 3, i % 3, 0, \
         CASE WHEN i % 100 = 0 THEN 'sandbox: timed out' END, ',sandbox,chain,run,' FROM {series}",
        start = b.ago(&format!("({} - i) * 60 + 5", a.runs)),
        end = b.ago(&format!("({} - i) * 60", a.runs)),
        since = b.ago(&format!("({} - i) * 60 + 86400", a.runs)),
        series = b.series(a.runs),
    );
    let balances = format!(
        "INSERT INTO payrecon_balances (chain, address, asset, opening_block, opening_balance, \
         checked_block, balance, expected, difference, checked_at) \
         SELECT 'ethereum', {addr}, '{TOKEN}', 1000, {zero}, 2000, {bal}, {exp}, {diff}, {at} \
         FROM {series}",
        addr = b.hex("i", 40),
        zero = b.amount("0"),
        bal = b.amount("1000000"),
        exp = b.amount("CASE WHEN i % 100 = 0 THEN 1500000 ELSE 1000000 END"),
        diff = b.amount("CASE WHEN i % 100 = 0 THEN -500000 ELSE 0 END"),
        at = b.ago("600"),
        series = b.series(a.balances),
    );
    vec![
        ("orders", orders),
        ("payments", payments),
        ("held payments", held),
        ("transitions", transitions),
        (
            "transition events",
            events("t", "payrecon_transitions", by_transition),
        ),
        (
            "payment events",
            events("p", "payrecon_payments", a.events - by_transition),
        ),
        ("exceptions", exceptions),
        ("findings", findings),
        ("runs", runs),
        ("balances", balances),
    ]
}
