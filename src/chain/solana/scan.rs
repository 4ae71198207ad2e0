//! Solana's deposit scan (docs/configuration.md, "Solana"): `getSignaturesForAddress` on each
//! unpaid order's wallet and each of its token accounts (a token payment into an existing
//! account lists only that account), newest first in pages of 1,000, until a page reaches past
//! the run's window; what they list is resolved like any other signature
//! (`SolanaClient::lookup`). Each account's listing stops at its cursor too (`until`): a run
//! with nothing new costs one page per account and reads no transaction.

use std::collections::{HashMap, HashSet};

use futures::{StreamExt, TryStreamExt};
use serde::Deserialize;
use serde_json::{json, Value};

use super::tx::plausible_time;
use super::{Context, SolanaClient, IN_FLIGHT};
use crate::chain::{ChainError, Lookup, TransferQuery};
use crate::domain::{Address, ChainHead, ChainKind, ChainTransfer, ScanCursor};

/// Signatures per `getSignaturesForAddress` page (the most a node serves).
pub(in crate::chain) const PAGE: usize = 1_000;
/// Pages of one address read in one run at most (1,000,000 signatures in the window).
pub(in crate::chain) const MAX_PAGES: usize = 1_000;
const TOKEN: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
const TOKEN_2022: &str = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PazCLBjd6L8S8u";

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(in crate::chain) struct Listed {
    pub signature: String,
    pub slot: u64,
    pub err: Option<Value>,
    pub block_time: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct Owned {
    pubkey: String,
}

/// The deposit scan's cursors for one page of orders (`payrecon_scan_cursors`).
#[derive(Debug, Default)]
pub struct ScanCursors {
    /// Where each account's listing stops, by account; empty for a backfill (`run --since`
    /// reads its whole window).
    pub from: HashMap<String, ScanCursor>,
    /// `(owner, account, cursor)` of every account whose listing reached a newer finalized
    /// signature: where the next run stops, once this one's payments are settled.
    pub moved: Vec<(String, String, ScanCursor)>,
}

/// One account's listing: the signatures to resolve, and its new cursor.
type Listing = (Vec<String>, Option<ScanCursor>);

impl SolanaClient {
    /// The deposit scan: every payment to one of `recipients` (wallets) in a transaction
    /// listed on the wallet or one of its token accounts since `since`.
    pub async fn payments_to(
        &self,
        head: &ChainHead,
        recipients: &[Address],
        since: jiff::Timestamp,
        cursors: &mut ScanCursors,
    ) -> Result<Vec<ChainTransfer>, ChainError> {
        let from = &cursors.from;
        let listed: Vec<Vec<(String, Listing)>> = futures::stream::iter(recipients.to_vec())
            .map(|to| async move {
                let mut out = Vec::new();
                for account in self.accounts_of(&to).await? {
                    let until = from.get(&account);
                    let listing = self.signatures(&account, since, until, head).await?;
                    out.push((account, listing));
                }
                Ok::<_, ChainError>(out)
            })
            .buffered(IN_FLIGHT)
            .try_collect()
            .await?;
        let mut sigs = Vec::new();
        for (to, accounts) in recipients.iter().zip(listed) {
            for (account, (found, cursor)) in accounts {
                if let Some(c) = cursor {
                    cursors.moved.push((to.to_string(), account, c));
                }
                sigs.extend(found.into_iter().map(|s| (s, to.clone(), ())));
            }
        }
        let found = self.resolve_listed(head, sigs.into_iter()).await?;
        Ok(found.into_iter().map(|((), t)| t).collect())
    }

    /// Payments carrying Solana Pay references (docs/configuration.md, "Solana"): for each
    /// `(reference, pay_to)`, the transactions listed on the reference since `since`, and their
    /// transfers to `pay_to`, each with the reference it was found by.
    pub async fn payments_by_reference(
        &self,
        head: &ChainHead,
        references: &[(String, Address)],
        since: jiff::Timestamp,
        cursors: &mut ScanCursors,
    ) -> Result<Vec<(String, ChainTransfer)>, ChainError> {
        let from = &cursors.from;
        let listed: Vec<Listing> = futures::stream::iter(references.to_vec())
            .map(|(reference, _)| async move {
                let until = from.get(&reference);
                self.signatures(&reference, since, until, head).await
            })
            .buffered(IN_FLIGHT)
            .try_collect()
            .await?;
        let mut sigs = Vec::new();
        for ((reference, to), (found, cursor)) in references.iter().zip(listed) {
            if let Some(c) = cursor {
                cursors
                    .moved
                    .push((reference.clone(), reference.clone(), c));
            }
            sigs.extend(
                found
                    .into_iter()
                    .map(|s| (s, to.clone(), reference.clone())),
            );
        }
        self.resolve_listed(head, sigs.into_iter()).await
    }

    /// The transfers to `to` in each listed `(signature, to, tag)` (each pair once), with
    /// its tag: one `lookup` for all of them.
    async fn resolve_listed<T: Clone + Eq + std::hash::Hash>(
        &self,
        head: &ChainHead,
        listed: impl Iterator<Item = (String, Address, T)>,
    ) -> Result<Vec<(T, ChainTransfer)>, ChainError> {
        let mut seen = HashSet::new();
        let mut tags = Vec::new();
        let mut queries = Vec::new();
        for (sig, to, tag) in listed {
            let Ok(tx_hash) = ChainKind::Solana.tx_hash(&sig) else {
                continue;
            };
            if !seen.insert((sig, to.clone(), tag.clone())) {
                continue;
            }
            tags.push(tag);
            queries.push(TransferQuery {
                tx_hash,
                asset: None,
                to: Some(to),
                log_index: None,
            });
        }
        let answers = self.lookup(head, &queries).await?;
        Ok(tags
            .into_iter()
            .zip(answers)
            .flat_map(|(tag, a)| match a {
                Lookup::Found(ts) => ts.into_iter().map(|t| (tag.clone(), t)).collect(),
                _ => Vec::new(),
            })
            .collect())
    }

    /// A wallet and its token accounts (Token and Token-2022): a token payment is listed on
    /// the account it credits, not on the wallet.
    async fn accounts_of(&self, wallet: &Address) -> Result<Vec<String>, ChainError> {
        let mut out = vec![wallet.to_string()];
        for program in [TOKEN, TOKEN_2022] {
            let owned: Context<Vec<Owned>> = self
                .rpc
                .call(
                    "getTokenAccountsByOwner",
                    "getTokenAccountsByOwner",
                    json!([wallet.as_str(), { "programId": program },
                           { "encoding": "jsonParsed", "commitment": "confirmed" }]),
                )
                .await?;
            out.extend(owned.value.into_iter().map(|o| o.pubkey));
        }
        Ok(out)
    }

    /// The signatures of `address`'s successful transactions since `since` and after
    /// `until`, newest first, a page of 1,000 at a time, until a page is short or its oldest
    /// entry is before `since`; and the newest listed at or below the head's finalized slot
    /// (the account's next cursor).
    async fn signatures(
        &self,
        address: &str,
        since: jiff::Timestamp,
        until: Option<&ScanCursor>,
        head: &ChainHead,
    ) -> Result<Listing, ChainError> {
        let what = "getSignaturesForAddress";
        let mut out = Vec::new();
        let mut cursor = None;
        let mut before: Option<String> = None;
        let mut seen = HashSet::new();
        for _ in 0..MAX_PAGES {
            let mut opts = json!({ "limit": PAGE, "commitment": "confirmed" });
            if let Some(b) = &before {
                opts["before"] = json!(b);
            }
            if let Some(u) = until {
                opts["until"] = json!(u.signature);
            }
            let page: Vec<Listed> = self.rpc.call(what, what, json!([address, opts])).await?;
            let full = page.len() >= PAGE;
            if cursor.is_none() {
                cursor = page
                    .iter()
                    .find(|e| e.slot <= head.final_block)
                    .map(|e| ScanCursor {
                        signature: e.signature.clone(),
                        slot: e.slot,
                    });
            }
            let Some(oldest) = page.last() else {
                return Ok((out, cursor));
            };
            let passed = self.time_of(oldest).await?.is_some_and(|t| t < since);
            if !seen.insert(oldest.signature.clone()) {
                return Err(self.fail(
                    what,
                    format!(
                        "the history of {address} does not page on from {}",
                        oldest.signature
                    ),
                ));
            }
            before = Some(oldest.signature.clone());
            for entry in &page {
                let old = plausible_time(entry.block_time).is_some_and(|t| t < since);
                if entry.err.is_none() && !old {
                    out.push(entry.signature.clone());
                }
            }
            if passed || !full {
                return Ok((out, cursor));
            }
        }
        Err(self.fail(
            what,
            format!("the history of {address} in the window is longer than {MAX_PAGES} pages"),
        ))
    }

    /// A listed entry's time: its own when plausible, else its slot's.
    pub(in crate::chain) async fn time_of(
        &self,
        entry: &Listed,
    ) -> Result<Option<jiff::Timestamp>, ChainError> {
        match plausible_time(entry.block_time) {
            Some(t) => Ok(Some(t)),
            None => self.block_time(entry.slot).await,
        }
    }
}
