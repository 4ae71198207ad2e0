//! The start-of-run check of one chain: every URL's `eth_chainId` against the configured
//! `chain_id` (and against each other), then the head and the finality tag.

use alloy::primitives::U64;

use super::ChainError;
use crate::domain::ChainHead;

/// What the start-of-run check found on a chain that passed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preflight {
    /// `None` on a chain that has none (Bitcoin, Solana).
    pub chain_id: Option<u64>,
    pub head: ChainHead,
    /// URLs that did not answer (without credentials, with the reason): the chain is usable
    /// through the others, but a failover has fewer places to go.
    pub unreachable: Vec<String>,
}

impl Preflight {
    /// A chain without a chain id (Bitcoin, Solana): the check is that it answers its head.
    pub(super) fn head_only(head: ChainHead) -> Preflight {
        Preflight {
            chain_id: None,
            head,
            unreachable: Vec::new(),
        }
    }
}

impl super::EvmClient {
    /// Asks each URL once for its chain id (a mismatch with `chain_id`, or URLs that disagree,
    /// is a `ChainIdMismatch`/`ChainIdsDisagree`), then reads the head and the final block
    /// through the normal failover path (a node without the finality tag is
    /// `TagUnsupported`). When no URL answers the first question, the chain id is read once
    /// more with the full retry budget, whose failure (`ChainError::Rpc`) means unreachable.
    #[tracing::instrument(skip_all, fields(chain = %self.settings.name))]
    pub async fn preflight(&self) -> Result<Preflight, ChainError> {
        let name = &self.settings.name;
        let mut ids: Vec<(String, u64)> = Vec::new();
        let mut unreachable = Vec::new();
        for i in 0..self.rpc.len() {
            let shown = self.rpc.shown(i).to_string();
            match self
                .rpc
                .call_at::<_, U64>(i, "eth_chainId", "eth_chainId", ())
                .await
            {
                Ok(id) => ids.push((shown, id.to())),
                Err(e) => {
                    let reason = match e {
                        ChainError::Rpc { reason, .. } => reason,
                        other => other.to_string(),
                    };
                    tracing::warn!(chain = %name, url = %shown, error = %reason,
                        "A chain RPC URL did not answer the start-of-run check.");
                    unreachable.push(reason);
                }
            }
        }
        if ids.is_empty() {
            let id = self.chain_id().await?;
            ids.push((self.rpc.shown(self.rpc.active()).to_string(), id));
        }
        if let Some(expected) = self.settings.chain_id {
            if let Some((url, actual)) = ids.iter().find(|(_, id)| *id != expected) {
                return Err(ChainError::ChainIdMismatch {
                    chain: name.clone(),
                    expected,
                    actual: *actual,
                    url: url.clone(),
                });
            }
        }
        let first = ids[0].1;
        if ids.iter().any(|(_, id)| *id != first) {
            let listed: Vec<String> = ids.iter().map(|(u, id)| format!("{u}: {id}")).collect();
            return Err(ChainError::ChainIdsDisagree {
                chain: name.clone(),
                ids: listed.join(", "),
            });
        }
        let head = self.head().await?;
        Ok(Preflight {
            chain_id: Some(first),
            head,
            unreachable,
        })
    }
}
