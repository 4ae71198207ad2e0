-- One row per provider list (SPEC §11): what the last run that read it read, and when it was
-- last read whole (`full_scan_every` forces one whole read per period from this). `chain` is
-- '' for a list of every chain; `list` is 'all' or 'failed'.
CREATE TABLE IF NOT EXISTS payrecon_list_reads (
    provider     TEXT    NOT NULL,
    chain        TEXT    NOT NULL,
    list         TEXT    NOT NULL,
    pages_read   BIGINT  NOT NULL,
    pages_total  BIGINT  NOT NULL,
    read_at      TIMESTAMPTZ NOT NULL,
    last_full_at TIMESTAMPTZ,
    PRIMARY KEY (provider, chain, list)
);
