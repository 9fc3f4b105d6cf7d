-- 001: the audit log and the tailer's bookkeeping.
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS)
-- so a migration interrupted half-way can simply run again.

CREATE DATABASE IF NOT EXISTS {db:Identifier};

-- Every committed change of the lock keyspace, decoded. One row per
-- (cluster, revision, key): one etcd revision can carry thousands of keys
-- (a lease expiry), so the key is part of the sorting key. Replays write the
-- same rows again; ReplacingMergeTree keeps one, read with FINAL.
CREATE TABLE IF NOT EXISTS {db:Identifier}.events
(
    cluster         LowCardinality(String),
    revision        UInt64,
    key             String,
    event_type      LowCardinality(String),  -- grant, release, expiry, force-release, session-close, queue-enter, queue-leave, class-change, epoch-advance, clock, marker, force-record, snapshot-hold, unprotected-grant, other
    op              Enum8('put' = 1, 'delete' = 2, 'snapshot' = 3, 'spool' = 4),
    namespace       LowCardinality(String),
    lock_path       String,
    class           LowCardinality(String),
    holder          String,
    session         String,                  -- etcd lease id, decimal
    token           UInt64,
    epoch           UInt32,
    grant_revision  UInt64,                  -- for end events: the revision of the grant they end
    wait_ms         UInt64,
    wall_time       DateTime64(3, 'UTC'),    -- from the value, or estimated (expiries)
    time_estimated  UInt8,
    time_error_ms   UInt32,
    create_revision UInt64,
    mod_revision    UInt64,
    version         Int64,
    lease           String,
    value           String,
    prev_value      String,
    unprotected     UInt8,
    ingested_at     DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
ORDER BY (cluster, revision, key);

-- The tailer's checkpoint per cluster: the highest revision up to which every
-- event is durable in `events`. Written only after the batch is.
CREATE TABLE IF NOT EXISTS {db:Identifier}.checkpoints
(
    cluster     LowCardinality(String),
    revision    UInt64,
    leader      String,
    updated_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY cluster;

-- History that could not be captured (etcd compacted it first), made explicit.
CREATE TABLE IF NOT EXISTS {db:Identifier}.gaps
(
    cluster        LowCardinality(String),
    from_revision  UInt64,
    to_revision    UInt64,
    detected_at    DateTime64(3, 'UTC'),
    reason         String
)
ENGINE = ReplacingMergeTree(detected_at)
ORDER BY (cluster, from_revision);

-- Changes the decoder could not understand: kept with the reason, never dropped.
CREATE TABLE IF NOT EXISTS {db:Identifier}.quarantine
(
    cluster     LowCardinality(String),
    revision    UInt64,
    key         String,
    op          LowCardinality(String),
    value       String,
    reason      String,
    at          DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(at)
ORDER BY (cluster, revision, key);
