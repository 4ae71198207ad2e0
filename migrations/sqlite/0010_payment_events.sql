-- Events of payments (SPEC §14): `order.payment_received` for every payment payrecon credits,
-- written in the transaction of its payrecon_payments row. An event row has exactly one of
-- `transition_id` and `payment_id`; `seq` is the order events were written in (an order's
-- events are delivered in it). SQLite cannot drop a NOT NULL, so the table is rebuilt, its
-- rows copied in transition order (their `seq` follows it).
CREATE TABLE payrecon_events_new (
    seq             INTEGER PRIMARY KEY,
    id              TEXT    NOT NULL UNIQUE,
    transition_id   INTEGER UNIQUE,
    payment_id      INTEGER UNIQUE,
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
    claimed_until   TEXT,
    CHECK ((transition_id IS NULL) <> (payment_id IS NULL))
);
INSERT INTO payrecon_events_new (id, transition_id, order_id, type, body, created_at, attempts,
    next_attempt_at, delivered_at, dead_at, last_status, last_error, claimed_by, claimed_until)
SELECT id, transition_id, order_id, type, body, created_at, attempts, next_attempt_at,
    delivered_at, dead_at, last_status, last_error, claimed_by, claimed_until
FROM payrecon_events ORDER BY transition_id;
DROP TABLE payrecon_events;
ALTER TABLE payrecon_events_new RENAME TO payrecon_events;
-- Due events: pending ones by next attempt, then the order written (the delivery loop's claim
-- reads it in order and stops at its LIMIT, however long the backlog).
CREATE INDEX IF NOT EXISTS payrecon_events_due ON payrecon_events (next_attempt_at, seq)
    WHERE delivered_at IS NULL AND dead_at IS NULL;
-- Per-order order: an event waits while an earlier one of its order is undelivered.
CREATE INDEX IF NOT EXISTS payrecon_events_order ON payrecon_events (order_id, seq)
    WHERE delivered_at IS NULL;
-- Retention: delivered events by age.
CREATE INDEX IF NOT EXISTS payrecon_events_delivered ON payrecon_events (delivered_at)
    WHERE delivered_at IS NOT NULL;
-- `payrecon events --since` and `replay --since`.
CREATE INDEX IF NOT EXISTS payrecon_events_created ON payrecon_events (created_at);
