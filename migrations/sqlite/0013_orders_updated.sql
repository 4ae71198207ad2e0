-- When an order last changed (SPEC §16: `GET /v1/orders?updated_since=`), whoever changed it:
-- payrecon, the merchant's own code, or the API. Kept by triggers; a writer that sets it
-- itself is left alone. Existing orders: their last state change, else their creation.
ALTER TABLE orders ADD COLUMN updated_at TEXT;
UPDATE orders SET updated_at = COALESCE(state_changed_at, created_at);

CREATE TRIGGER IF NOT EXISTS orders_updated_on_insert AFTER INSERT ON orders
FOR EACH ROW WHEN NEW.updated_at IS NULL
BEGIN
    UPDATE orders SET updated_at = NEW.created_at WHERE id = NEW.id;
END;

CREATE TRIGGER IF NOT EXISTS orders_updated_on_update AFTER UPDATE ON orders
FOR EACH ROW WHEN NEW.updated_at IS OLD.updated_at
BEGIN
    UPDATE orders SET updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = NEW.id;
END;

-- The API's list: keyset pages by (updated_at, id).
CREATE INDEX IF NOT EXISTS orders_updated ON orders (updated_at, id);
