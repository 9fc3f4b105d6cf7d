-- 010: compliance exports — each request, its progress and result — and the
-- audit trail of who requested and downloaded what, when.
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS).

-- One row per state change of an export (queued, running with progress,
-- done, failed); the newest `version` wins: read with FINAL.
CREATE TABLE IF NOT EXISTS {db:Identifier}.exports
(
    id            String,
    kind          LowCardinality(String),   -- grants
    format        LowCardinality(String),   -- parquet | csv
    requested_by  String,
    requested_at  DateTime64(3, 'UTC'),
    from_ms       Int64,
    to_ms         Int64,
    filters       String,                   -- JSON object of the filters given
    status        LowCardinality(String),   -- queued | running | done | failed
    rows_done     UInt64,
    rows_total    UInt64,
    percent       Float32,
    object_key    String,                   -- in the history bucket, once done
    bytes         UInt64,
    sha256        String,
    error         String,
    updated_at    DateTime64(3, 'UTC'),
    version       UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY id;

-- Append-only: request, complete, fail, download — who, what, when.
CREATE TABLE IF NOT EXISTS {db:Identifier}.export_audit
(
    export_id  String,
    action     LowCardinality(String),
    actor      String,
    at         DateTime64(3, 'UTC') DEFAULT now64(3),
    detail     String
)
ENGINE = MergeTree
ORDER BY (export_id, at);
