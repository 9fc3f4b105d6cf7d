-- 004: one row per grant (joined to how it ended) for fast history queries,
-- and the tailer's published status.
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS).

-- grants: written by the tailer beside `events`, in the same batch and before
-- the checkpoint. A grant gets an open row (end_kind '', row_version 0) when
-- its grant is decoded, and a closed row (row_version = end_revision) when
-- its end is decoded. Both rows are complete: the end row is built from the
-- hold's previous value, so arrival order does not matter (catch-up windows
-- can deliver the end before the grant).
-- Why ReplacingMergeTree(row_version) rather than a view over `events`: the
-- closed row must win over the open one, and a replay writes identical rows,
-- so `FINAL` gives exactly one row per grant, ended if it ended. Read it
-- with FINAL (or argMax(..., row_version)). The sorting key starts with
-- (cluster, key) so one lock's history is a contiguous range.
-- Unprotected grants (shipped from a fail-open spool) have grant_revision 0,
-- token 0 and their spool line id in spool_id, which keeps them apart.
-- start_known = 0: the grant happened inside a gap (seen only in a snapshot).
CREATE TABLE IF NOT EXISTS {db:Identifier}.grants
(
    cluster           LowCardinality(String),
    key               String,                  -- the lock name <namespace>/<path>
    namespace         LowCardinality(String),
    lock_path         String,
    class             LowCardinality(String),
    holder            String,
    session           String,                  -- etcd lease id, decimal
    token             UInt64,                  -- epoch × 2^48 + grant_revision; 0 when unprotected
    epoch             UInt32,
    grant_revision    UInt64,
    spool_id          String DEFAULT '',
    granted_at        DateTime64(3, 'UTC'),
    wait_ms           UInt64,
    end_kind          LowCardinality(String),  -- release | expiry | force | session-close | epoch-advance; '' while held
    end_revision      UInt64,
    ended_at          Nullable(DateTime64(3, 'UTC')),
    ended_at_error_ms UInt32 DEFAULT 0,        -- > 0 when ended_at is an estimate (expiries)
    duration_ms       Nullable(Int64),
    unprotected       UInt8,
    start_known       UInt8,
    row_version       UInt64,                  -- 0 open; end_revision once ended
    INDEX grants_token token TYPE bloom_filter GRANULARITY 4,
    INDEX grants_holder holder TYPE bloom_filter GRANULARITY 4,
    INDEX grants_granted_at granted_at TYPE minmax GRANULARITY 4
)
ENGINE = ReplacingMergeTree(row_version)
ORDER BY (cluster, key, grant_revision, spool_id);

-- What the elected tailer of each cluster last published (about once a
-- second): read by GET /v1/tailers from any process.
CREATE TABLE IF NOT EXISTS {db:Identifier}.tailer_status
(
    cluster           LowCardinality(String),
    cluster_id        String,
    leader            String,
    checkpoint        UInt64,
    head_revision     UInt64,
    compact_revision  UInt64,
    lag_revisions     UInt64,
    lag_seconds       Float64,
    updated_at        DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY cluster;
