-- When an order last changed (docs/api.md: `GET /v1/orders?updated_since=`), whoever changed it:
-- payrecon, the merchant's own code, or the API. A column of payrecon's own name, so that a
-- shop's `updated_at` (ORMs add one) is left alone; always spelled like payrecon's other
-- times (RFC 3339 UTC, milliseconds), so that it sorts as text. Kept by triggers; a writer
-- that sets it itself is left alone. Existing orders: their last state change, else their
-- creation (in whatever spelling the merchant's code wrote them, normalised).
ALTER TABLE orders ADD COLUMN payrecon_updated_at TEXT;
UPDATE orders SET payrecon_updated_at = COALESCE(
    strftime('%Y-%m-%dT%H:%M:%fZ', COALESCE(state_changed_at, created_at)),
    strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));

CREATE TRIGGER IF NOT EXISTS orders_updated_on_insert AFTER INSERT ON orders
FOR EACH ROW WHEN NEW.payrecon_updated_at IS NULL
BEGIN
    UPDATE orders SET payrecon_updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
    WHERE id = NEW.id;
END;

CREATE TRIGGER IF NOT EXISTS orders_updated_on_update AFTER UPDATE ON orders
FOR EACH ROW WHEN NEW.payrecon_updated_at IS OLD.payrecon_updated_at
BEGIN
    UPDATE orders SET payrecon_updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
    WHERE id = NEW.id;
END;

-- The API's list: keyset pages by (payrecon_updated_at, id).
CREATE INDEX IF NOT EXISTS orders_updated ON orders (payrecon_updated_at, id);
