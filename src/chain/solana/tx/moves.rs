//! What one transaction did to one wallet's holding of one asset (the balance check on
//! Solana: docs/configuration.md, "Solana"): its transfers to and from the wallet, and the
//! wallet's net change, which the transfers and the fee may not explain whole (a program moving
//! lamports, an account closed to the wallet).

use super::{token_owner, Meta, Tx};
use crate::domain::U256;

/// One transaction's effect on `(wallet, asset)`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Moves {
    /// `(instruction index, from wallet, to wallet, amount)` of each transfer between the
    /// wallet and another (a token account stands for its owner).
    pub transfers: Vec<(i64, String, String, U256)>,
    /// The wallet's change (post − pre; for a token, over all its accounts of the mint).
    pub net: i128,
    /// The fee, when the wallet paid it (SOL, the first account).
    pub fee: u64,
}

impl Tx {
    /// What this transaction did to `wallet`'s SOL (`mint` `None`) or tokens of `mint`.
    pub(in crate::chain) fn moves(&self, wallet: &str, mint: Option<&str>) -> Moves {
        let Some(meta) = &self.meta else {
            return Moves::default();
        };
        let owner = |account: &str| match mint {
            None => Some(account.to_string()),
            Some(_) => self.index_of(account).and_then(|i| token_owner(meta, i)),
        };
        let mut out = Moves::default();
        for r in self.raws(meta) {
            if r.mint.as_deref() != mint {
                continue;
            }
            let (Some(from), Some(to)) = (owner(&r.source), owner(&r.dest)) else {
                continue;
            };
            if (from == wallet) != (to == wallet) {
                out.transfers.push((r.index, from, to, r.amount));
            }
        }
        match mint {
            None => {
                let i = self.index_of(wallet);
                let at = |v: &[u64]| i.and_then(|i| v.get(i)).map_or(0, |b| i128::from(*b));
                out.net = at(&meta.post_balances) - at(&meta.pre_balances);
                if i == Some(0) {
                    out.fee = meta.fee;
                }
            }
            Some(m) => out.net = held(meta, wallet, m, true) - held(meta, wallet, m, false),
        }
        out
    }
}

/// What `wallet`'s accounts of `mint` hold after (`post`) or before the transaction.
fn held(meta: &Meta, wallet: &str, mint: &str, post: bool) -> i128 {
    let list = match post {
        true => meta.post_token_balances.as_deref(),
        false => meta.pre_token_balances.as_deref(),
    };
    list.into_iter()
        .flatten()
        .filter(|b| b.mint == mint && b.owner.as_deref() == Some(wallet))
        .filter_map(|b| b.ui_token_amount.amount.parse::<i128>().ok())
        .sum()
}
