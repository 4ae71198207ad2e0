-- Which providers a run reconciled (",cg,chain,"), written when it finishes: a scheduled run
-- skips a provider whose lease another instance holds, and `run --provider` is scoped.
-- NULL (a run killed before it finished, or an older row): any provider.
ALTER TABLE payrecon_runs ADD COLUMN providers TEXT;
-- `payrecon status` counts the findings of the last 24 hours.
CREATE INDEX IF NOT EXISTS payrecon_findings_created ON payrecon_findings (created_at);
