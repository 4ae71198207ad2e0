//! What happens on the Bitcoin slice's chain in a step: records, new transactions with change,
//! fee bumps that replace a mempool payment, and reorgs above the final depth.

use payrecon_testkit::esplora::Out;
use payrecon_testkit::sandbox::chaingateway::notification;
use rand::rngs::StdRng;
use rand::Rng;
use serde_json::json;

use super::{address, bump, BWorld, Paid, CHANGE, FINAL_DEPTH};

/// A Chaingateway `bitcoin` record: the amount in BTC (8 decimals, or trimmed), or none.
fn notify(w: &mut BWorld, rng: &mut StdRng, txid: &str, to: &str, sats: Option<u64>) {
    w.next += 1;
    let amount = sats.map(|s| {
        let full = format!("{}.{:08}", s / 100_000_000, s % 100_000_000);
        if rng.gen_bool(0.5) {
            full.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            full
        }
    });
    let when = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(rng.gen_range(1..60));
    let mut n = notification(
        &format!("b{}", w.next),
        txid,
        "native",
        to,
        amount.as_deref(),
        when,
    );
    n["type"] = json!("BTC");
    n["blockchain"] = json!("bitcoin");
    n["from"] = json!(CHANGE);
    w.cg.add_notification("bitcoin", n);
}

/// A new transaction with these outputs: in the mempool, or in a recent block.
fn put(w: &mut BWorld, rng: &mut StdRng, outputs: Vec<Out>, pays: Option<usize>) -> String {
    w.next += 1;
    let id = format!("{:016x}{:048x}", w.next, rng.gen::<u128>());
    if rng.gen_bool(0.25) {
        w.esplora.add(&id, None, outputs);
        w.mempool.push((id.clone(), pays));
        bump(4);
    } else {
        let tip = w.esplora.tip();
        let block = tip - rng.gen_range(0..30u64);
        if block + FINAL_DEPTH > tip {
            w.recent.push((id.clone(), block));
        }
        w.esplora.add(&id, Some(block), outputs);
    }
    id
}

fn change_and(to: &str, sats: u64) -> Vec<Out> {
    vec![
        Out {
            address: CHANGE.into(),
            sats: 1_250_000,
        },
        Out {
            address: to.into(),
            sats,
        },
    ]
}

/// One event of a step.
pub(super) fn event(w: &mut BWorld, rng: &mut StdRng) {
    let unpaid: Vec<usize> = (0..w.orders.len())
        .filter(|&i| w.orders[i].paid.is_none())
        .collect();
    match rng.gen_range(0..100) {
        0..=54 if !unpaid.is_empty() => {
            let i = unpaid[rng.gen_range(0..unpaid.len())];
            let (to, due) = (w.orders[i].to.clone(), w.orders[i].due);
            let reported = rng.gen_bool(0.8);
            let sats = match rng.gen_range(0..10) {
                0 if reported => due - 1,
                1 if reported => due + 1_000,
                _ => due,
            };
            let mut outputs = change_and(&to, sats);
            // A second, smaller output to the same address: the record's amount picks.
            let two = reported && rng.gen_bool(0.2);
            if two {
                outputs.insert(
                    1,
                    Out {
                        address: to.clone(),
                        sats: sats / 3,
                    },
                );
                bump(3);
            }
            let id = put(w, rng, outputs, Some(i));
            if reported {
                let no_amount = !two && rng.gen_bool(0.2);
                if no_amount {
                    bump(2);
                }
                notify(w, rng, &id, &to, (!no_amount).then_some(sats));
            } else {
                bump(1);
            }
            w.orders[i].paid = Some(Paid {
                txid: id,
                findable: reported || w.scan,
                dropped: false,
                sats,
                extra: if two { sats / 3 } else { 0 },
            });
            bump(0);
        }
        55..=64 => replace(w, rng),
        65..=74 => {
            // A payment to an address no order has.
            let to = address(u64::MAX, w.next, rng.gen_range(0..3));
            let id = put(w, rng, change_and(&to, 70_000), None);
            notify(w, rng, &id, &to, Some(70_000));
        }
        // At most 2 queued at once: the retries (3) absorb them.
        75..=84 if w.esplora.faults_left() == 0 => {
            let n = rng.gen_range(1..=2);
            w.esplora.push_fault(503, n);
            w.faults += n;
            bump(6);
        }
        75..=84 => {}
        _ => reorg(w, rng),
    }
}

/// A fee bump (RBF) of a mempool payment that pays 500 satoshis less, with a record for the
/// replacement (or none): the replacement is the payment.
fn replace(w: &mut BWorld, rng: &mut StdRng) {
    let Some(k) = (0..w.mempool.len()).find(|&k| w.mempool[k].1.is_some()) else {
        return;
    };
    let (old, Some(i)) = w.mempool.remove(k) else {
        return;
    };
    w.esplora.remove(&old);
    let to = w.orders[i].to.clone();
    let sats = w.orders[i].paid.as_ref().map_or(0, |p| p.sats) - 500;
    let id = put(w, rng, change_and(&to, sats), Some(i));
    let reported = rng.gen_bool(0.8);
    if reported {
        notify(w, rng, &id, &to, Some(sats));
    }
    w.orders[i].paid = Some(Paid {
        txid: id,
        findable: reported || w.scan,
        dropped: false,
        sats,
        extra: 0,
    });
    bump(5);
}

/// Above the final depth: a recent transaction moves to a later block, goes back to the
/// mempool (mined again when the chain settles), or is dropped.
pub(super) fn reorg(w: &mut BWorld, rng: &mut StdRng) {
    let tip = w.esplora.tip();
    w.recent.retain(|(_, b)| b + FINAL_DEPTH > tip);
    if w.recent.is_empty() {
        return;
    }
    let k = rng.gen_range(0..w.recent.len());
    let (id, block) = w.recent[k].clone();
    w.esplora.reorg_from(block);
    bump(7);
    match rng.gen_range(0..10) {
        0..=5 => {
            let to = (block + rng.gen_range(1..=3)).min(tip);
            w.esplora.confirm(&id, to);
            w.recent[k].1 = to;
        }
        6..=7 => {
            w.esplora.unconfirm(&id);
            w.recent.remove(k);
            // Back in the mempool (not replaced here: only never-mined payments are).
            w.mempool.push((id, None));
        }
        _ => {
            w.esplora.remove(&id);
            w.recent.remove(k);
            if let Some(p) = w
                .orders
                .iter_mut()
                .find_map(|o| o.paid.as_mut().filter(|p| p.txid == id))
            {
                p.dropped = true;
            }
        }
    }
}
