-- The operator console (SPEC §19) reads each page on an index, however long the history.
-- An order's findings on its timeline, newest first.
CREATE INDEX IF NOT EXISTS payrecon_findings_order ON payrecon_findings (order_ref, id);
-- An order's events, delivered ones too (its timeline, `events --order`, `replay --order`).
CREATE INDEX IF NOT EXISTS payrecon_events_order_all ON payrecon_events (order_id, seq);
-- The events page: dead ones and pending ones, newest first.
CREATE INDEX IF NOT EXISTS payrecon_events_dead ON payrecon_events (seq)
    WHERE dead_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS payrecon_events_pending ON payrecon_events (seq)
    WHERE delivered_at IS NULL AND dead_at IS NULL;
-- Delivered ones in pages by `seq` (SQLite's `seq` is the rowid; `payrecon_events_seq` is
-- the sequence).
CREATE UNIQUE INDEX IF NOT EXISTS payrecon_events_by_seq ON payrecon_events (seq);
-- The orders held now (unpaid, no key, part of the amount paid): the overview and each run's
-- count for `payrecon_orders_held`.
CREATE INDEX IF NOT EXISTS orders_held ON orders (id)
    WHERE state = 'unpaid' AND tx_hash IS NULL AND amount_paid IS NOT NULL;
-- The search box: a deposit address's orders, a transaction's exceptions.
CREATE INDEX IF NOT EXISTS orders_pay_to ON orders (pay_to);
CREATE INDEX IF NOT EXISTS payrecon_exceptions_tx ON payrecon_exceptions (tx_hash);
-- Exceptions of a kind, newest first (any status).
CREATE INDEX IF NOT EXISTS payrecon_exceptions_kind ON payrecon_exceptions (kind, id);
-- Runs newest first (the runs page, `status`'s last runs), and the last ones finished.
CREATE INDEX IF NOT EXISTS payrecon_runs_started ON payrecon_runs (started_at, id);
CREATE INDEX IF NOT EXISTS payrecon_runs_finished ON payrecon_runs (finished_at);
-- The balances page: the addresses whose last check left a difference.
CREATE INDEX IF NOT EXISTS payrecon_balances_mismatched
    ON payrecon_balances (chain, address, asset) WHERE difference <> '0'::numeric;
