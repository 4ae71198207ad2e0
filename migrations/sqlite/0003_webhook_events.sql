-- Webhook inbox: each authentic delivery, stored before it is answered, once per
-- (provider, event_id). Timestamps are RFC 3339 UTC TEXT with milliseconds, like 0001.
CREATE TABLE IF NOT EXISTS payrecon_webhook_events (
    id           INTEGER PRIMARY KEY,
    provider     TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    body         TEXT NOT NULL,
    received_at  TEXT NOT NULL,
    processed_at TEXT,
    outcome      TEXT,
    UNIQUE (provider, event_id)
);
-- Unprocessed events, oldest first.
CREATE INDEX IF NOT EXISTS payrecon_webhook_events_unprocessed
    ON payrecon_webhook_events (received_at, id) WHERE processed_at IS NULL;
