-- Balances (SPEC §17): where each deposit address's last check ended, per asset. The first
-- check records the address's opening balance (at the block of its oldest order), not an
-- exception; each later check reads only the blocks after `checked_block`. Amounts are base
-- units as TEXT; `expected` and `difference` may be negative (a drain).
CREATE TABLE IF NOT EXISTS payrecon_balances (
    chain           TEXT    NOT NULL,
    address         TEXT    NOT NULL,
    asset           TEXT    NOT NULL,
    opening_block   INTEGER NOT NULL,
    opening_balance TEXT    NOT NULL,
    checked_block   INTEGER NOT NULL,
    balance         TEXT    NOT NULL,
    expected        TEXT    NOT NULL,
    difference      TEXT    NOT NULL,
    checked_at      TEXT    NOT NULL,
    PRIMARY KEY (chain, address, asset)
);

-- Two exception kinds of the balance check: money that left a deposit address for somewhere
-- other than a treasury, and a difference nothing explains. SQLite cannot change a CHECK, so
-- the table is copied into one that allows them, with its indexes.
CREATE TABLE payrecon_exceptions_v14 (
    id            INTEGER PRIMARY KEY,
    kind          TEXT    NOT NULL
                  CHECK (kind IN ('amount_mismatch', 'late_payment', 'unknown_payment', 'reorged',
                                  'unexpected_outflow', 'balance_mismatch')),
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
INSERT INTO payrecon_exceptions_v14 (id, kind, order_id, chain, tx_hash, log_index, amount,
    detail, status, first_seen_at, last_seen_at, seen_count, resolved_at, resolved_by,
    resolution, note, problem, last_run_id)
SELECT id, kind, order_id, chain, tx_hash, log_index, amount, detail, status, first_seen_at,
    last_seen_at, seen_count, resolved_at, resolved_by, resolution, note, problem, last_run_id
FROM payrecon_exceptions;
DROP TABLE payrecon_exceptions;
ALTER TABLE payrecon_exceptions_v14 RENAME TO payrecon_exceptions;
CREATE UNIQUE INDEX IF NOT EXISTS payrecon_exceptions_open_problem
    ON payrecon_exceptions (problem) WHERE status = 'open';
CREATE INDEX IF NOT EXISTS payrecon_exceptions_open_kind
    ON payrecon_exceptions (kind, first_seen_at) WHERE status = 'open';
CREATE INDEX IF NOT EXISTS payrecon_exceptions_payment
    ON payrecon_exceptions (chain, tx_hash, log_index);
CREATE INDEX IF NOT EXISTS payrecon_exceptions_order ON payrecon_exceptions (order_id);
