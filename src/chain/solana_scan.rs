//! Solana's deposit scan (SPEC §18): `getSignaturesForAddress` on each unpaid order's wallet
//! and each of its token accounts (a token payment into an existing account lists only that
//! account), newest first in pages of 1,000, until a page reaches past the run's window; what
//! they list is resolved like any other signature (`SolanaClient::lookup`).

use std::collections::HashSet;

use futures::{StreamExt, TryStreamExt};
use serde::Deserialize;
use serde_json::{json, Value};

use super::solana::{Context, SolanaClient, IN_FLIGHT};
use super::solana_tx::plausible_time;
use super::{ChainError, Lookup, TransferQuery};
use crate::domain::{Address, ChainHead, ChainKind, ChainTransfer};

/// Signatures per `getSignaturesForAddress` page (the most a node serves).
const PAGE: usize = 1_000;
/// Pages of one address read in one run at most (1,000,000 signatures in the window).
const MAX_PAGES: usize = 1_000;
const TOKEN: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
const TOKEN_2022: &str = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PazCLBjd6L8S8u";

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Listed {
    signature: String,
    slot: u64,
    err: Option<Value>,
    block_time: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct Owned {
    pubkey: String,
}

impl SolanaClient {
    /// The deposit scan: every payment to one of `recipients` (wallets) in a transaction
    /// listed on the wallet or one of its token accounts since `since`.
    pub async fn payments_to(
        &self,
        head: &ChainHead,
        recipients: &[Address],
        since: jiff::Timestamp,
    ) -> Result<Vec<ChainTransfer>, ChainError> {
        let listed: Vec<Vec<(String, Address)>> = futures::stream::iter(recipients.to_vec())
            .map(|to| async move {
                let mut sigs = Vec::new();
                for account in self.accounts_of(&to).await? {
                    for s in self.signatures(&account, since).await? {
                        sigs.push((s, to.clone()));
                    }
                }
                Ok::<_, ChainError>(sigs)
            })
            .buffered(IN_FLIGHT)
            .try_collect()
            .await?;
        let listed = listed.into_iter().flatten().map(|(sig, to)| (sig, to, ()));
        let found = self.resolve_listed(head, listed).await?;
        Ok(found.into_iter().map(|((), t)| t).collect())
    }

    /// Payments carrying Solana Pay references (SPEC §18): for each `(reference, pay_to)`,
    /// the transactions listed on the reference since `since`, and their transfers to
    /// `pay_to`, each with the reference it was found by.
    pub async fn payments_by_reference(
        &self,
        head: &ChainHead,
        references: &[(String, Address)],
        since: jiff::Timestamp,
    ) -> Result<Vec<(String, ChainTransfer)>, ChainError> {
        let listed: Vec<Vec<(String, String, Address)>> =
            futures::stream::iter(references.to_vec())
                .map(|(reference, to)| async move {
                    let sigs = self.signatures(&reference, since).await?;
                    Ok::<_, ChainError>(
                        sigs.into_iter()
                            .map(|s| (s, reference.clone(), to.clone()))
                            .collect(),
                    )
                })
                .buffered(IN_FLIGHT)
                .try_collect()
                .await?;
        let listed = listed
            .into_iter()
            .flatten()
            .map(|(sig, r, to)| (sig, to, r));
        self.resolve_listed(head, listed).await
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

    /// The signatures of `address`'s successful transactions since `since`, newest first, a
    /// page of 1,000 at a time, until a page is short or its oldest entry is before `since`.
    async fn signatures(
        &self,
        address: &str,
        since: jiff::Timestamp,
    ) -> Result<Vec<String>, ChainError> {
        let what = "getSignaturesForAddress";
        let mut out = Vec::new();
        let mut before: Option<String> = None;
        let mut seen = HashSet::new();
        for _ in 0..MAX_PAGES {
            let mut opts = json!({ "limit": PAGE, "commitment": "confirmed" });
            if let Some(b) = &before {
                opts["before"] = json!(b);
            }
            let page: Vec<Listed> = self.rpc.call(what, what, json!([address, opts])).await?;
            let full = page.len() >= PAGE;
            let Some(oldest) = page.last() else {
                return Ok(out);
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
                return Ok(out);
            }
        }
        Err(self.fail(
            what,
            format!("the history of {address} in the window is longer than {MAX_PAGES} pages"),
        ))
    }

    /// A listed entry's time: its own when plausible, else its slot's.
    async fn time_of(&self, entry: &Listed) -> Result<Option<jiff::Timestamp>, ChainError> {
        match plausible_time(entry.block_time) {
            Some(t) => Ok(Some(t)),
            None => self.block_time(entry.slot).await,
        }
    }
}
