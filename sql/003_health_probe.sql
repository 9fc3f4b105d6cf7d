-- 003: a small table that health checks insert into, so a check exercises the real write path.
-- Parameters: {db:Identifier}. Rows expire after a day.

CREATE TABLE IF NOT EXISTS {db:Identifier}.health_probe
(
    probe_id  String,
    source    LowCardinality(String),
    at        DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = MergeTree
ORDER BY (source, at)
TTL toDateTime(at) + INTERVAL 1 DAY;
