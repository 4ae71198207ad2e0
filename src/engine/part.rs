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
}

impl Part<'_> {
    /// Its name in reports, findings, leases and metrics: the provider's, or `chain` for
    /// the sweep (docs/reference.md §4; a provider cannot be named `chain`).
    pub fn name(&self) -> &str {
        match self {
            Part::Provider(name) => name,
            Part::Sweep => "chain",
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
    }
}
