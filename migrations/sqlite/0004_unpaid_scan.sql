-- The deposit scan: keyset pages (by id) of one chain's unpaid orders without a payment key.
CREATE INDEX IF NOT EXISTS orders_unpaid_scan ON orders (chain, id)
    WHERE state = 'unpaid' AND tx_hash IS NULL;
