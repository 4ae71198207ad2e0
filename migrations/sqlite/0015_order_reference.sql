-- A Solana Pay reference per order (SPEC §18): the public key the checkout put on the transfer
-- instruction, base58. NULL for every other order. A payment carrying it is matched to this
-- order first.
ALTER TABLE orders ADD COLUMN reference TEXT;
