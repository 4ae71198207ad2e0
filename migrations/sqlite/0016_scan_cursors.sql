-- Where Solana's deposit scan left each account it lists (SPEC §18): the newest signature
-- listed on `account` whose slot was finalized when read. Every transaction at or before it
-- was resolved by a scan that completed, so the next run lists only what came after it
-- (`until`); a backfill (`run --since`) reads its whole window and moves it on. `owner` is the
-- wallet or Solana Pay reference the account was read for (a wallet's token accounts share
-- it): a page of unpaid orders loads its cursors in one statement by owner.
CREATE TABLE IF NOT EXISTS payrecon_scan_cursors (
    chain     TEXT   NOT NULL,
    account   TEXT   NOT NULL,
    owner     TEXT   NOT NULL,
    signature TEXT   NOT NULL,
    slot      BIGINT NOT NULL,
    PRIMARY KEY (chain, account)
);
CREATE INDEX IF NOT EXISTS payrecon_scan_cursors_owner ON payrecon_scan_cursors (chain, owner);
