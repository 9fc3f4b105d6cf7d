-- Every cluster's checkpoint: the highest revision ever written, and who wrote it.
-- Parameters: {db:Identifier}
SELECT cluster, max(revision) AS highest, argMax(leader, revision) AS leader
FROM {db:Identifier}.checkpoints_highest
GROUP BY cluster
ORDER BY cluster
