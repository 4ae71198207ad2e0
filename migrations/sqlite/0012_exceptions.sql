-- Exceptions (SPEC §15): what payrecon cannot settle alone, one row per problem however many
-- runs see it. `problem` names the problem (`order:<ref>:<kind>` for an order held or
-- overpaid, `payment:<chain>:<tx>:<log>` for a payment to no order, `reorged:<chain>:<tx>:<ref>`
-- for a payment that left the chain): at most one open row each. `last_run_id`: the run that
-- saw it last (`seen_count` counts runs, not batches). Amounts are base units as TEXT.
CREATE TABLE IF NOT EXISTS payrecon_exceptions (
    id            INTEGER PRIMARY KEY,
    kind          TEXT    NOT NULL
                  CHECK (kind IN ('amount_mismatch', 'late_payment', 'unknown_payment', 'reorged')),
    order_id      INTEGER,
    chain         TEXT    NOT NULL,
    tx_hash       TEXT,
    log_index     INTEGER,
    amount        TEXT,
    detail        TEXT    NOT NULL DEFAULT '',
    status        TEXT    NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
    first_seen_at TEXT    NOT NULL,
    last_seen_at  TEXT    NOT NULL,
    seen_count    INTEGER NOT NULL DEFAULT 1,
    resolved_at   TEXT,
    resolved_by   TEXT,
    resolution    TEXT    CHECK (resolution IN ('accepted', 'attached', 'dismissed', 'cleared')),
    note          TEXT,
    problem       TEXT    NOT NULL,
    last_run_id   TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS payrecon_exceptions_open_problem
    ON payrecon_exceptions (problem) WHERE status = 'open';
-- The list and the metrics read open ones by kind; the export joins by payment key.
CREATE INDEX IF NOT EXISTS payrecon_exceptions_open_kind
    ON payrecon_exceptions (kind, first_seen_at) WHERE status = 'open';
CREATE INDEX IF NOT EXISTS payrecon_exceptions_payment
    ON payrecon_exceptions (chain, tx_hash, log_index);
CREATE INDEX IF NOT EXISTS payrecon_exceptions_order ON payrecon_exceptions (order_id);

-- An operator's decision is a transition too (`exceptions accept`): source `operator`. SQLite
-- cannot change a CHECK, so the audit table is copied into one that allows it.
CREATE TABLE payrecon_transitions_v12 (
    id         INTEGER PRIMARY KEY,
    order_id   INTEGER NOT NULL,
    from_state TEXT    NOT NULL,
    to_state   TEXT    NOT NULL,
    source     TEXT    NOT NULL CHECK (source IN ('reconcile', 'webhook', 'operator')),
    provider   TEXT    NOT NULL,
    run_id     TEXT,
    created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (order_id, to_state)
);
INSERT INTO payrecon_transitions_v12 (id, order_id, from_state, to_state, source, provider,
    run_id, created_at)
SELECT id, order_id, from_state, to_state, source, provider, run_id, created_at
FROM payrecon_transitions;
DROP TABLE payrecon_transitions;
ALTER TABLE payrecon_transitions_v12 RENAME TO payrecon_transitions;
