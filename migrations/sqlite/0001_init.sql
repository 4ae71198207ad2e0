-- payrecon schema (SQLite). `orders` is the merchant's ledger: created only when missing.
-- Amounts are base units as decimal TEXT; timestamps are RFC 3339 UTC TEXT with milliseconds,
-- so that they sort as text.

CREATE TABLE IF NOT EXISTS orders (
    id               INTEGER PRIMARY KEY,
    order_ref        TEXT    NOT NULL UNIQUE,
    chain            TEXT    NOT NULL,
    pay_to           TEXT    NOT NULL,
    asset            TEXT    NOT NULL,
    amount_due       TEXT    NOT NULL,
    tx_hash          TEXT,
    log_index        INTEGER,
    amount_paid      TEXT,
    block_number     INTEGER,
    block_hash       TEXT,
    state            TEXT    NOT NULL DEFAULT 'unpaid'
                     CHECK (state IN ('unpaid', 'pending', 'confirmed', 'final')),
    state_changed_at TEXT,
    created_at       TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (chain, tx_hash, log_index)
);

-- Unpaid orders waiting for a payment to a deposit address (load_view, by slot).
CREATE INDEX IF NOT EXISTS orders_unpaid_slot
    ON orders (chain, pay_to, asset, created_at, id) WHERE state = 'unpaid';
-- The chain sweep: keyset pages (by id) of keyed pending/confirmed rows. Partial, so that a
-- page is an ordered index range that stops at LIMIT, however many final rows there are.
CREATE INDEX IF NOT EXISTS orders_sweep ON orders (id)
    WHERE state IN ('pending', 'confirmed') AND tx_hash IS NOT NULL;

CREATE TABLE IF NOT EXISTS payrecon_transitions (
    id         INTEGER PRIMARY KEY,
    order_id   INTEGER NOT NULL,
    from_state TEXT    NOT NULL,
    to_state   TEXT    NOT NULL,
    source     TEXT    NOT NULL CHECK (source IN ('reconcile', 'webhook')),
    provider   TEXT    NOT NULL,
    run_id     TEXT,
    created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (order_id, to_state)
);

CREATE TABLE IF NOT EXISTS payrecon_findings (
    id             INTEGER PRIMARY KEY,
    run_id         TEXT    NOT NULL,
    provider       TEXT    NOT NULL,
    kind           TEXT    NOT NULL,
    chain          TEXT    NOT NULL,
    tx_hash        TEXT,
    log_index      INTEGER,
    order_ref      TEXT,
    local_state    TEXT,
    observed_state TEXT,
    action         TEXT    NOT NULL,
    detail         TEXT    NOT NULL DEFAULT '',
    created_at     TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX IF NOT EXISTS payrecon_findings_run ON payrecon_findings (run_id);

CREATE TABLE IF NOT EXISTS payrecon_runs (
    id                TEXT    PRIMARY KEY,
    "trigger"         TEXT    NOT NULL,
    started_at        TEXT    NOT NULL,
    finished_at       TEXT,
    "since"           TEXT    NOT NULL,
    "until"           TEXT    NOT NULL,
    status            TEXT    NOT NULL DEFAULT 'running',
    checked           INTEGER NOT NULL DEFAULT 0,
    gaps              INTEGER NOT NULL DEFAULT 0,
    applied           INTEGER NOT NULL DEFAULT 0,
    resends_requested INTEGER NOT NULL DEFAULT 0,
    error             TEXT
);

CREATE TABLE IF NOT EXISTS payrecon_resends (
    provider        TEXT NOT NULL,
    notification_id TEXT NOT NULL,
    requested_at    TEXT NOT NULL,
    PRIMARY KEY (provider, notification_id)
);
