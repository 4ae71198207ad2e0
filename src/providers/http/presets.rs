//! Presets for known providers: the keys of a `[providers.X]` table (`kind = "http"`) that
//! describe the provider's API, as TOML. The configuration merges a preset's table under the
//! user's (recursively; a key the user sets wins), so any of these can be overridden.

/// Qvard: lists completed payments only (no failed list); its `id` is the merchant's order id;
/// it retries a webhook 5 times in about 6 minutes.
pub const QVARD: &str = r#"
# Resends wait until Qvard's own retries are over (5 attempts in about 6 minutes).
retry_window = "6m"
# `amount` is a decimal in whole units ("25.00"), converted with the asset's decimals.
amount_unit = "decimal"

# Every completed payment in the window; times as Unix seconds, cursor pagination.
[payments]
path = "/v1/payments?status=completed&from={since_unix}&to={until_unix}&cursor={cursor}"
time_format = "unix"
pagination = "cursor"
# The next page's cursor; null when this page is the last.
cursor = "/next_cursor"
items = "/data"

# Where each field sits in a payment.
[fields]
# Qvard's payment id is the merchant's order id: it is both the event id and the order_ref.
event_id = "/id"
order_ref = "/id"
chain = "/chain"
tx_hash = "/tx_hash"
log_index = "/log_index"
asset = "/asset"
amount = "/amount"
status = "/status"
updated_at = "/completed_at"

# Qvard lists only completed payments, and a completed payment is final.
[status_map]
completed = "final"

# Asks Qvard to deliver a payment's webhook again.
[resend]
method = "POST"
path = "/v1/payments/{id}/resend-webhook"
"#;

/// Paymos: lists the events whose delivery failed (no payments list); retries a webhook 11
/// times over about 16 hours (1 minute, then doubling).
pub const PAYMOS: &str = r#"
# Resends wait until Paymos' own retries are over (11 attempts over about 16 hours).
retry_window = "16h"
# `data.amount` is an integer in base units.
amount_unit = "base"

# Events whose webhook delivery failed, created after `since` (RFC 3339); page numbers with
# a `has_more` flag.
[failed]
path = "/v1/events?status=failed&created_after={since}&page={page}"
time_format = "rfc3339"
pagination = "page"
first_page = 1
has_more = "/has_more"
items = "/events"

# Where each field sits in an event.
[fields]
event_id = "/event_id"
order_ref = "/data/order_ref"
chain = "/data/chain"
tx_hash = "/data/tx_hash"
log_index = "/data/log_index"
amount = "/data/amount"
status = "/data/state"
updated_at = "/created_at"

# Paymos payment states; a failed or expired payment is not a payment state: ignored.
[status_map]
pending = "pending"
confirmed = "confirmed"
final = "final"
completed = "final"
failed = "ignore"
expired = "ignore"

# Asks Paymos to deliver an event again.
[resend]
method = "POST"
path = "/v1/events/{id}/resend"
"#;

/// Known preset names.
pub const PRESETS: &[&str] = &["qvard", "paymos"];

/// The preset's TOML text, or `None` for an unknown name.
pub fn preset_toml(preset: &str) -> Option<&'static str> {
    match preset {
        "qvard" => Some(QVARD),
        "paymos" => Some(PAYMOS),
        _ => None,
    }
}

/// The webhook signature scheme of a preset (`"qvard"`, `"paymos"`), `None` for others.
pub fn preset_webhook_scheme(preset: &str) -> Option<&'static str> {
    match preset {
        "qvard" => Some("qvard"),
        "paymos" => Some("paymos"),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
