//! What payrecon promises about reorged payments (docs/how-it-works.md "Reorgs",
//! docs/reference.md §8 `reorged`, the invariants of ARCHITECTURE.md), checked against the real
//! node's canonical chain: between runs no state moves back and a held payment is never swapped
//! for another transaction; after the final runs every held payment still on chain sits at its
//! canonical key and block with its canonical amount and at least the state its position
//! implies, every held payment gone from the chain keeps its row and state and is flagged
//! `reorged` (provider `chain`, action `none`) by the last run and counted in
//! `payrecon_reorged_open`, and every live payment that can be found (notified, or a token
//! payment the deposit scan sees) is credited to its order.

use payrecon::domain::State;
use payrecon::report::Report;
use payrecon_testkit::inspect::OrderSnapshot;

use super::world::AWorld;

fn implied(block: u64, head: u64, confs: u64, final_depth: u64) -> State {
    let n = (head + 1).saturating_sub(block);
    if n >= final_depth {
        State::Final
    } else if n >= confs {
        State::Confirmed
    } else {
        State::Pending
    }
}

async fn rows(w: &AWorld) -> Result<Vec<OrderSnapshot>, String> {
    let refs = w.orders.iter().map(|o| o.order_ref.clone()).collect();
    crate::order_rows(&w.app.engine.store, refs).await
}

/// Between runs: no order behind where it was; a held payment's transaction never changes.
pub async fn monotone(w: &mut AWorld) -> Result<(), String> {
    for row in rows(w).await? {
        if let Some(prev) = w.last.get(&row.order_ref) {
            if row.state < prev.state {
                return Err(format!(
                    "{} moved backwards: {prev:?} -> {row:?}",
                    row.order_ref
                ));
            }
            if prev.tx_hash.is_some() && row.tx_hash != prev.tx_hash {
                return Err(format!(
                    "{} was given another payment: {prev:?} -> {row:?}",
                    row.order_ref
                ));
            }
        }
        w.last.insert(row.order_ref.clone(), row);
    }
    Ok(())
}

/// `payrecon_reorged_open{chain="ethereum"}` of the in-process engine.
fn reorged_open(w: &AWorld) -> Result<i64, String> {
    let text = w.app.engine.metrics.encode();
    text.lines()
        .find(|l| l.starts_with("payrecon_reorged_open{chain=\"ethereum\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| "no payrecon_reorged_open gauge".to_string())
}

/// After the final runs (`last` is the last run's report): the number of held payments gone.
pub async fn converged(w: &AWorld, last: &Report) -> Result<u64, String> {
    crate::check::audit(&w.app.engine.store).await?;
    let head = w.anvil.head().await;
    let mut gone = 0u64;
    let credited = crate::credited(&w.app.engine.store).await?;
    for (o, row) in w.orders.iter().zip(rows(w).await?) {
        let pay = o.pay.map(|i| &w.pays[i]);
        let placed = match pay {
            Some(p) => w.anvil.placed(&p.tx).await.filter(|p| p.3),
            None => None,
        };
        let mine = credited.get(&o.order_ref).map(Vec::as_slice).unwrap_or(&[]);
        if let (Some(first), Some(second)) = (o.pay, o.top_up) {
            let parts = [&w.pays[first], &w.pays[second]];
            let mut at = Vec::new();
            for p in parts {
                at.push(w.anvil.placed(&p.tx).await.filter(|p| p.3));
            }
            let two = Two {
                o,
                row: &row,
                parts,
                at: [at[0].clone(), at[1].clone()],
                mine,
                last,
            };
            gone += two.check(head, w.confs, w.final_depth)?;
            continue;
        }
        if let Some(p) = pay.filter(|p| p.amount < o.due) {
            gone += held_short(o, &row, p, mine, placed.as_ref(), last)?;
            continue;
        }
        let Some(held) = row.tx_hash.as_deref() else {
            if row.state != State::Unpaid {
                return Err(format!(
                    "{}: a state without a payment: {row:?}",
                    o.order_ref
                ));
            }
            if let (Some(p), Some(_)) = (pay, &placed) {
                if p.notified || !p.native {
                    return Err(format!(
                        "{} did not converge: unpaid, paid on chain by {} (notified: {})",
                        o.order_ref, p.tx, p.notified
                    ));
                }
            }
            continue;
        };
        let Some(p) = pay.filter(|p| p.tx == held) else {
            return Err(format!(
                "{} holds a transaction that is not its payment: {row:?}",
                o.order_ref
            ));
        };
        match placed {
            Some((block, hash, li, _)) => {
                let at = (row.block_number, row.block_hash.as_deref(), row.log_index);
                if at != (Some(block as i64), Some(hash.as_str()), Some(li)) {
                    return Err(format!(
                        "{}: held at {at:?}, the canonical chain has it in block {block} \
                         ({hash}) at log index {li}",
                        o.order_ref
                    ));
                }
                if row.amount_paid.as_deref() != Some(p.amount.to_string().as_str()) {
                    return Err(format!(
                        "{}: amount_paid {:?}, the canonical transfer moved {}",
                        o.order_ref, row.amount_paid, p.amount
                    ));
                }
                let want = implied(block, head, w.confs, w.final_depth);
                if row.state < want {
                    return Err(format!(
                        "{}: {:?}, block {block} at head {head} implies {want:?}",
                        o.order_ref, row.state
                    ));
                }
            }
            None => {
                gone += 1;
                let flagged = last.findings.iter().any(|f| {
                    f.kind == "reorged"
                        && f.provider == "chain"
                        && f.order_ref.as_deref() == Some(o.order_ref.as_str())
                        && f.action == "none"
                });
                if !flagged {
                    return Err(format!(
                        "{}: its payment {} left the canonical chain, and the last run did \
                         not flag it reorged: {}",
                        o.order_ref,
                        p.tx,
                        last.to_json()
                    ));
                }
            }
        }
    }
    let open = reorged_open(w)?;
    if open != gone as i64 {
        return Err(format!(
            "payrecon_reorged_open is {open}, {gone} held payment(s) left the chain"
        ));
    }
    Ok(gone)
}

/// A payment short of its order (docs/configuration.md, "Amounts"): the order stays unpaid with
/// no key; once found (notified, or a token payment the scan sees) it is credited once, at its
/// canonical position; gone from the chain after it was credited, it is flagged `reorged` by
/// the last run. Returns 1 when it is gone and flagged (counted in `payrecon_reorged_open`).
fn held_short(
    o: &super::world::Order,
    row: &OrderSnapshot,
    p: &super::world::Pay,
    mine: &[crate::Credited],
    placed: Option<&(u64, String, i64, bool)>,
    last: &Report,
) -> Result<u64, String> {
    let r = &o.order_ref;
    if row.state != State::Unpaid || row.tx_hash.is_some() {
        return Err(format!("{r}: paid {} of {}, yet {row:?}", p.amount, o.due));
    }
    let found = p.notified || !p.native;
    match (placed, mine) {
        (Some(_), []) if found => Err(format!(
            "{r} did not converge: {} pays {} of {} on chain, nothing credited",
            p.tx, p.amount, o.due
        )),
        (_, []) => Ok(0),
        (Some((block, hash, li, _)), [c]) => {
            let at = (c.block_number, c.block_hash.as_deref(), c.log_index);
            if c.tx != p.tx || at != (Some(*block as i64), Some(hash.as_str()), *li) {
                return Err(format!(
                    "{r}: its held payment is {c:?}, the canonical chain has {} in block \
                     {block} ({hash}) at log index {li}",
                    p.tx
                ));
            }
            let want = Some(p.amount.to_string());
            if c.amount != p.amount || row.amount_paid != want {
                return Err(format!(
                    "{r}: credited {c:?}, amount_paid {:?}",
                    row.amount_paid
                ));
            }
            Ok(0)
        }
        (None, [c]) => {
            let flagged = last.findings.iter().any(|f| {
                f.kind == "reorged"
                    && f.provider == "chain"
                    && f.order_ref.as_deref() == Some(r.as_str())
                    && f.tx_hash.as_deref() == Some(c.tx.as_str())
            });
            if !flagged {
                return Err(format!(
                    "{r}: its held payment {} left the chain, and the last run did not flag it",
                    c.tx
                ));
            }
            Ok(1)
        }
        (_, many) => Err(format!("{r}: one payment, credited as {many:?}")),
    }
}

/// An order paid in two transfers (a short payment and its top-up, summing to its amount),
/// either of which reorgs may have moved or dropped, checked after the final runs.
struct Two<'a> {
    o: &'a super::world::Order,
    row: &'a OrderSnapshot,
    parts: [&'a super::world::Pay; 2],
    /// Where the canonical chain has each (block, hash, log index), `None`: gone.
    at: [Option<(u64, String, i64, bool)>; 2],
    mine: &'a [crate::Credited],
    last: &'a Report,
}

impl Two<'_> {
    /// The last run's findings about this order.
    fn said(&self) -> Vec<String> {
        let r = self.o.order_ref.as_str();
        self.last
            .findings
            .iter()
            .filter(|f| f.order_ref.as_deref() == Some(r))
            .map(|f| format!("{} {} {}: {}", f.provider, f.kind, f.action, f.detail))
            .collect()
    }

    /// Returns how many of its credited payments are gone (each flagged `reorged` by the last
    /// run and counted in `payrecon_reorged_open`).
    fn check(&self, head: u64, confs: u64, final_depth: u64) -> Result<u64, String> {
        let (r, row) = (&self.o.order_ref, self.row);
        let mut gone = 0;
        let mut on_chain: u128 = 0;
        let mut credited_live: u128 = 0;
        for c in self.mine {
            let Some(i) = self.parts.iter().position(|p| p.tx == c.tx) else {
                return Err(format!(
                    "{r}: credited {c:?}, which is none of its payments"
                ));
            };
            match &self.at[i] {
                Some((block, hash, li, _)) => {
                    let pos = (c.block_number, c.block_hash.as_deref(), c.log_index);
                    if pos != (Some(*block as i64), Some(hash.as_str()), *li) {
                        return Err(format!(
                            "{r}: credited {c:?}, the canonical chain has it in block {block} \
                             ({hash}) at log index {li}; {row:?}; the last run said {:?}",
                            self.said()
                        ));
                    }
                    credited_live += c.amount;
                }
                None => {
                    gone += 1;
                    let flagged = self.last.findings.iter().any(|f| {
                        f.kind == "reorged"
                            && f.provider == "chain"
                            && f.order_ref.as_deref() == Some(r.as_str())
                            && f.tx_hash.as_deref() == Some(c.tx.as_str())
                    });
                    if !flagged {
                        return Err(format!(
                            "{r}: its payment {} left the chain, and the last run did not flag \
                             it: {}",
                            c.tx,
                            self.last.to_json()
                        ));
                    }
                }
            }
        }
        for (p, at) in self.parts.iter().zip(&self.at) {
            if at.is_some() {
                on_chain += p.amount;
            }
        }
        if gone > 0 || self.at.iter().any(Option::is_none) {
            super::COUNT.split_reorged.add(1);
        }
        let found = |i: usize| self.parts[i].notified || !self.parts[i].native;
        match row.tx_hash.as_deref() {
            None => {
                // Still short: never paid with money that is not on the chain.
                if row.state != State::Unpaid {
                    return Err(format!("{r}: a state without a payment key: {row:?}"));
                }
                let want = (!self.mine.is_empty()).then(|| credited_live.to_string());
                if row.amount_paid != want {
                    return Err(format!(
                        "{r}: amount_paid {:?}, its credited payments on chain sum to \
                         {credited_live} ({:?})",
                        row.amount_paid, self.mine
                    ));
                }
                if on_chain >= self.o.due && found(0) && found(1) {
                    return Err(format!(
                        "{r} did not converge: both payments on chain ({on_chain} of {}), \
                         found, yet {row:?}; credited {:?}; payments {:?}; the last run said {:?}",
                        self.o.due,
                        self.mine,
                        self.parts
                            .iter()
                            .map(|p| (&p.tx, p.amount, p.notified))
                            .collect::<Vec<_>>(),
                        self.said()
                    ));
                }
            }
            Some(tx) => {
                // Paid: the key is one of its credited payments, which covered it when it moved.
                let key = self
                    .mine
                    .iter()
                    .find(|c| c.tx == tx && Some(c.log_index) == row.log_index)
                    .ok_or_else(|| format!("{r}: its key {tx} is none of {:?}", self.mine))?;
                let total: u128 = self.mine.iter().map(|c| c.amount).sum();
                if total < self.o.due || self.mine.len() != 2 {
                    return Err(format!(
                        "{r}: paid with {:?} ({total} of {})",
                        self.mine, self.o.due
                    ));
                }
                let i = self.parts.iter().position(|p| p.tx == key.tx).unwrap_or(0);
                if let Some((block, _, _, _)) = &self.at[i] {
                    let want = implied(*block, head, confs, final_depth);
                    // Both parts on chain: the later one decides (the key names it).
                    if gone == 0 && row.state < want {
                        return Err(format!(
                            "{r}: {:?}, its completing payment in block {block} at head \
                             {head} implies {want:?}",
                            row.state
                        ));
                    }
                }
            }
        }
        Ok(gone)
    }
}
