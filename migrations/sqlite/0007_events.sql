-- The outbox of events to the merchant's application (SPEC §10): one row per transition
-- payrecon applied, written in the transaction of its payrecon_transitions row. `id` is the
-- Standard Webhooks `webhook-id`; `body` the exact bytes sent on every attempt. A row is
-- pending (delivered_at and dead_at NULL), delivered, or dead. `claimed_by`/`claimed_until`:
-- the instance sending it now (a claim that expires when that instance dies).
CREATE TABLE IF NOT EXISTS payrecon_events (
    id              TEXT    PRIMARY KEY,
    transition_id   INTEGER NOT NULL UNIQUE,
    order_id        INTEGER NOT NULL,
    type            TEXT    NOT NULL,
    body            TEXT    NOT NULL,
    created_at      TEXT    NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT    NOT NULL,
    delivered_at    TEXT,
    dead_at         TEXT,
    last_status     INTEGER,
    last_error      TEXT,
    claimed_by      TEXT,
    claimed_until   TEXT
);
-- Due events: pending ones by next attempt, then transition (the delivery loop's claim reads
-- it in order and stops at its LIMIT, however long the backlog).
CREATE INDEX IF NOT EXISTS payrecon_events_due ON payrecon_events (next_attempt_at, transition_id)
    WHERE delivered_at IS NULL AND dead_at IS NULL;
-- Per-order order: an event waits while an earlier one of its order is undelivered.
CREATE INDEX IF NOT EXISTS payrecon_events_order ON payrecon_events (order_id, transition_id)
    WHERE delivered_at IS NULL;
-- Retention: delivered events by age.
CREATE INDEX IF NOT EXISTS payrecon_events_delivered ON payrecon_events (delivered_at)
    WHERE delivered_at IS NOT NULL;
-- `payrecon events --since` and `replay --since`.
CREATE INDEX IF NOT EXISTS payrecon_events_created ON payrecon_events (created_at);
