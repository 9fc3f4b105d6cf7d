-- 034: the checkpoint that never moves backwards. `checkpoints` (001) is a
-- ReplacingMergeTree(updated_at) ordered by cluster: a merge keeps the newest
-- row, not the highest revision, so a leader that stalled between its
-- leadership check and its insert could leave a checkpoint below its
-- successor's. Writers keep inserting into `checkpoints`; this view folds
-- every row into `checkpoints_highest`, whose version column is the revision,
-- so a merge keeps the highest checkpoint ever written. Read it with
-- max(revision) (tailer/sql/checkpoint*.sql), never from `checkpoints`.
-- Parameters: {db:Identifier}. Every statement is idempotent: the copy of
-- what `checkpoints` already holds may run twice, the highest row wins.

CREATE TABLE IF NOT EXISTS {db:Identifier}.checkpoints_highest
(
    cluster     LowCardinality(String),
    revision    UInt64,
    leader      String,
    updated_at  DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(revision)
ORDER BY cluster;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.checkpoints_highest_mv TO {db:Identifier}.checkpoints_highest AS
SELECT cluster, revision, leader, updated_at
FROM {db:Identifier}.checkpoints;

INSERT INTO {db:Identifier}.checkpoints_highest (cluster, revision, leader, updated_at)
SELECT cluster, max(revision) AS highest, argMax(leader, revision) AS leader, max(updated_at) AS newest
FROM {db:Identifier}.checkpoints
GROUP BY cluster;
