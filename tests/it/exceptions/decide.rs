//! `accept`, `attach` and `dismiss`: each through the run's apply path (source `operator`,
//! the audit row, the event to the merchant), with who, when and why on the exception; and
//! every refusal changes nothing.

use super::count;
use crate::cli::harness::World;
use crate::events::receiver::Receiver;
use crate::events::SECRET;

mod accept;
mod attach;
mod dismiss;

fn events(r: &Receiver) -> String {
    format!(
        "[events]\nurl = \"{}\"\nsecret = \"{SECRET}\"\nflush_timeout = \"5s\"\n",
        r.url()
    )
}

/// Everything an operator's refused decision must leave alone.
async fn ledger(w: &World) -> Vec<i64> {
    let mut v = Vec::new();
    for t in [
        "payrecon_transitions",
        "payrecon_payments",
        "payrecon_events",
    ] {
        v.push(count(w, t, "1 = 1").await);
    }
    v.push(count(w, "payrecon_exceptions", "status = 'open'").await);
    v.push(count(w, "orders", "state <> 'unpaid'").await);
    v
}
