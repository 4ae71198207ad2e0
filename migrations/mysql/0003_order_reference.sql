-- A Solana Pay reference per order (SPEC §18), as postgres/0015: the public key the checkout
-- put on the transfer instruction, base58 (at most 44 characters). NULL for every other order.
-- Guarded like 0001's columns, for an `orders` table the merchant already has.
SET @payrecon_ddl = IF(EXISTS (SELECT 1 FROM information_schema.columns
        WHERE table_schema = DATABASE() AND table_name = 'orders' AND column_name = 'reference'),
    'DO 0', 'ALTER TABLE orders ADD COLUMN reference VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL');
PREPARE payrecon_stmt FROM @payrecon_ddl;
EXECUTE payrecon_stmt;
DEALLOCATE PREPARE payrecon_stmt;
