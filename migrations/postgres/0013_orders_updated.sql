-- When an order last changed (SPEC §16: `GET /v1/orders?updated_since=`), whoever changed it:
-- payrecon, the merchant's own code, or the API. Kept by a trigger (the wall clock of the
-- change, not the transaction's start); a writer that sets it itself is left alone. Existing
-- orders: their last state change, else their creation.
ALTER TABLE orders ADD COLUMN IF NOT EXISTS updated_at TIMESTAMPTZ;
UPDATE orders SET updated_at = COALESCE(state_changed_at, created_at) WHERE updated_at IS NULL;
ALTER TABLE orders ALTER COLUMN updated_at SET DEFAULT now();

CREATE OR REPLACE FUNCTION payrecon_orders_touch() RETURNS trigger AS $$
BEGIN
    IF NEW.updated_at IS NOT DISTINCT FROM OLD.updated_at THEN
        NEW.updated_at := clock_timestamp();
    END IF;
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS orders_updated_on_update ON orders;
CREATE TRIGGER orders_updated_on_update BEFORE UPDATE ON orders
    FOR EACH ROW EXECUTE FUNCTION payrecon_orders_touch();

-- The API's list: keyset pages by (updated_at, id).
CREATE INDEX IF NOT EXISTS orders_updated ON orders (updated_at, id);
