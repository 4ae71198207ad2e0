-- A held payment (its order still short) that left the chain (SPEC §14): flagged here by the
-- sweep, it stops counting toward its order's cover and `amount_paid` until the chain has it
-- again. NULL: on the chain as far as payrecon knows.
ALTER TABLE payrecon_payments ADD COLUMN IF NOT EXISTS reorged_at TIMESTAMPTZ;

-- What the sweep follows beside the keyed rows, each branch by a partial index (never the
-- whole history): the payments of orders still short (through `orders_unpaid_scan`), the
-- payments not yet final or flagged gone, and those made final lately (`recheck_final`).
CREATE INDEX IF NOT EXISTS payrecon_payments_open ON payrecon_payments (id)
    WHERE state <> 'final' OR reorged_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS payrecon_payments_recent_final
    ON payrecon_payments (state_changed_at) WHERE state = 'final';
