-- When an order last changed (docs/api.md: `GET /v1/orders?updated_since=`), whoever changed it:
-- payrecon, the merchant's own code, or the API. A column of payrecon's own name, so that a
-- shop's `updated_at` (ORMs add one) is left alone. Kept by triggers, at the wall clock of
-- the change (not the transaction's start); a writer that sets it itself is left alone.
-- Existing orders: their last state change, else their creation.
ALTER TABLE orders ADD COLUMN IF NOT EXISTS payrecon_updated_at TIMESTAMPTZ;
UPDATE orders SET payrecon_updated_at = COALESCE(state_changed_at, created_at)
    WHERE payrecon_updated_at IS NULL;
ALTER TABLE orders ALTER COLUMN payrecon_updated_at SET DEFAULT clock_timestamp();

CREATE OR REPLACE FUNCTION payrecon_orders_touch() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.payrecon_updated_at IS NULL THEN
            NEW.payrecon_updated_at := clock_timestamp();
        END IF;
    ELSIF NEW.payrecon_updated_at IS NOT DISTINCT FROM OLD.payrecon_updated_at THEN
        NEW.payrecon_updated_at := clock_timestamp();
    END IF;
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS orders_updated_on_write ON orders;
CREATE TRIGGER orders_updated_on_write BEFORE INSERT OR UPDATE ON orders
    FOR EACH ROW EXECUTE FUNCTION payrecon_orders_touch();

-- The API's list: keyset pages by (payrecon_updated_at, id).
CREATE INDEX IF NOT EXISTS orders_updated ON orders (payrecon_updated_at, id);
