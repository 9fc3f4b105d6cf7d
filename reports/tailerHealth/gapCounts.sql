-- Tailer health: how many history gaps each cluster has recorded.
-- Parameters: {db:Identifier}
SELECT cluster, count() AS n
FROM {db:Identifier}.gaps FINAL
GROUP BY cluster
