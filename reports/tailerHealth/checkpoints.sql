-- Tailer health: each cluster's checkpoint, the highest revision written
-- (a checkpoint never moves backwards, so the max is the current one).
-- Parameters: {db:Identifier}
SELECT cluster, max(revision) AS revision
FROM {db:Identifier}.checkpoints
GROUP BY cluster
