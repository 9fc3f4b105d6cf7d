-- 056: grants ordered by holder (issue 14): "which grants did this holder
-- have" read a holder's rows from every granule of `grants` (sorted by key),
-- so its cost grew with the whole table (a bloom filter cannot skip granules
-- when every granule holds some of a holder's grants). grants_by_holder holds
-- the same rows sorted by (holder, granted_at, …): one holder is one
-- contiguous range, already in the history's order.
-- Same engine and version as `grants`, and the sorting key holds the grant's
-- identity (cluster, key, grant_revision, spool_id) plus two columns a grant
-- never changes (holder, granted_at): FINAL keeps exactly the rows `grants`
-- FINAL keeps (the closed row over the open one; a replay collapses).
-- Fed by a materialized view on every insert into `grants`, and filled once
-- from what `grants` already holds (a row inserted while both run arrives
-- twice: identical rows, which FINAL collapses). A column added to `grants`
-- later must be added here and to the view too.
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS {db:Identifier}.grants_by_holder
(
    cluster           LowCardinality(String),
    key               String,
    namespace         LowCardinality(String),
    lock_path         String,
    class             LowCardinality(String),
    holder            String,
    session           String,
    token             UInt64,
    epoch             UInt32,
    grant_revision    UInt64,
    spool_id          String DEFAULT '',
    granted_at        DateTime64(3, 'UTC'),
    wait_ms           UInt64,
    end_kind          LowCardinality(String),
    end_revision      UInt64,
    ended_at          Nullable(DateTime64(3, 'UTC')),
    ended_at_error_ms UInt32 DEFAULT 0,
    duration_ms       Nullable(Int64),
    unprotected       UInt8,
    start_known       UInt8,
    row_version       UInt64,
    origin            LowCardinality(String) DEFAULT 'api'
)
ENGINE = ReplacingMergeTree(row_version)
ORDER BY (holder, granted_at, cluster, key, grant_revision, spool_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.grants_by_holder_mv TO {db:Identifier}.grants_by_holder AS
SELECT cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id, granted_at, wait_ms,
       end_kind, end_revision, ended_at, ended_at_error_ms, duration_ms, unprotected, start_known, row_version, origin
FROM {db:Identifier}.grants;

INSERT INTO {db:Identifier}.grants_by_holder
SELECT cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id, granted_at, wait_ms,
       end_kind, end_revision, ended_at, ended_at_error_ms, duration_ms, unprotected, start_known, row_version, origin
FROM {db:Identifier}.grants;
