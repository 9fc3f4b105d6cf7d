-- 140: grants ordered by key and grant time (issue 22 item 2): key history
-- pages are ordered by (granted_at, cluster, key, grant_revision, spool_id),
-- which `grants` (sorted by cluster, key, grant_revision) does not give, so a
-- very hot key's page read and merged every row of the key under FINAL, then
-- sorted them, for each page. grants_by_key holds the same rows sorted by
-- (key, granted_at, cluster, grant_revision, spool_id, timeline): with the key
-- fixed that is the page's own order, so FINAL reads the key's range in order
-- and stops after the page (EXPLAIN: "Read type: InOrder"), and a cursor's
-- granted_at bounds the range through the primary key.
-- Why a table and not a projection: ClickHouse never reads a projection for a
-- query with FINAL, and every grant read is FINAL (a projection of a
-- ReplacingMergeTree also needs deduplicate_merge_projection_mode). Why key
-- first, not cluster: a key history names the key, rarely the cluster, and the
-- order must follow from the key alone (a lock name belongs to one cluster's
-- history in practice; two clusters' grants of one name are still told apart
-- and served in the page's order).
-- Same engine and version as `grants`, and the sorting key holds the grant's
-- identity (cluster, key, grant_revision, spool_id, timeline) plus granted_at,
-- which a grant never changes: FINAL keeps exactly the rows `grants` FINAL
-- keeps (the closed row over the open one; a replay collapses; a restore's
-- marks win as in `grants`). Fed by a materialized view on every insert into
-- `grants`, and filled once from what `grants` already holds (a row inserted
-- while both run arrives twice: identical rows, which FINAL collapses), like
-- grants_by_holder (sql/056). A column added to `grants` later must be added
-- here and to the view too.
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS {db:Identifier}.grants_by_key
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
    origin            LowCardinality(String) DEFAULT 'api',
    timeline          UInt32,
    rolled_back_by    UInt32 DEFAULT 0,
    superseded_by     UInt32 DEFAULT 0,
    -- Fenced like grants (sql/110): a deposed leader's late row never replaces its successor's.
    term              UInt64 DEFAULT 0,
    replace_version   UInt128 MATERIALIZED bitShiftLeft(toUInt128(row_version), 64) + toUInt128(term)
)
ENGINE = ReplacingMergeTree(replace_version)
ORDER BY (key, granted_at, cluster, grant_revision, spool_id, timeline);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.grants_by_key_mv TO {db:Identifier}.grants_by_key AS
SELECT cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id, granted_at, wait_ms,
       end_kind, end_revision, ended_at, ended_at_error_ms, duration_ms, unprotected, start_known, row_version, origin,
       timeline, rolled_back_by, superseded_by, term
FROM {db:Identifier}.grants;

INSERT INTO {db:Identifier}.grants_by_key
SELECT cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id, granted_at, wait_ms,
       end_kind, end_revision, ended_at, ended_at_error_ms, duration_ms, unprotected, start_known, row_version, origin,
       timeline, rolled_back_by, superseded_by, term
FROM {db:Identifier}.grants;
