-- Balances (SPEC §17), as postgres/0014: where each deposit address's last check ended, per
-- asset; the first check records the opening balance. `expected` and `difference` may be
-- negative (a drain). Amounts are DECIMAL(65,0), as every amount here.
CREATE TABLE IF NOT EXISTS payrecon_balances (
    chain           VARCHAR(64)   CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    address         VARCHAR(128)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    asset           VARCHAR(128)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    opening_block   BIGINT        NOT NULL,
    opening_balance DECIMAL(65,0) NOT NULL,
    checked_block   BIGINT        NOT NULL,
    balance         DECIMAL(65,0) NOT NULL,
    expected        DECIMAL(65,0) NOT NULL,
    difference      DECIMAL(65,0) NOT NULL,
    checked_at      DATETIME(6)   NOT NULL,
    PRIMARY KEY (chain, address, asset)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci ROW_FORMAT=DYNAMIC;

-- Two exception kinds of the balance check: money that left a deposit address for somewhere
-- other than a treasury, and a difference nothing explains.
ALTER TABLE payrecon_exceptions DROP CONSTRAINT payrecon_exceptions_kind_check;
ALTER TABLE payrecon_exceptions ADD CONSTRAINT payrecon_exceptions_kind_check
    CHECK (kind IN ('amount_mismatch', 'late_payment', 'unknown_payment', 'reorged',
                    'unexpected_outflow', 'balance_mismatch'));
