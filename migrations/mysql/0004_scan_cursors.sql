-- Where Solana's deposit scan left each account it lists (SPEC §18), as postgres/0016. Base58
-- is case-sensitive: accounts, owners and signatures compare byte for byte (ascii_bin).
CREATE TABLE IF NOT EXISTS payrecon_scan_cursors (
    chain     VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    account   VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    owner     VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    signature VARCHAR(100) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    slot      BIGINT       NOT NULL,
    PRIMARY KEY (chain, account),
    KEY payrecon_scan_cursors_owner (chain, owner)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci ROW_FORMAT=DYNAMIC;
