-- 020: the reports' own tables: every run of the advisory risk register (kept
-- forever: the register's history), reconcile notes on unprotected grants,
-- and the audit of grant-history reads (who asked what, when).
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS).

-- One row per register run, so a run that found no advisory class is kept too.
-- run_id is the job id for scheduled runs: a retried job rewrites the same rows.
CREATE TABLE IF NOT EXISTS {db:Identifier}.risk_register_runs
(
    run_id        String,
    register_date Date,                      -- the day of as_of in the scheduler's time zone
    as_of         DateTime64(3, 'UTC'),
    trigger       LowCardinality(String),    -- schedule | manual
    requested_by  String,                    -- identity, or 'scheduler'
    class_count   UInt32,
    created_at    DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(created_at)
ORDER BY (register_date, run_id);

-- One row per advisory class per run.
CREATE TABLE IF NOT EXISTS {db:Identifier}.risk_register
(
    run_id             String,
    register_date      Date,
    as_of              DateTime64(3, 'UTC'),
    class              String,
    namespace          String,
    risk_owner         String,
    waiver_expires     Nullable(Date),
    days_left          Nullable(Int32),
    status             LowCardinality(String),  -- ok | expiring | expired
    grants_24h         UInt64,
    grants_30d         UInt64,
    distinct_keys_24h  UInt64,
    distinct_keys_30d  UInt64,
    expiries_24h       UInt64,
    expiries_30d       UInt64,
    force_releases_24h UInt64,
    force_releases_30d UInt64,
    unprotected_24h    UInt64,
    unprotected_30d    UInt64,
    created_at         DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(created_at)
ORDER BY (register_date, run_id, class);

-- Reconcile actions on unprotected grants; every note is kept (append-only),
-- the latest one is the grant's current state.
CREATE TABLE IF NOT EXISTS {db:Identifier}.unprotected_reconciliations
(
    id             String,                   -- the unprotected grant's report id
    cluster        LowCardinality(String),
    key            String,
    spool_id       String,
    note           String,
    reconciled_by  String,
    reconciled_at  DateTime64(3, 'UTC')
)
ENGINE = MergeTree
ORDER BY (id, reconciled_at);

-- Reads of grant history: who asked which filters, when. Append-only.
CREATE TABLE IF NOT EXISTS {db:Identifier}.grant_history_reads
(
    at        DateTime64(3, 'UTC'),
    identity  String,
    token_id  String,                        -- the public id of the caller's API token, never the token
    filters   String,                        -- JSON of the filters as given
    format    LowCardinality(String),
    paged     UInt8,                         -- 1 when the request carried a cursor
    request_id String
)
ENGINE = MergeTree
ORDER BY (at, identity);
