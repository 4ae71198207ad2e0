//! What stops part of a run (a list, a batch, the sweep, the scan), built from the layers'
//! own errors so a caller can tell them apart (`StoreError::is_retryable`, a lost lease);
//! its text reaches the report and the logs through `Engine::fail` only, which redacts it.

use crate::chain::ChainError;
use crate::providers::ProviderError;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum PartError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// The chain's head could not be read at the start of the run (`reason` names the chain):
    /// its records wait for the next run.
    #[error("chain {chain}: reading the chain head failed: {reason}")]
    ChainDown { chain: String, reason: String },
    #[error("chain {0} is not configured")]
    NotConfigured(String),
}
