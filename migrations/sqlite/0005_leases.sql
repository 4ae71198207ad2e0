-- One lease per provider (and `chain` for the sweep): which `serve` instance may reconcile
-- it now. `token` grows with every acquisition (a fencing token): each write batch checks
-- that its holder still has the lease with that token.
CREATE TABLE IF NOT EXISTS payrecon_leases (
    provider   TEXT    PRIMARY KEY,
    holder     TEXT    NOT NULL,
    token      INTEGER NOT NULL,
    expires_at TEXT    NOT NULL
);
