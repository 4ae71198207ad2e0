-- A held payment (its order still short) that left the chain (SPEC §14): flagged here by the
-- sweep, it stops counting toward its order's cover and `amount_paid` until the chain has it
-- again. NULL: on the chain as far as payrecon knows.
ALTER TABLE payrecon_payments ADD COLUMN IF NOT EXISTS reorged_at TIMESTAMPTZ;
