//! The run report (docs/reference.md §4): JSON for `--format json`, text for people.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::domain::GapKind;

/// At most this many findings are listed in a report (the findings table holds all).
pub const MAX_FINDINGS: usize = 10_000;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Gaps {
    pub missing: u64,
    pub lagging: u64,
    pub failed_notification: u64,
    pub amount_mismatch: u64,
    pub unknown_payment: u64,
    pub reorged: u64,
    /// A payment after its order expired (docs/configuration.md, "Amounts").
    #[serde(default)]
    pub late_payment: u64,
    /// The balance check's (docs/operations.md, "Balances"): money gone elsewhere than a
    /// treasury, and a balance nothing explains.
    #[serde(default)]
    pub unexpected_outflow: u64,
    #[serde(default)]
    pub balance_mismatch: u64,
}

impl Gaps {
    pub fn add(&mut self, kind: GapKind, n: u64) {
        *match kind {
            GapKind::Missing => &mut self.missing,
            GapKind::Lagging => &mut self.lagging,
            GapKind::FailedNotification => &mut self.failed_notification,
            GapKind::AmountMismatch => &mut self.amount_mismatch,
            GapKind::UnknownPayment => &mut self.unknown_payment,
            GapKind::Reorged => &mut self.reorged,
            GapKind::LatePayment => &mut self.late_payment,
            GapKind::UnexpectedOutflow => &mut self.unexpected_outflow,
            GapKind::BalanceMismatch => &mut self.balance_mismatch,
        } += n;
    }
    pub fn get(&self, kind: GapKind) -> u64 {
        match kind {
            GapKind::Missing => self.missing,
            GapKind::Lagging => self.lagging,
            GapKind::FailedNotification => self.failed_notification,
            GapKind::AmountMismatch => self.amount_mismatch,
            GapKind::UnknownPayment => self.unknown_payment,
            GapKind::Reorged => self.reorged,
            GapKind::LatePayment => self.late_payment,
            GapKind::UnexpectedOutflow => self.unexpected_outflow,
            GapKind::BalanceMismatch => self.balance_mismatch,
        }
    }
    pub fn total(&self) -> u64 {
        self.missing
            + self.lagging
            + self.failed_notification
            + self.amount_mismatch
            + self.unknown_payment
            + self.reorged
            + self.late_payment
            + self.unexpected_outflow
            + self.balance_mismatch
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Resends {
    pub requested: u64,
    pub skipped: u64,
    pub failed: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProviderReport {
    pub provider: String,
    pub kind: String,
    pub status: String,
    pub error: Option<String>,
    pub checked: u64,
    pub gaps: Gaps,
    pub applied: u64,
    pub refused_backwards: u64,
    pub rejected: u64,
    pub resends: Resends,
    /// Pages of the provider's lists fetched in this run (docs/configuration.md,
    /// "Long notification lists").
    #[serde(default)]
    pub pages_read: u64,
    /// Pages the lists held (`last_page` summed over the lists read).
    #[serde(default)]
    pub pages_total: u64,
}

impl ProviderReport {
    pub fn new(provider: &str, kind: &str) -> ProviderReport {
        ProviderReport {
            provider: provider.to_string(),
            kind: kind.to_string(),
            status: "ok".into(),
            error: None,
            checked: 0,
            gaps: Gaps::default(),
            applied: 0,
            refused_backwards: 0,
            rejected: 0,
            resends: Resends::default(),
            pages_read: 0,
            pages_total: 0,
        }
    }
    pub fn failed(&self) -> bool {
        self.status == "failed"
    }
}

/// A finding in the report: the same fields as a `payrecon_findings` row.
pub type FindingOut = crate::store::FindingRow;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Totals {
    pub checked: u64,
    pub gaps: u64,
    pub applied: u64,
    pub resends_requested: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub run_id: String,
    pub started_at: String,
    pub finished_at: String,
    pub since: String,
    pub until: String,
    pub dry_run: bool,
    pub providers: Vec<ProviderReport>,
    pub totals: Totals,
    pub findings: Vec<FindingOut>,
    pub findings_truncated: bool,
}

impl Report {
    pub fn any_failed(&self) -> bool {
        self.providers.iter().any(ProviderReport::failed)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }

    /// Writes what `to_json` returns, and a newline, to `w`, streamed: a report holding 10,000 findings is
    /// not first built as one string (that string was the run's peak of memory at 1M records).
    pub fn write_json(&self, w: impl std::io::Write) -> std::io::Result<()> {
        use std::io::Write as _;
        let mut w = std::io::BufWriter::new(w);
        serde_json::to_writer_pretty(&mut w, self)?;
        w.write_all(b"\n")?;
        w.flush()
    }

    /// Reads a report printed by `run --format json` (tools and benchmarks).
    pub fn from_json(text: &str) -> Result<Report, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The report for people, amounts in base units (`to_text_with` shows tokens).
    pub fn to_text(&self) -> String {
        self.to_text_with(&crate::assets::Assets::default())
    }

    /// The report for people: amounts in tokens where `assets` knows their decimals
    /// (docs/reference.md, conventions: "Amounts for people"), a native payment's key as
    /// `native`, a held finding as held.
    pub fn to_text_with(&self, assets: &crate::assets::Assets) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "run {}{}",
            self.run_id,
            if self.dry_run {
                " (dry run: nothing written)"
            } else {
                ""
            }
        );
        let _ = writeln!(s, "window {} .. {}", self.since, self.until);
        for p in &self.providers {
            provider_line(&mut s, p);
        }
        if !self.findings.is_empty() {
            let _ = writeln!(s, "findings:");
        }
        for f in &self.findings {
            finding_line(&mut s, f, assets);
        }
        if self.findings_truncated {
            let _ = writeln!(
                s,
                "  (findings truncated at {MAX_FINDINGS}; the payrecon_findings table has all)"
            );
        }
        let t = &self.totals;
        let _ = writeln!(
            s,
            "totals: checked {}, gaps {}, applied {}, resends requested {}",
            t.checked, t.gaps, t.applied, t.resends_requested
        );
        s
    }
}

/// A part's line (and its error's) in the text report.
fn provider_line(s: &mut String, p: &ProviderReport) {
    let g = &p.gaps;
    let _ = writeln!(
            s,
            "{:<10} {:<6} checked {:>6}  gaps {:>4} (missing {}, lagging {}, failed_notification {}, amount_mismatch {}, unknown_payment {}, reorged {}, late_payment {}, unexpected_outflow {}, balance_mismatch {})  applied {}  refused_backwards {}  rejected {}  resends {}/{}/{} (requested/skipped/failed){}{}",
            p.provider,
            p.status,
            p.checked,
            g.total(),
            g.missing,
            g.lagging,
            g.failed_notification,
            g.amount_mismatch,
            g.unknown_payment,
            g.reorged,
            g.late_payment,
            g.unexpected_outflow,
            g.balance_mismatch,
            p.applied,
            p.refused_backwards,
            p.rejected,
            p.resends.requested,
            p.resends.skipped,
            p.resends.failed,
            if p.pages_read > 0 {
                format!("  pages {}/{}", p.pages_read, p.pages_total)
            } else {
                String::new()
            },
            p.error.as_ref().map(|e| format!("\n           error: {e}")).unwrap_or_default()
        );
}

/// A finding's line in the text report, amounts in tokens where `assets` knows them.
fn finding_line(s: &mut String, f: &FindingOut, assets: &crate::assets::Assets) {
    let key = match (&f.tx_hash, f.log_index) {
        (Some(h), Some(-1)) => format!("{} native", short(h)),
        (Some(h), Some(i)) => format!("{}#{i}", short(h)),
        (Some(h), None) => short(h),
        _ => "-".into(),
    };
    let local = f.local_state.as_deref().unwrap_or("-");
    // A held order did not move: its state alone, no arrow.
    let states = if f.action == "held" {
        format!("{local:>9}    {:<9}", "")
    } else {
        format!(
            "{local:>9} -> {:<9}",
            f.observed_state.as_deref().unwrap_or("-")
        )
    };
    let _ = writeln!(
        s,
        "  {:<20} {:<10} order {:<10} {states} {:<16} {} {}",
        f.kind,
        f.provider,
        f.order_ref.as_deref().unwrap_or("-"),
        f.action,
        key,
        assets.detail(&f.chain, f.asset.as_deref(), &f.detail)
    );
}

fn short(key: &str) -> String {
    if key.len() > 20 {
        format!("{}…{}", &key[..10], &key[key.len() - 8..])
    } else {
        key.to_string()
    }
}
