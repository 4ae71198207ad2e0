-- Payments of their own (SPEC §14): one row per payment credited to an order, so that an
-- order paid in parts, or short, is told from a paid one. `orders.amount_paid` is the sum of
-- an order's rows, written in the same transaction; `orders.tx_hash`/`log_index` name the
-- payment that completed the cover. Amounts are base units as decimal TEXT, like orders'.
CREATE TABLE IF NOT EXISTS payrecon_payments (
    id               INTEGER PRIMARY KEY,
    order_id         INTEGER NOT NULL,
    chain            TEXT    NOT NULL,
    tx_hash          TEXT    NOT NULL,
    log_index        INTEGER NOT NULL,
    amount           TEXT    NOT NULL,
    block_number     INTEGER,
    block_hash       TEXT,
    block_time       TEXT,
    state            TEXT    NOT NULL CHECK (state IN ('pending', 'confirmed', 'final')),
    source           TEXT    NOT NULL
                     CHECK (source IN ('reconcile', 'webhook', 'operator', 'merchant')),
    provider         TEXT,
    run_id           TEXT,
    created_at       TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    state_changed_at TEXT,
    UNIQUE (chain, tx_hash, log_index)
);
-- An order's payments (the cover rule, the state of its parts).
CREATE INDEX IF NOT EXISTS payrecon_payments_order ON payrecon_payments (order_id, block_number);

-- When an order stops taking payments (NULL: never). A payment in a later block is late.
ALTER TABLE orders ADD COLUMN expires_at TEXT;

-- Every order that payrecon or the merchant already marked paid gets its payment row: the
-- amount it holds, its state, and who wrote it (its first transition, else the merchant).
-- No state changes, no events. Keyed rows still `unpaid`, or without an amount, get theirs
-- when a run reads their payment from the chain.
INSERT INTO payrecon_payments (order_id, chain, tx_hash, log_index, amount, block_number,
    block_hash, state, source, provider, run_id, created_at, state_changed_at)
SELECT o.id, o.chain, o.tx_hash, o.log_index, o.amount_paid, o.block_number, o.block_hash,
    o.state,
    COALESCE((SELECT t.source FROM payrecon_transitions t WHERE t.order_id = o.id
              ORDER BY t.id LIMIT 1), 'merchant'),
    (SELECT t.provider FROM payrecon_transitions t WHERE t.order_id = o.id ORDER BY t.id LIMIT 1),
    (SELECT t.run_id FROM payrecon_transitions t WHERE t.order_id = o.id ORDER BY t.id LIMIT 1),
    COALESCE((SELECT t.created_at FROM payrecon_transitions t WHERE t.order_id = o.id
              ORDER BY t.id LIMIT 1), o.state_changed_at, o.created_at),
    o.state_changed_at
FROM orders o
WHERE o.tx_hash IS NOT NULL AND o.log_index IS NOT NULL AND o.amount_paid IS NOT NULL
  AND o.state IN ('pending', 'confirmed', 'final')
ON CONFLICT (chain, tx_hash, log_index) DO NOTHING;
