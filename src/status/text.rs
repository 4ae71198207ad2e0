//! `payrecon status --format text|json`: one JSON document, or a compact table for people.

use std::fmt::Write as _;

use super::{GapKind, Gaps, Status};

impl Status {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a status always serializes")
    }

    /// A compact table for people, amounts in base units (`to_text_with` shows tokens).
    pub fn to_text(&self) -> String {
        self.to_text_with(&crate::assets::Assets::default())
    }

    /// A compact table for people, amounts in tokens where `assets` knows their decimals.
    pub fn to_text_with(&self, assets: &crate::assets::Assets) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "payrecon status ({}) at {}",
            self.database, self.generated_at
        );
        if let Some(next) = &self.next_scheduled_run {
            let _ = writeln!(s, "next scheduled run: {next} (schedule.cron, under serve)");
        }
        self.providers_text(&mut s);
        self.gaps_text(&mut s);
        self.findings_text(&mut s, assets);
        self.resends_text(&mut s);
        self.inbox_text(&mut s);
        self.events_text(&mut s);
        self.lists_text(&mut s);
        self.leases_text(&mut s);
        s
    }

    /// The providers table: one row per provider's last run, and its error if any.
    fn providers_text(&self, s: &mut String) {
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
    }

    /// The pending resends: their count and cooldown, then one line each.
    fn resends_text(&self, s: &mut String) {
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
    }

    /// The webhook inbox: unprocessed deliveries and the oldest one's age.
    fn inbox_text(&self, s: &mut String) {
        let w = &self.webhook_inbox;
        let _ = match (&w.oldest_received_at, w.oldest_age_seconds) {
            (Some(t), Some(age)) => writeln!(
                s,
                "\nwebhook inbox: {} unprocessed, oldest received {t} ({age}s ago)",
                w.unprocessed
            ),
            _ => writeln!(s, "\nwebhook inbox: {} unprocessed", w.unprocessed),
        };
    }

    /// The merchant events: pending and dead counts, the oldest pending one's age.
    fn events_text(&self, s: &mut String) {
        let e = &self.events;
        let off = if e.enabled {
            ""
        } else {
            " (events are off in this configuration)"
        };
        let _ = match (&e.oldest_pending_at, e.oldest_pending_age_seconds) {
            (Some(t), Some(age)) => writeln!(
                s,
                "\nevents: {} pending, {} dead, oldest pending written {t} ({age}s ago){off}",
                e.pending, e.dead
            ),
            _ => writeln!(s, "\nevents: {} pending, {} dead{off}", e.pending, e.dead),
        };
    }

    /// The list reads (nothing when there are none): pages read and the last whole read.
    fn lists_text(&self, s: &mut String) {
        if self.lists.is_empty() {
            return;
        }
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

    /// The leases: none without a lease table, else one line per provider's lease.
    fn leases_text(&self, s: &mut String) {
        if !self.lease_table {
            let _ = writeln!(s, "\nleases: no leases (single instance)");
            return;
        }
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

    fn findings_text(&self, s: &mut String, assets: &crate::assets::Assets) {
        let x = &self.exceptions;
        if !x.table {
            let _ = writeln!(s, "\nexceptions: no table (run `payrecon migrate`)");
            return;
        }
        let _ = writeln!(s, "\nopen exceptions: {}", x.open_total);
        for (kind, o) in &x.open {
            let oldest = match (&o.oldest_first_seen_at, o.oldest_age_seconds) {
                (Some(t), Some(age)) => format!(", oldest first seen {t} ({})", age_text(age)),
                _ => String::new(),
            };
            let _ = writeln!(s, "  {kind}: {}{oldest}", o.open);
        }
        for e in &x.items {
            let _ = writeln!(
                s,
                "    #{:<6} {:<15} order {:<12} seen {:>4}x  {}",
                e.id,
                e.kind,
                e.order_ref.as_deref().unwrap_or("-"),
                e.seen_count,
                assets.detail(&e.chain, e.asset.as_deref(), &e.detail)
            );
        }
        if (x.items.len() as i64) < x.open_total {
            let _ = writeln!(
                s,
                "    … {} more (payrecon exceptions)",
                x.open_total - x.items.len() as i64
            );
        }
    }
}

/// `3d 4h`, `5h 2m`, `40s`: an age for a person.
fn age_text(secs: i64) -> String {
    let (d, h, m) = (secs / 86_400, secs % 86_400 / 3_600, secs % 3_600 / 60);
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else if m > 0 {
        format!("{m}m")
    } else {
        format!("{secs}s")
    }
}
