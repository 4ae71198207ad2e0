//! The parts a run is made of: each provider's lists, and the chain sweep (ledger rows read
//! on chain whatever the providers say, with its reorg re-keying and the deposit scan). A
//! part has its own report entry, lease, tally and metrics label.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_is_named_chain_as_spec_5_says() {
        assert_eq!(Part::Sweep.name(), "chain");
        assert_eq!(Part::Provider("cg").name(), "cg");
        assert_eq!(Part::Run.name(), "run");
    }
}
