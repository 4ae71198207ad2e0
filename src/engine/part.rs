//! The parts a run is made of: each provider's lists, and the chain sweep (ledger rows read
//! on chain whatever the providers say, with its reorg re-keying and the deposit scan). A
//! part has its own report entry, lease, tally and metrics label.

use std::collections::HashMap;
use std::time::Duration;

use crate::domain::LedgerRow;
use crate::report::{FindingOut, ProviderReport};

/// One part of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part<'a> {
    /// A configured provider, by name.
    Provider(&'a str),
    /// The chain sweep.
    Sweep,
    /// The run's own steps that no other part owns (the webhook inbox drained at its start,
    /// the exceptions opened, cleared and counted at its end): an entry in the report only
    /// when one of them failed; its metrics are kept every run.
    Run,
}

impl Part<'_> {
    /// Its name in reports, findings, leases and metrics: the provider's, `chain` for the
    /// sweep, `run` for the run's own steps (docs/reference.md §4; a provider cannot be named
    /// either).
    pub fn name(&self) -> &str {
        match self {
            Part::Provider(name) => name,
            Part::Sweep => "chain",
            Part::Run => "run",
        }
    }
}

/// What one part of a run (a provider's lists, or the sweep) has counted so far: its report
/// entry, findings, whether it stopped early and its time; and, apart, what its write batches
/// share (`shared`).
pub struct PartTally {
    pub report: ProviderReport,
    pub findings: Vec<FindingOut>,
    pub truncated: bool,
    pub elapsed: Duration,
    pub(crate) shared: BatchShared,
}

/// What the batches of one part share: the records already examined, the lease they write
/// under, and (when nothing is written) the rows as earlier batches would have left them.
#[derive(Default)]
pub(crate) struct BatchShared {
    /// Fingerprints of records already examined in this run (distinct `checked`).
    pub seen: super::seen::SeenSet,
    /// The lease this part runs under (scheduled runs): every write batch presents it.
    pub fence: Option<crate::store::Fence>,
    /// When nothing is written (dry run, `apply = false`): the rows as earlier batches of
    /// this run would have left them, by order id, so that later batches plan on top of them.
    pub simulated: HashMap<i64, LedgerRow>,
}

impl PartTally {
    pub fn new(provider: &str, kind: &str) -> PartTally {
        PartTally {
            report: ProviderReport::new(provider, kind),
            findings: Vec::new(),
            truncated: false,
            elapsed: Duration::ZERO,
            shared: BatchShared::default(),
        }
    }

    /// Marks this provider failed (the first error is kept; work already done stays).
    pub fn fail(&mut self, error: String) {
        tracing::error!(provider = %self.report.provider, error = %error, "Part of the run failed.");
        self.report.status = "failed".into();
        match &mut self.report.error {
            Some(e) => {
                e.push_str("; ");
                e.push_str(&error);
            }
            None => self.report.error = Some(error),
        }
    }
}

#[cfg(test)]
mod tests;
