-- Tailer lag over time, for the console's tailer health plot. Every status a
-- tailer publishes (about once a second, into tailer_status, which keeps only
-- the newest per cluster) is also kept here by a materialized view, so the
-- tailer writes nothing new. Queried aggregated per time bucket; 90 days kept.
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS {db:Identifier}.tailer_lag_history
(
    cluster        LowCardinality(String),
    at             DateTime64(3, 'UTC'),
    leader         String,
    checkpoint     UInt64,
    head_revision  UInt64,
    lag_revisions  UInt64,
    lag_seconds    Float64
)
ENGINE = MergeTree
ORDER BY (cluster, at)
TTL toDateTime(at) + INTERVAL 90 DAY;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.tailer_lag_history_mv TO {db:Identifier}.tailer_lag_history AS
SELECT cluster, updated_at AS at, leader, checkpoint, head_revision, lag_revisions, lag_seconds
FROM {db:Identifier}.tailer_status;
