-- Alert / SIEM webhook sinks (exporters/alerts): each sink's own checkpoint
-- per cluster and its dead letters.
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS).

-- Where a sink is in a cluster's log: every event at or before
-- (revision, key) was delivered (or dead-lettered), and every unprotected
-- grant at or before (spool_ms, spool_key) in ingest order. Written only
-- after the receiver acknowledged the batch; the newest row wins.
CREATE TABLE IF NOT EXISTS {db:Identifier}.alert_checkpoints
(
    sink        LowCardinality(String),
    cluster     LowCardinality(String),
    revision    UInt64,
    key         String,
    spool_ms    Int64,
    spool_key   String,
    updated_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY (sink, cluster);

-- Events a sink gave up on after maxAttempts failed deliveries: kept with
-- the payload exactly as it would have been sent, and the last error.
CREATE TABLE IF NOT EXISTS {db:Identifier}.alert_dead_letters
(
    sink        LowCardinality(String),
    cluster     LowCardinality(String),
    event_id    String,
    payload     String,
    attempts    UInt32,
    last_error  String,
    at          DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(at)
ORDER BY (sink, cluster, event_id);
