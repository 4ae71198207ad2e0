//! `payrecon status --format text|json`: one JSON document, or a compact table for people.

use std::fmt::Write as _;

use super::{GapKind, Gaps, Status};

impl Status {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a status always serializes")
    }

    /// A compact table for people.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "payrecon status ({}) at {}",
            self.database, self.generated_at
        );
        let _ = writeln!(
            s,
            "\n{:<12} {:<8} {:<8} {:<24} {:>9}  {:<24} last success",
            "provider", "status", "trigger", "last run started", "duration", "finished"
        );
        for p in &self.providers {
            let last_success = p.last_success_at.as_deref().unwrap_or("never");
            let Some(r) = &p.last_run else {
                let _ = writeln!(s, "{:<12} {:<8} (no run yet)", p.provider, "-");
                continue;
            };
            let _ = writeln!(
                s,
                "{:<12} {:<8} {:<8} {:<24} {:>9}  {:<24} {last_success}",
                p.provider,
                r.status,
                r.trigger,
                r.started_at,
                r.duration_seconds
                    .map_or("-".into(), |d| format!("{d:.1}s")),
                r.finished_at.as_deref().unwrap_or("-"),
            );
            if let Some(e) = &r.error {
                let _ = writeln!(s, "{:<12} error: {e}", "");
            }
        }
        self.gaps_text(&mut s);
        self.findings_text(&mut s);
        let r = &self.resends;
        let _ = writeln!(
            s,
            "\npending resends (cooldown {}s): {}",
            r.cooldown_seconds, r.pending
        );
        for i in &r.items {
            let _ = writeln!(
                s,
                "  {:<12} {:<24} requested {}",
                i.provider, i.notification_id, i.requested_at
            );
        }
        let w = &self.webhook_inbox;
        let _ = match (&w.oldest_received_at, w.oldest_age_seconds) {
            (Some(t), Some(age)) => writeln!(
                s,
                "\nwebhook inbox: {} unprocessed, oldest received {t} ({age}s ago)",
                w.unprocessed
            ),
            _ => writeln!(s, "\nwebhook inbox: {} unprocessed", w.unprocessed),
        };
        let e = &self.events;
        let _ = match (&e.oldest_pending_at, e.oldest_pending_age_seconds) {
            (Some(t), Some(age)) => writeln!(
                s,
                "\nevents: {} pending, {} dead, oldest pending written {t} ({age}s ago){}",
                e.pending,
                e.dead,
                if e.enabled {
                    ""
                } else {
                    " (events are off in this configuration)"
                }
            ),
            _ => writeln!(
                s,
                "\nevents: {} pending, {} dead{}",
                e.pending,
                e.dead,
                if e.enabled {
                    ""
                } else {
                    " (events are off in this configuration)"
                }
            ),
        };
        if !self.lists.is_empty() {
            let _ = writeln!(
                s,
                "\nlists (last run's pages read of pages; last whole read):"
            );
            for l in &self.lists {
                let _ = writeln!(
                    s,
                    "  {:<12} {:<10} {:<6} {} of {} at {}; whole {}",
                    l.provider,
                    l.chain.as_deref().unwrap_or("*"),
                    l.list,
                    l.last_pages_read,
                    l.last_pages_total,
                    l.last_read_at,
                    l.last_full_read_at.as_deref().unwrap_or("never")
                );
            }
        }
        if !self.lease_table {
            let _ = writeln!(s, "\nleases: no leases (single instance)");
        } else {
            let _ = writeln!(s, "\nleases: {}", self.leases.len());
            for l in &self.leases {
                let _ = writeln!(
                    s,
                    "  {:<12} holder {} token {} expires {}",
                    l.provider,
                    l.holder.as_deref().unwrap_or("-"),
                    l.token.map_or("-".into(), |t| t.to_string()),
                    l.expires_at.as_deref().unwrap_or("-")
                );
            }
        }
        s
    }

    fn gaps_text(&self, s: &mut String) {
        let g = &self.gaps_24h;
        let _ = writeln!(s, "\ngaps since {} (24 h)", g.since);
        let _ = write!(s, "{:<12}", "provider");
        for k in GapKind::ALL {
            let _ = write!(s, " {:>19}", k.as_str());
        }
        let _ = writeln!(s, " {:>7}", "total");
        // Configured order first, then any other provider with findings, then the total.
        let mut rows: Vec<(&str, &Gaps)> = Vec::new();
        for p in &self.providers {
            if let Some(gaps) = g.providers.get(&p.provider) {
                rows.push((&p.provider, gaps));
            }
        }
        for (name, gaps) in &g.providers {
            if !self.providers.iter().any(|p| &p.provider == name) {
                rows.push((name, gaps));
            }
        }
        rows.push(("total", &g.total));
        for (name, gaps) in rows {
            let _ = write!(s, "{name:<12}");
            for k in GapKind::ALL {
                let _ = write!(s, " {:>19}", gaps.get(k));
            }
            let _ = writeln!(s, " {:>7}", gaps.total());
        }
    }

    fn findings_text(&self, s: &mut String) {
        let o = &self.open_findings;
        let run = o.run_id.as_deref().unwrap_or("none");
        let _ = writeln!(s, "\nopen findings of the last finished run ({run})");
        for (kind, list) in [
            ("reorged", &o.reorged),
            ("amount_mismatch", &o.amount_mismatch),
        ] {
            let _ = writeln!(s, "  {kind}: {}", list.count);
            for f in &list.items {
                let key = match (&f.tx_hash, f.log_index) {
                    (Some(h), Some(i)) => format!("{h}#{i}"),
                    (Some(h), None) => h.clone(),
                    _ => "-".into(),
                };
                let _ = writeln!(
                    s,
                    "    order {:<12} {:<10} {:<10} {key} {}",
                    f.order_ref.as_deref().unwrap_or("-"),
                    f.provider,
                    f.chain,
                    f.detail
                );
            }
            if (list.items.len() as i64) < list.count {
                let _ = writeln!(s, "    … {} more", list.count - list.items.len() as i64);
            }
        }
    }
}
