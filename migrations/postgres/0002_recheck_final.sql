-- The chain sweep also rechecks final rows that became final recently
-- (chains.<name>.recheck_final): those are found by state_changed_at.
CREATE INDEX IF NOT EXISTS orders_recent_final ON orders (state_changed_at, id)
    WHERE state = 'final' AND tx_hash IS NOT NULL;
