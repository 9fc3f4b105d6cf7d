-- 057: what the tailer's lease witness heard (tailer/leaseWitness.ts), kept
-- beyond the process that heard it. A hold deleted by hand and its lease
-- revoked at once reads as `deleted` only if some tailer knew the lease had
-- TTL left; that knowledge lived in process memory, so a tailer killed before
-- the delete (the chaos run's last misclassifications) handed the next leader
-- nothing. Each answer is saved here (a lease, the instant before which etcd
-- could not have expired it); every run loads what is still in the future.
-- The version column is that instant: a merge keeps the latest proof.
-- Rows are useless once their instant has passed: a day later they go.
-- Parameters: {db:Identifier}. Idempotent (IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS {db:Identifier}.lease_evidence
(
    cluster         LowCardinality(String),
    lease           String,
    alive_until_ms  Int64,
    recorded_at     DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(alive_until_ms)
ORDER BY (cluster, lease)
TTL toDateTime(intDiv(alive_until_ms, 1000)) + INTERVAL 1 DAY;
