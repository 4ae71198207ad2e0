-- Balances (SPEC §17): where each deposit address's last check ended, per asset. The first
-- check records the address's opening balance (at the block of its oldest order), not an
-- exception; each later check reads only the blocks after `checked_block`. `expected` and
-- `difference` may be negative (a drain).
CREATE TABLE IF NOT EXISTS payrecon_balances (
    chain           TEXT          NOT NULL,
    address         TEXT          NOT NULL,
    asset           TEXT          NOT NULL,
    opening_block   BIGINT        NOT NULL,
    opening_balance NUMERIC(78,0) NOT NULL,
    checked_block   BIGINT        NOT NULL,
    balance         NUMERIC(78,0) NOT NULL,
    expected        NUMERIC(79,0) NOT NULL,
    difference      NUMERIC(79,0) NOT NULL,
    checked_at      TIMESTAMPTZ   NOT NULL,
    PRIMARY KEY (chain, address, asset)
);

-- Two exception kinds of the balance check: money that left a deposit address for somewhere
-- other than a treasury, and a difference nothing explains.
ALTER TABLE payrecon_exceptions DROP CONSTRAINT IF EXISTS payrecon_exceptions_kind_check;
ALTER TABLE payrecon_exceptions ADD CONSTRAINT payrecon_exceptions_kind_check
    CHECK (kind IN ('amount_mismatch', 'late_payment', 'unknown_payment', 'reorged',
                    'unexpected_outflow', 'balance_mismatch'));
