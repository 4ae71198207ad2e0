-- payrecon schema for MariaDB 10.6+ and MySQL 8.0.16+ (sqlx's MySQL driver). This is
-- migrations/postgres/0001..0013 folded into one file: the final shape of every table, index and
-- trigger, and the two data backfills of 0009 and 0013 for an `orders` table that exists already.
-- Applied by sqlx in tests/it/mysql.rs on MariaDB 10.11 (fresh, again, and over a merchant's own
-- `orders` table); not yet run on MySQL 8.0.
--
-- Only syntax both servers accept is used. Some of it needs a recent MySQL 8.0:
--   * CHECK constraints are enforced from MySQL 8.0.16. Earlier versions parse them and do
--     nothing. MariaDB enforces them from 10.2.
--   * Expression defaults such as `DEFAULT (UTC_TIMESTAMP(6))` and `TEXT ... DEFAULT ('')` need
--     MySQL 8.0.13 or later. MariaDB accepts them from 10.2.
--   * The store's list binds need JSON_TABLE: MySQL 8.0.4 or later, MariaDB 10.6 or later.
-- Neither server has `CREATE INDEX IF NOT EXISTS` or `ADD COLUMN IF NOT EXISTS` on both sides
-- (MariaDB has them, MySQL 8.0 does not). The parts that touch an `orders` table the merchant
-- already has are therefore guarded with information_schema and PREPARE/EXECUTE. Triggers use
-- `DROP TRIGGER IF EXISTS` followed by `CREATE TRIGGER`.
--
-- sqlx sends this file as one multi-statement text query (CLIENT_MULTI_STATEMENTS). MySQL commits
-- implicitly after every DDL statement, so the migration is NOT atomic. If it fails halfway, sqlx
-- leaves `_sqlx_migrations.success = FALSE` and refuses to go on. Every statement is written so
-- that running it a second time changes nothing (IF NOT EXISTS, guards, NOT EXISTS backfills).
-- That makes a manual re-run safe after the cause is fixed.
-- No statement contains `;` inside a body, so the `mariadb`/`mysql` command-line clients can
-- run the file unchanged (no DELIMITER) as well as sqlx.
--
-- ===================================== DECISIONS =====================================
--
-- AMOUNTS: DECIMAL(65,0), with CHECK (>= 0).
--   Amounts are U256 base units, up to 78 digits. DECIMAL holds at most 65 digits, so this
--   REFUSES any amount >= 10^65. Strict mode (STRICT_TRANS_TABLES, the default on both
--   servers) raises error 1264 "Out of range value" (SQLSTATE 22003). WITHOUT strict mode the
--   server silently clamps the value to 10^65-1 and only warns. The MySQL backend must
--   therefore set STRICT_ALL_TABLES itself on every connection. The dialect should also refuse
--   amounts above 10^65-1 in Rust before binding them, so that one absurd transfer (for example
--   a spam token minting 2^256-1) turns into a finding/exception instead of a batch that fails
--   every time it is retried. 10^65 base units is 10^47 tokens at 18 decimals, so no real
--   payment comes near it.
--   Why not VARCHAR(78)? The SQL itself computes on amounts in only three ways, and a number
--   type handles all three:
--     `amount_paid IS NOT DISTINCT FROM $13::numeric` (equality; payments.rs:311,
--     postgres/batch.rs:354), `o.amount_paid > 0` (amount_positive, exceptions/mod.rs:256), and
--     `CHECK (amount >= 0)`.
--   There is no SUM() in SQL: the sum of an order's payments is computed in Rust
--   (payments.rs:445-449, checked_add). On text, '0100' and '100' would compare unequal, and
--   the merchant's own code, which writes `orders.amount_due`, expects a number column (as on
--   PostgreSQL). Consequences for the dialect:
--     - read as text: CAST(col AS CHAR). sqlx's String does not decode NEWDECIMAL.
--     - bind as text: CAST(? AS DECIMAL(65,0)). MySQL documents DECIMAL-vs-string comparisons
--       as DOUBLE, which is exact only to about 15 digits. Note also that CAST clamps an
--       over-range string to 10^65-1 with only a warning, which is one more reason for the
--       Rust-side range check.
--   `payrecon_exceptions.amount` stays text (VARCHAR(78) ascii), as it is TEXT on PostgreSQL:
--   an exception may name an amount the ledger cannot hold.
--
-- TIMESTAMPS: DATETIME(6), always in UTC.
--   Why not TIMESTAMP? TIMESTAMP stops at 2038-01-19 03:14:07 UTC on MySQL 8.0 and MariaDB
--   10.6, and that range is reachable: orders.expires_at is merchant data, lease expiry
--   saturates to Timestamp::MAX (lease.rs:150-155), and a run window can be far out. TIMESTAMP
--   also converts between the session time zone and UTC on every read and write, which
--   depends on each writer's session, the merchant's code included.
--   Why 6 digits? The code keeps PostgreSQL's microseconds (postgres/mod.rs: ts_bind keeps
--   the full value, stored_time = microseconds, position = microseconds since the epoch,
--   ts_text_exact prints .US). A webhook's received_at must come back exactly as it was
--   stored (inbox.rs:26-27 against ts_text_exact at :51). The millisecond spellings (ts_text,
--   ms) are derived from the stored value on read, as PostgreSQL does.
--   DATETIME has no time zone, so every value here is UTC by convention:
--     - sqlx sets `time_zone='+00:00'` on its own connections.
--     - The defaults and the triggers use UTC_TIMESTAMP(6), never NOW()/CURRENT_TIMESTAMP, so a
--       merchant's session in another time zone still stamps UTC.
--     - Binds must be spelled 'YYYY-MM-DD HH:MM:SS.ffffff'. A trailing 'Z' is refused with
--       error 1292 on INSERT (tested on MariaDB 10.11) and only truncated with a warning in a
--       comparison.
--     - MySQL ROUNDS extra fractional digits and MariaDB truncates them, so ts_bind must cut
--       to microseconds in Rust.
--   DATETIME spans 1000-01-01 to 9999-12-31. Timestamp::MIN (rows.rs:612-617, `cutoff`) is
--   outside it and becomes NULL.
--
-- CHARACTER SETS AND COLLATIONS (keys stay far below InnoDB's 3072-byte limit):
--   * Machine identifiers (chain, pay_to, asset, tx_hash, block_hash, state words, provider,
--     holder, run ids, event ids) are VARCHAR(n) CHARACTER SET ascii COLLATE ascii_general_ci,
--     at 1 byte per character.
--     Why not ascii_bin? A `_bin` collation sets the BINARY column flag, and sqlx 0.8.6 then
--     refuses to decode the column into a String (tested: MariaDB reports `Flags: BINARY` for
--     ascii_bin and utf8mb4_bin columns; sqlx issue #3387; fixed on sqlx main by commit
--     a3aa942a, #3924, which is not in 0.8.6).
--     Case-insensitive comparison does no harm to hex hashes or to the enum words. For
--     base58 addresses, two distinct addresses would have to differ only in letter case AND
--     both pass their checksums. The store compares rows in Rust after a lookup anyway.
--     ASCII-only also means a non-ASCII chain or provider name is refused (error 1366), so
--     the config should check names for this backend.
--   * Outside identifiers that are KEYS, where PostgreSQL's exact, case-sensitive TEXT
--     equality matters (order_ref, problem, event_id, notification_id), use utf8mb4_bin.
--     With a `_ci` collation 'A-1' and 'a-1' would be one order. The cost: with sqlx 0.8.6
--     every SELECT of these columns must be CAST(col AS CHAR), or sqlx must be upgraded.
--     See INVENTORY.md.
--   * Free text (detail, body, error, note, ...) uses the table default, utf8mb4_unicode_ci,
--     which exists on both servers. utf8mb4_0900_ai_ci is MySQL-only.
--   Longest keys, in bytes:
--     orders_unpaid_slot = 64 + 128 + 128 + 16 + 8 + 8 = 352
--     uq orders_chain_tx_hash_log_index = 64 + 128 + 8 = 200
--     payrecon_webhook_events (provider, event_id) = 64 + 255*4 = 1084
--     payrecon_exceptions_open_problem = 512*4 = 2048
--   All tables are ROW_FORMAT=DYNAMIC, which allows 3072-byte index keys. COMPACT/REDUNDANT
--   allow only 767 bytes.
--   With utf8mb4 everywhere, orders_unpaid_slot would be (255*3)*4 + ... = 3140 bytes and
--   fail with error 1071.
--
-- FOREIGN KEYS: none. The PostgreSQL schema has none either (docs/reference.md §3: "There are
--   no foreign keys to orders"). `orders` belongs to the merchant, is created only when it is
--   missing, and its rows may be deleted by the merchant's code.
--
-- PARTIAL INDEXES: MySQL and MariaDB have none. Each one below says what replaces it. The
--   general rule is a full index that puts the partial index's constant conditions first:
--   equality on `state`, or `col IS NULL`, which InnoDB uses as an equality on the index
--   prefix. The index range then holds only the rows the partial index held, in the same
--   order, so LIMIT stops early as before. Two partial indexes become indexes on generated
--   columns instead: an OR condition (payrecon_payments_open), and a partial UNIQUE index
--   (payrecon_exceptions_open_problem: NULL is not unique, so rows outside the predicate
--   carry NULL).
-- =====================================================================================

-- ---------------------------------------------------------------- orders (the ledger)
-- Created only when missing, as on PostgreSQL (0001). The column list is the final one
-- (0001 + expires_at from 0009 + payrecon_updated_at from 0013).
CREATE TABLE IF NOT EXISTS orders (
    id                  BIGINT         NOT NULL AUTO_INCREMENT,
    order_ref           VARCHAR(255)   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    chain               VARCHAR(64)    CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    pay_to              VARCHAR(128)   CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    asset               VARCHAR(128)   CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    amount_due          DECIMAL(65,0)  NOT NULL,
    tx_hash             VARCHAR(128)   CHARACTER SET ascii COLLATE ascii_general_ci NULL,
    log_index           BIGINT         NULL,
    amount_paid         DECIMAL(65,0)  NULL,
    block_number        BIGINT         NULL,
    block_hash          VARCHAR(128)   CHARACTER SET ascii COLLATE ascii_general_ci NULL,
    state               VARCHAR(16)    CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL
                        DEFAULT 'unpaid',
    state_changed_at    DATETIME(6)    NULL,
    created_at          DATETIME(6)    NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    -- 0009: when the order stops taking payments (NULL: never).
    expires_at          DATETIME(6)    NULL,
    -- 0013: when the row last changed, whoever changed it (the triggers below keep it).
    payrecon_updated_at DATETIME(6)    NULL DEFAULT (UTC_TIMESTAMP(6)),
    PRIMARY KEY (id),
    UNIQUE KEY orders_order_ref_key (order_ref),
    -- PostgreSQL: UNIQUE (chain, tx_hash, log_index). Several NULLs are allowed, as there.
    UNIQUE KEY orders_chain_tx_hash_log_index_key (chain, tx_hash, log_index),
    -- orders_unpaid_slot. PG: (chain, pay_to, asset, created_at, id) WHERE state = 'unpaid'.
    -- Full index with `state` after the slot's columns. load_view by slot
    -- (postgres/backend.rs:64-69: chain, pay_to, asset equal, state = 'unpaid', ORDER BY
    -- created_at, id) reads one equality range per slot, leaving out the paid orders of a
    -- reused deposit address.
    KEY orders_unpaid_slot (chain, pay_to, asset, state, created_at, id),
    -- orders_sweep. PG: (id) WHERE state IN ('pending','confirmed') AND tx_hash IS NOT NULL.
    -- Full (state, id). The sweep page (postgres/backend.rs:238-244) reads one id range per
    -- open state, never the final history. `tx_hash IS NOT NULL` becomes a filter: keyless
    -- pending rows are rare, moved there by a provider's status alone. The MySQL statement
    -- should be a UNION of the open-state branch and the recent-final branch (below), each
    -- on its own index, then ORDER BY id LIMIT. One OR'd WHERE would scan the primary key.
    KEY orders_sweep (state, id),
    -- orders_recent_final (0002). PG: (state_changed_at, id) WHERE state = 'final' AND
    -- tx_hash IS NOT NULL. Full (state, state_changed_at, id). The recheck_final branch of the
    -- sweep reads state = 'final' AND state_changed_at in [since, before).
    KEY orders_recent_final (state, state_changed_at, id),
    -- orders_unpaid_scan (0004). PG: (chain, id) WHERE state = 'unpaid' AND tx_hash IS NULL.
    -- Full (state, chain, id). unpaid_page (unpaid.rs:316-317: chain =, state = 'unpaid',
    -- id > ?, ORDER BY id LIMIT) is one ordered range that stops at LIMIT. held_page's first
    -- branch (held.rs:24-26: state = 'unpaid' AND tx_hash IS NULL AND amount_paid IS NOT
    -- NULL) reads the `state = 'unpaid'` prefix, the same rows the partial index held, plus
    -- the rare keyed unpaid ones.
    KEY orders_unpaid_scan (state, chain, id),
    -- orders_updated (0013): the API's keyset list. It was a full index already.
    KEY orders_updated (payrecon_updated_at, id),
    CONSTRAINT orders_amount_due_check CHECK (amount_due >= 0),
    CONSTRAINT orders_amount_paid_check CHECK (amount_paid >= 0),
    CONSTRAINT orders_state_check CHECK (state IN ('unpaid', 'pending', 'confirmed', 'final'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci ROW_FORMAT=DYNAMIC;

-- An `orders` table the merchant had before gets payrecon's columns and indexes, as the
-- PostgreSQL migrations give it (ADD COLUMN IF NOT EXISTS, CREATE INDEX IF NOT EXISTS). MySQL
-- 8.0 has neither, so each step checks information_schema and runs through PREPARE. On a new
-- table every guard runs `DO 0`. (The table's own unique keys are not added: PostgreSQL does
-- not add them to an existing table either.)
-- KNOWN FAILURE on a merchant table: if its chain/pay_to/asset are utf8mb4 VARCHAR(255),
-- orders_unpaid_slot needs 3*1020 + 16*4 + 8 + 8 bytes, more than 3072, and fails with error
-- 1071 "Specified key was too long" (tested on MariaDB 10.11). Because the DDL has committed
-- by then, the migration is left half applied: the two columns are already added. The remedy
-- is for the operator to create an index of that NAME first, with prefix lengths (e.g.
-- chain(64), pay_to(128), asset(128)) or on narrower columns; the guard then skips it.
-- `payrecon check` could detect this before migrating.
SET @payrecon_ddl = IF(EXISTS (SELECT 1 FROM information_schema.columns
        WHERE table_schema = DATABASE() AND table_name = 'orders' AND column_name = 'expires_at'),
    'DO 0', 'ALTER TABLE orders ADD COLUMN expires_at DATETIME(6) NULL');
PREPARE payrecon_stmt FROM @payrecon_ddl;
EXECUTE payrecon_stmt;
DEALLOCATE PREPARE payrecon_stmt;

-- Added without a default, so that the backfill below sees NULL (as 0013 does). Adding it
-- with a default would stamp every existing row with the time of the ALTER.
SET @payrecon_ddl = IF(EXISTS (SELECT 1 FROM information_schema.columns
        WHERE table_schema = DATABASE() AND table_name = 'orders'
        AND column_name = 'payrecon_updated_at'),
    'DO 0', 'ALTER TABLE orders ADD COLUMN payrecon_updated_at DATETIME(6) NULL');
PREPARE payrecon_stmt FROM @payrecon_ddl;
EXECUTE payrecon_stmt;
DEALLOCATE PREPARE payrecon_stmt;

SET @payrecon_ddl = IF(EXISTS (SELECT 1 FROM information_schema.statistics
        WHERE table_schema = DATABASE() AND table_name = 'orders'
        AND index_name = 'orders_unpaid_slot'),
    'DO 0', 'CREATE INDEX orders_unpaid_slot ON orders (chain, pay_to, asset, state, created_at, id)');
PREPARE payrecon_stmt FROM @payrecon_ddl;
EXECUTE payrecon_stmt;
DEALLOCATE PREPARE payrecon_stmt;

SET @payrecon_ddl = IF(EXISTS (SELECT 1 FROM information_schema.statistics
        WHERE table_schema = DATABASE() AND table_name = 'orders' AND index_name = 'orders_sweep'),
    'DO 0', 'CREATE INDEX orders_sweep ON orders (state, id)');
PREPARE payrecon_stmt FROM @payrecon_ddl;
EXECUTE payrecon_stmt;
DEALLOCATE PREPARE payrecon_stmt;

SET @payrecon_ddl = IF(EXISTS (SELECT 1 FROM information_schema.statistics
        WHERE table_schema = DATABASE() AND table_name = 'orders'
        AND index_name = 'orders_recent_final'),
    'DO 0', 'CREATE INDEX orders_recent_final ON orders (state, state_changed_at, id)');
PREPARE payrecon_stmt FROM @payrecon_ddl;
EXECUTE payrecon_stmt;
DEALLOCATE PREPARE payrecon_stmt;

SET @payrecon_ddl = IF(EXISTS (SELECT 1 FROM information_schema.statistics
        WHERE table_schema = DATABASE() AND table_name = 'orders'
        AND index_name = 'orders_unpaid_scan'),
    'DO 0', 'CREATE INDEX orders_unpaid_scan ON orders (state, chain, id)');
PREPARE payrecon_stmt FROM @payrecon_ddl;
EXECUTE payrecon_stmt;
DEALLOCATE PREPARE payrecon_stmt;

SET @payrecon_ddl = IF(EXISTS (SELECT 1 FROM information_schema.statistics
        WHERE table_schema = DATABASE() AND table_name = 'orders' AND index_name = 'orders_updated'),
    'DO 0', 'CREATE INDEX orders_updated ON orders (payrecon_updated_at, id)');
PREPARE payrecon_stmt FROM @payrecon_ddl;
EXECUTE payrecon_stmt;
DEALLOCATE PREPARE payrecon_stmt;

-- ---------------------------------------------------------------- payrecon_transitions
-- Final CHECK of 0012 (source may be 'operator').
CREATE TABLE IF NOT EXISTS payrecon_transitions (
    id         BIGINT       NOT NULL AUTO_INCREMENT,
    order_id   BIGINT       NOT NULL,
    from_state VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    to_state   VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    source     VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    provider   VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    run_id     VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_general_ci NULL,
    created_at DATETIME(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    PRIMARY KEY (id),
    -- PG: UNIQUE (order_id, to_state). `ON CONFLICT (order_id, to_state) DO NOTHING` becomes
    -- an upsert on this key. It is the table's only unique key besides the primary key, so
    -- ON DUPLICATE KEY UPDATE cannot fire on another one.
    UNIQUE KEY payrecon_transitions_order_id_to_state_key (order_id, to_state),
    CONSTRAINT payrecon_transitions_source_check
        CHECK (source IN ('reconcile', 'webhook', 'operator'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci ROW_FORMAT=DYNAMIC;

-- ---------------------------------------------------------------- payrecon_findings
CREATE TABLE IF NOT EXISTS payrecon_findings (
    id             BIGINT       NOT NULL AUTO_INCREMENT,
    run_id         VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    provider       VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    kind           VARCHAR(32)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    chain          VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    tx_hash        VARCHAR(128) CHARACTER SET ascii COLLATE ascii_general_ci NULL,
    log_index      BIGINT       NULL,
    order_ref      VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    local_state    VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_general_ci NULL,
    observed_state VARCHAR(64)  NULL,
    action         VARCHAR(32)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    detail         TEXT         NOT NULL DEFAULT (''),
    created_at     DATETIME(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    PRIMARY KEY (id),
    KEY payrecon_findings_run (run_id),
    -- 0006: `payrecon status` counts the findings of the last 24 hours.
    KEY payrecon_findings_created (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci ROW_FORMAT=DYNAMIC;

-- ---------------------------------------------------------------- payrecon_runs
-- `trigger` is a reserved word (MariaDB 10.11 refuses it unquoted, as MySQL does). `since` and
-- `until` are quoted as a precaution, as the PostgreSQL schema quotes them. MySQL uses
-- backticks unless ANSI_QUOTES is on: see INVENTORY.md (runs.rs:396, status.rs:92).
CREATE TABLE IF NOT EXISTS payrecon_runs (
    id                VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    `trigger`         VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    started_at        DATETIME(6)  NOT NULL,
    finished_at       DATETIME(6)  NULL,
    `since`           DATETIME(6)  NOT NULL,
    `until`           DATETIME(6)  NOT NULL,
    status            VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL
                      DEFAULT 'running',
    checked           BIGINT       NOT NULL DEFAULT 0,
    gaps              BIGINT       NOT NULL DEFAULT 0,
    applied           BIGINT       NOT NULL DEFAULT 0,
    resends_requested BIGINT       NOT NULL DEFAULT 0,
    error             MEDIUMTEXT   NULL,
    -- 0006: ",cg,chain," (searched with INSTR; binary collation so that the search is exact,
    -- as strpos is on PostgreSQL. It is never selected, so sqlx 0.8.6's BINARY flag does
    -- not matter here).
    providers         TEXT         CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    PRIMARY KEY (id),
    -- Not in the PostgreSQL schema, which sorts the whole table. status.rs:175-179 and :200-201
    -- read the newest run(s) by (started_at DESC, id DESC) LIMIT 1. Optional.
    KEY payrecon_runs_started (started_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci ROW_FORMAT=DYNAMIC;

-- ---------------------------------------------------------------- payrecon_resends
CREATE TABLE IF NOT EXISTS payrecon_resends (
    provider        VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    notification_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    requested_at    DATETIME(6)  NOT NULL,
    -- 64 + 255*4 = 1084 bytes.
    PRIMARY KEY (provider, notification_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci ROW_FORMAT=DYNAMIC;

-- ---------------------------------------------------------------- payrecon_webhook_events (0003)
CREATE TABLE IF NOT EXISTS payrecon_webhook_events (
    id           BIGINT       NOT NULL AUTO_INCREMENT,
    provider     VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    -- The provider's event id. An id longer than 255 characters is refused (error 1406).
    event_id     VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    -- The raw body. TEXT would stop at 64 KiB, so MEDIUMTEXT (16 MiB).
    body         MEDIUMTEXT   NOT NULL,
    received_at  DATETIME(6)  NOT NULL,
    processed_at DATETIME(6)  NULL,
    outcome      TEXT         NULL,
    PRIMARY KEY (id),
    UNIQUE KEY payrecon_webhook_events_provider_event_id_key (provider, event_id),
    -- payrecon_webhook_events_unprocessed. PG: (received_at, id) WHERE processed_at IS NULL.
    -- Full (processed_at, received_at, id). `processed_at IS NULL` is an equality on the
    -- prefix, so the oldest-first read (inbox.rs:47-50 ... ORDER BY received_at, id LIMIT) is
    -- one ordered range. It also serves the status count and MIN(received_at) (status.rs:295).
    KEY payrecon_webhook_events_unprocessed (processed_at, received_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci ROW_FORMAT=DYNAMIC;

-- ---------------------------------------------------------------- payrecon_leases (0005)
CREATE TABLE IF NOT EXISTS payrecon_leases (
    provider   VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    holder     VARCHAR(255) CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    token      BIGINT       NOT NULL,
    expires_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (provider)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci ROW_FORMAT=DYNAMIC;

-- ---------------------------------------------------------------- payrecon_events (0007 + 0010)
-- PostgreSQL: id TEXT PRIMARY KEY, and seq BIGINT NOT NULL DEFAULT nextval('payrecon_events_seq').
-- MySQL has no sequences (MariaDB's SEQUENCE objects are MariaDB-only), so `seq` is the
-- AUTO_INCREMENT column and, as on SQLite, the primary key: InnoDB clusters the rows in write
-- order. Clustering by a random `evt_` id would split pages. The webhook id is then a
-- NOT NULL UNIQUE key, as on SQLite.
CREATE TABLE IF NOT EXISTS payrecon_events (
    seq             BIGINT       NOT NULL AUTO_INCREMENT,
    id              VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    transition_id   BIGINT       NULL,
    payment_id      BIGINT       NULL,
    order_id        BIGINT       NOT NULL,
    type            VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    body            MEDIUMTEXT   NOT NULL,
    created_at      DATETIME(6)  NOT NULL,
    attempts        INT          NOT NULL DEFAULT 0,
    next_attempt_at DATETIME(6)  NOT NULL,
    delivered_at    DATETIME(6)  NULL,
    dead_at         DATETIME(6)  NULL,
    last_status     INT          NULL,
    last_error      TEXT         NULL,
    claimed_by      VARCHAR(255) CHARACTER SET ascii COLLATE ascii_general_ci NULL,
    claimed_until   DATETIME(6)  NULL,
    PRIMARY KEY (seq),
    UNIQUE KEY payrecon_events_id_key (id),
    UNIQUE KEY payrecon_events_transition_id_key (transition_id),
    UNIQUE KEY payrecon_events_payment_id_key (payment_id),
    -- payrecon_events_due. PG: (next_attempt_at, seq) WHERE delivered_at IS NULL AND dead_at
    -- IS NULL. Full (delivered_at, dead_at, next_attempt_at, seq). Both IS NULL conditions are
    -- prefix equalities, so the claim (events.rs:21-23 via claim_events_sql: ORDER BY
    -- next_attempt_at, seq LIMIT) is one ordered range that stops at LIMIT. Leading with
    -- delivered_at also makes this index serve the retention DELETE (event_list.rs:329:
    -- delivered_at IS NOT NULL AND delivered_at < ?), which replaces the partial index
    -- payrecon_events_delivered (delivered_at) WHERE delivered_at IS NOT NULL.
    KEY payrecon_events_due (delivered_at, dead_at, next_attempt_at, seq),
    -- payrecon_events_order. PG: (order_id, seq) WHERE delivered_at IS NULL. Full
    -- (order_id, delivered_at, seq). It serves the per-order NOT EXISTS of the due rule
    -- (events.rs:30-31: p.order_id = e.order_id AND p.seq < e.seq AND p.delivered_at IS NULL).
    KEY payrecon_events_order (order_id, delivered_at, seq),
    -- payrecon_events_delivered: folded into payrecon_events_due, see above.
    -- `payrecon events --since` and `replay --since`.
    KEY payrecon_events_created (created_at),
    -- 0010: exactly one cause. MySQL/MariaDB evaluate a comparison of booleans as 0/1.
    CONSTRAINT payrecon_events_one_cause
        CHECK ((transition_id IS NULL) <> (payment_id IS NULL))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci ROW_FORMAT=DYNAMIC;

-- ---------------------------------------------------------------- payrecon_list_reads (0008)
CREATE TABLE IF NOT EXISTS payrecon_list_reads (
    provider     VARCHAR(64) CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    chain        VARCHAR(64) CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    list         VARCHAR(16) CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    pages_read   BIGINT      NOT NULL,
    pages_total  BIGINT      NOT NULL,
    read_at      DATETIME(6) NOT NULL,
    last_full_at DATETIME(6) NULL,
    PRIMARY KEY (provider, chain, list)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci ROW_FORMAT=DYNAMIC;

-- ---------------------------------------------------------------- payrecon_payments (0009 + 0011)
CREATE TABLE IF NOT EXISTS payrecon_payments (
    id               BIGINT        NOT NULL AUTO_INCREMENT,
    order_id         BIGINT        NOT NULL,
    chain            VARCHAR(64)   CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    tx_hash          VARCHAR(128)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    log_index        BIGINT        NOT NULL,
    amount           DECIMAL(65,0) NOT NULL,
    block_number     BIGINT        NULL,
    block_hash       VARCHAR(128)  CHARACTER SET ascii COLLATE ascii_general_ci NULL,
    block_time       DATETIME(6)   NULL,
    state            VARCHAR(16)   CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    source           VARCHAR(16)   CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    provider         VARCHAR(64)   CHARACTER SET ascii COLLATE ascii_general_ci NULL,
    run_id           VARCHAR(64)   CHARACTER SET ascii COLLATE ascii_general_ci NULL,
    created_at       DATETIME(6)   NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    state_changed_at DATETIME(6)   NULL,
    -- 0011: a held payment that left the chain (NULL: on the chain).
    reorged_at       DATETIME(6)   NULL,
    -- Replaces the partial index payrecon_payments_open (id) WHERE state <> 'final' OR
    -- reorged_at IS NOT NULL. An OR cannot be an index prefix, so a VIRTUAL generated column
    -- is 1 for the rows the predicate holds and NULL otherwise. held_page's second branch
    -- must name it (`p.payrecon_open = 1 AND p.id > ?`). MariaDB does not match the
    -- expression to the column by itself, and MySQL does so only for an identical expression.
    payrecon_open    TINYINT AS (CASE WHEN state <> 'final' OR reorged_at IS NOT NULL
                                      THEN 1 END) VIRTUAL,
    PRIMARY KEY (id),
    -- Only unique key besides the primary key: ON DUPLICATE KEY UPDATE fires only on it.
    UNIQUE KEY payrecon_payments_chain_tx_hash_log_index_key (chain, tx_hash, log_index),
    -- An order's payments (the cover rule, the state of its parts).
    KEY payrecon_payments_order (order_id, block_number),
    KEY payrecon_payments_open (payrecon_open, id),
    -- payrecon_payments_recent_final. PG: (state_changed_at) WHERE state = 'final'. Full
    -- (state, state_changed_at). held_page's third branch reads state = 'final' AND
    -- state_changed_at >= ?. (SQLite's 0011 has no such index: the two existing backends
    -- differ here.)
    KEY payrecon_payments_recent_final (state, state_changed_at),
    CONSTRAINT payrecon_payments_amount_check CHECK (amount >= 0),
    CONSTRAINT payrecon_payments_state_check CHECK (state IN ('pending', 'confirmed', 'final')),
    CONSTRAINT payrecon_payments_source_check
        CHECK (source IN ('reconcile', 'webhook', 'operator', 'merchant'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci ROW_FORMAT=DYNAMIC;

-- ---------------------------------------------------------------- payrecon_exceptions (0012)
CREATE TABLE IF NOT EXISTS payrecon_exceptions (
    id            BIGINT       NOT NULL AUTO_INCREMENT,
    kind          VARCHAR(32)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    order_id      BIGINT       NULL,
    chain         VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,
    tx_hash       VARCHAR(128) CHARACTER SET ascii COLLATE ascii_general_ci NULL,
    log_index     BIGINT       NULL,
    -- Base units as text, as on PostgreSQL (TEXT): up to 78 digits, so any U256 fits.
    amount        VARCHAR(78)  CHARACTER SET ascii COLLATE ascii_general_ci NULL,
    detail        TEXT         NOT NULL DEFAULT (''),
    status        VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL
                  DEFAULT 'open',
    first_seen_at DATETIME(6)  NOT NULL,
    last_seen_at  DATETIME(6)  NOT NULL,
    seen_count    BIGINT       NOT NULL DEFAULT 1,
    resolved_at   DATETIME(6)  NULL,
    resolved_by   VARCHAR(255) NULL,
    resolution    VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_general_ci NULL,
    note          TEXT         NULL,
    -- `order:<ref>:<kind>`, `payment:<chain>:<tx>:<log>`, `reorged:<chain>:<tx>:<ref>`:
    -- at most 8 + 64 + 128 + 255 + 3 = 458 characters. Binary collation, because it embeds
    -- order_ref.
    problem       VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    last_run_id   VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_general_ci NULL,
    -- Replaces the partial UNIQUE index payrecon_exceptions_open_problem (problem) WHERE status
    -- = 'open'. The generated column holds `problem` for an open row and NULL otherwise. A
    -- UNIQUE key allows any number of NULLs, so there is at most one open row per problem and
    -- any number of resolved ones (tested on MariaDB 10.11).
    -- `INSERT ... ON CONFLICT (problem) WHERE status = 'open' DO UPDATE` (exceptions/upsert.rs
    -- :123-131) becomes `ON DUPLICATE KEY UPDATE`, which this key triggers. It is the only
    -- unique key besides the primary key.
    open_problem  VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
                  AS (CASE WHEN status = 'open' THEN problem END) VIRTUAL,
    PRIMARY KEY (id),
    UNIQUE KEY payrecon_exceptions_open_problem (open_problem),
    -- payrecon_exceptions_open_kind. PG: (kind, first_seen_at) WHERE status = 'open'. Full
    -- (status, kind, first_seen_at). open_exceptions (exceptions/mod.rs:161-162: WHERE status
    -- = 'open' GROUP BY kind, MIN(first_seen_at)) reads only the open range. The list filters
    -- by status too.
    KEY payrecon_exceptions_open_kind (status, kind, first_seen_at),
    -- The export joins by payment key (export.rs:427-429).
    KEY payrecon_exceptions_payment (chain, tx_hash, log_index),
    KEY payrecon_exceptions_order (order_id),
    CONSTRAINT payrecon_exceptions_kind_check
        CHECK (kind IN ('amount_mismatch', 'late_payment', 'unknown_payment', 'reorged')),
    CONSTRAINT payrecon_exceptions_status_check CHECK (status IN ('open', 'resolved')),
    CONSTRAINT payrecon_exceptions_resolution_check
        CHECK (resolution IN ('accepted', 'attached', 'dismissed', 'cleared'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci ROW_FORMAT=DYNAMIC;

-- ---------------------------------------------------------------- backfills (existing ledgers)
-- 0009: every order already marked paid gets its payment row. The source, provider, run and
-- time come from its first transition, else the merchant. PostgreSQL uses LEFT JOIN LATERAL,
-- which MariaDB lacks (MySQL has it from 8.0.14), so this uses the scalar subqueries of the
-- SQLite migration. PostgreSQL's `ON CONFLICT (chain, tx_hash, log_index) DO NOTHING` becomes
-- an anti-join (INSERT IGNORE would also swallow data errors, clamping an amount >= 10^65).
-- The anti-join is a LEFT JOIN in the FROM clause, not NOT EXISTS: MySQL refuses an INSERT
-- whose target table is read in a subquery (error 1093), but allows it in the SELECT's FROM
-- clause (it buffers the rows in a temporary table). MariaDB 10.3.2+ accepts both forms. A no-op
-- on a new database.
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
LEFT JOIN payrecon_payments q
       ON q.chain = o.chain AND q.tx_hash = o.tx_hash AND q.log_index = o.log_index
WHERE o.tx_hash IS NOT NULL AND o.log_index IS NOT NULL AND o.amount_paid IS NOT NULL
  AND o.state IN ('pending', 'confirmed', 'final')
  AND q.id IS NULL;

-- 0013: existing orders take their last state change, else their creation. This runs before
-- the triggers exist (a BEFORE UPDATE trigger would overwrite the value).
UPDATE orders SET payrecon_updated_at = COALESCE(state_changed_at, created_at)
    WHERE payrecon_updated_at IS NULL;

-- 0013's `SET DEFAULT clock_timestamp()`, for a column the guard above added without a
-- default. UTC_TIMESTAMP(6), not CURRENT_TIMESTAMP(6): the latter is in the writer's session
-- time zone, and the merchant's code may not run in UTC.
SET @payrecon_ddl = IF(EXISTS (SELECT 1 FROM information_schema.columns
        WHERE table_schema = DATABASE() AND table_name = 'orders'
        AND column_name = 'payrecon_updated_at'
        -- MySQL shows no default as SQL NULL; MariaDB (10.2.7+) as the text 'NULL'.
        AND (column_default IS NULL OR column_default = 'NULL')),
    'ALTER TABLE orders MODIFY COLUMN payrecon_updated_at DATETIME(6) NULL DEFAULT (UTC_TIMESTAMP(6))',
    'DO 0');
PREPARE payrecon_stmt FROM @payrecon_ddl;
EXECUTE payrecon_stmt;
DEALLOCATE PREPARE payrecon_stmt;

-- ---------------------------------------------------------------- triggers (0013)
-- PostgreSQL has one plpgsql function and a BEFORE INSERT OR UPDATE trigger. MySQL has no
-- trigger functions and no multi-event triggers, so there are two BEFORE triggers that set
-- NEW directly. A trigger may not UPDATE its own table, so SQLite's AFTER-trigger UPDATE is
-- no model either. Each body is a single statement (no BEGIN ... END), so no DELIMITER is
-- needed.
--   * Time: UTC_TIMESTAMP(6) is the start of the triggering statement. PostgreSQL's
--     clock_timestamp() is the wall clock at each row; SYSDATE(6) would be the closer match,
--     but it is in the session time zone and is unsafe for statement-based binlogs.
--   * `IS NOT DISTINCT FROM` becomes `<=>`.
--   * A writer that sets the column itself is left alone, as on PostgreSQL.
--   * Privileges: CREATE TRIGGER needs the TRIGGER privilege. With binary logging on and no
--     SUPER, MySQL may refuse with error 1419 unless log_bin_trust_function_creators=1. This
--     is common on managed servers.
DROP TRIGGER IF EXISTS orders_updated_on_insert;
CREATE TRIGGER orders_updated_on_insert BEFORE INSERT ON orders FOR EACH ROW
    SET NEW.payrecon_updated_at = COALESCE(NEW.payrecon_updated_at, UTC_TIMESTAMP(6));

DROP TRIGGER IF EXISTS orders_updated_on_update;
CREATE TRIGGER orders_updated_on_update BEFORE UPDATE ON orders FOR EACH ROW
    SET NEW.payrecon_updated_at = IF(NEW.payrecon_updated_at <=> OLD.payrecon_updated_at,
                                     UTC_TIMESTAMP(6), NEW.payrecon_updated_at);
