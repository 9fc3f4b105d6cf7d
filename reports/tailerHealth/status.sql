-- Tailer health: the newest status each cluster's elected tailer published
-- (leader, head and compacted revisions, lag in seconds, when).
-- Parameters: {db:Identifier}
SELECT cluster, cluster_id, leader, head_revision, compact_revision, lag_seconds, updated_at
FROM {db:Identifier}.tailer_status FINAL
