-- The operator console (SPEC §19), as postgres/0017, without the partial indexes (neither
-- server has them): `orders_held` is served by `orders_unpaid_scan` (state, chain, id), the
-- balances page reads every address of the table. `payrecon_runs_started` is in 0001 here.
CREATE INDEX payrecon_findings_order ON payrecon_findings (order_ref, id);
CREATE INDEX payrecon_events_order_all ON payrecon_events (order_id, seq);
CREATE INDEX payrecon_exceptions_tx ON payrecon_exceptions (tx_hash);
CREATE INDEX payrecon_exceptions_kind ON payrecon_exceptions (kind, id);
CREATE INDEX payrecon_runs_finished ON payrecon_runs (finished_at);

-- `orders` may be the merchant's own table: guarded like 0001's indexes.
SET @payrecon_ddl = IF(EXISTS (SELECT 1 FROM information_schema.statistics
        WHERE table_schema = DATABASE() AND table_name = 'orders'
        AND index_name = 'orders_pay_to'),
    'DO 0', 'CREATE INDEX orders_pay_to ON orders (pay_to)');
PREPARE payrecon_stmt FROM @payrecon_ddl;
EXECUTE payrecon_stmt;
DEALLOCATE PREPARE payrecon_stmt;
