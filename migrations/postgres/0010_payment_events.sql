-- Events of payments (SPEC §14): `order.payment_received` for every payment payrecon credits,
-- written in the transaction of its payrecon_payments row. An event row has exactly one of
-- `transition_id` and `payment_id`; `seq` is the order events were written in (an order's
-- events are delivered in it). Existing rows take their transition's id as their `seq`, and
-- the sequence goes on after the largest.
ALTER TABLE payrecon_events ALTER COLUMN transition_id DROP NOT NULL;
ALTER TABLE payrecon_events ADD COLUMN IF NOT EXISTS payment_id BIGINT UNIQUE;
ALTER TABLE payrecon_events ADD COLUMN IF NOT EXISTS seq BIGINT;
UPDATE payrecon_events SET seq = transition_id WHERE seq IS NULL;
CREATE SEQUENCE IF NOT EXISTS payrecon_events_seq OWNED BY payrecon_events.seq;
SELECT setval('payrecon_events_seq', GREATEST((SELECT MAX(seq) FROM payrecon_events), 0) + 1,
              false);
ALTER TABLE payrecon_events ALTER COLUMN seq SET DEFAULT nextval('payrecon_events_seq');
ALTER TABLE payrecon_events ALTER COLUMN seq SET NOT NULL;
ALTER TABLE payrecon_events ADD CONSTRAINT payrecon_events_one_cause
    CHECK ((transition_id IS NULL) <> (payment_id IS NULL));
DROP INDEX IF EXISTS payrecon_events_due;
DROP INDEX IF EXISTS payrecon_events_order;
CREATE INDEX IF NOT EXISTS payrecon_events_due ON payrecon_events (next_attempt_at, seq)
    WHERE delivered_at IS NULL AND dead_at IS NULL;
CREATE INDEX IF NOT EXISTS payrecon_events_order ON payrecon_events (order_id, seq)
    WHERE delivered_at IS NULL;
