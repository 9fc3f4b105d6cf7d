-- History ranges lost before capture, newest first; cluster '' means every cluster.
-- kind: 'compaction' or 'restore' (then both cluster ids; sql/051).
-- Parameters: {db:Identifier} {cluster:String} {limit:UInt32}
SELECT cluster, from_revision, to_revision, detected_at, reason, kind, history_lost, previous_cluster_id, cluster_id
FROM {db:Identifier}.gaps FINAL
WHERE {cluster:String} = '' OR cluster = {cluster:String}
ORDER BY detected_at DESC
LIMIT {limit:UInt32}
